// Package esdbdouble is a test double of a KurrentDB (EventStoreDB) server:
// an in-process gRPC server built on the generated service interfaces of
// github.com/EventStore/EventStore-Client-Go/v4, so that esdbstore's tests
// run the real client against something in every run. It is NOT KurrentDB.
//
// It implements only what esdbstore calls, and only as far as esdbstore uses
// it:
//
//   - ServerFeatures.GetSupportedMethods, which the client calls when it
//     connects to a single node (no gossip: the client reads gossip only for
//     cluster and DNS-discovery connection strings);
//   - Streams.Append: expected revisions (any, no stream, stream exists, a
//     revision), and KurrentDB's id idempotence: a batch whose ids are the
//     events just after the expected revision (or, with any, found in the
//     stream in order) succeeds without writing, one whose first id matches
//     but not the rest is a wrong expected version;
//   - Streams.Read of one stream (forwards and backwards, from start, end or
//     a revision; stream-not-found for a stream never written), of $all
//     forwards from start or a position (inclusive), and catch-up
//     subscriptions to $all from start or a position (exclusive), with a
//     caught-up message between the stored and the live events.
//
// Everything else (filters, links, deletes, batch append, persistent
// subscriptions, projections, ACLs, stream metadata) answers Unimplemented.
// Event types and content types are stored as sent, $ types included (a
// client may write them, as it writes "$>" links), and streams starting
// with $ are written like any other (a server without access control).
//
// Traffic counts the events the double has sent, by kind of read, so that a
// test can say how much of the log a client read.
//
// Positions: the k-th event written (from 0) gets the prepare position
// First + k*Stride; every event of one append gets the commit position of
// the append's last prepare, as a KurrentDB transaction commits once for
// the batch. $all is ordered by (commit, prepare). First and Stride let a
// test put positions at 0 or at the top of the uint64 range.
package esdbdouble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/serverfeatures"
	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Config places the double's positions.
type Config struct {
	First  uint64 // prepare position of the first event
	Stride uint64 // distance between prepare positions (0: 100)
}

// Double is a running fake KurrentDB node on a loopback port.
type Double struct {
	api.UnimplementedStreamsServer
	serverfeatures.UnimplementedServerFeaturesServer

	cfg  Config
	addr string

	life sync.Mutex
	srv  *grpc.Server

	mu      sync.Mutex
	log     []record         // $all in (commit, prepare) order
	streams map[string][]int // stream -> indexes into log, by revision
	written uint64           // events written so far
	changed chan struct{}    // closed and replaced at every write
	subs    int              // subscription ids handed out
	traffic Traffic
}

// Traffic counts the events sent to clients, by kind of read.
type Traffic struct {
	All          uint64 // by reads of $all
	Stream       uint64 // by reads of one stream
	Subscription uint64 // by subscriptions to $all
}

// Traffic returns the events sent so far.
func (d *Double) Traffic() Traffic {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.traffic
}

type record struct {
	stream          string
	revision        uint64
	id              *shared.UUID
	metadata        map[string]string // type, content-type, created
	custom, data    []byte
	commit, prepare uint64
}

// Start runs a double on 127.0.0.1, on a port of the kernel's choosing. Stop
// it with Stop.
func Start(cfg Config) (*Double, error) {
	if cfg.Stride == 0 {
		cfg.Stride = 100
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("esdbdouble: listen: %w", err)
	}
	d := &Double{cfg: cfg, addr: lis.Addr().String(), streams: map[string][]int{}, changed: make(chan struct{})}
	d.serve(lis)
	return d, nil
}

func (d *Double) serve(lis net.Listener) {
	srv := grpc.NewServer()
	api.RegisterStreamsServer(srv, d)
	serverfeatures.RegisterServerFeaturesServer(srv, d)
	d.life.Lock()
	d.srv = srv
	d.life.Unlock()
	go srv.Serve(lis) //nolint:errcheck // returns when Stop closes the listener
}

// Resume serves again, on the same address and with the same events, after
// Stop: a node that restarted.
func (d *Double) Resume() error {
	lis, err := net.Listen("tcp", d.addr)
	if err != nil {
		return fmt.Errorf("esdbdouble: listen again on %s: %w", d.addr, err)
	}
	d.serve(lis)
	return nil
}

// URL is the connection string of the double: TLS off, one node.
func (d *Double) URL() string { return "esdb://" + d.addr + "?tls=false" }

// Stop ends every call and closes the listener: the node is gone.
func (d *Double) Stop() {
	d.life.Lock()
	defer d.life.Unlock()
	d.srv.Stop()
}

// GetSupportedMethods implements serverfeatures.ServerFeaturesServer: it
// names the two stream methods it serves, and no version (0.0.0).
func (d *Double) GetSupportedMethods(context.Context, *shared.Empty) (*serverfeatures.SupportedMethods, error) {
	return &serverfeatures.SupportedMethods{
		EventStoreServerVersion: "0.0.0",
		Methods: []*serverfeatures.SupportedMethod{
			{ServiceName: "event_store.client.streams.streams", MethodName: "append"},
			{ServiceName: "event_store.client.streams.streams", MethodName: "read"},
		},
	}, nil
}

// Append implements api.StreamsServer.
func (d *Double) Append(srv api.Streams_AppendServer) error {
	first, err := srv.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	if opts == nil {
		return status.Error(codes.InvalidArgument, "esdbdouble: append: first message is not options")
	}
	var msgs []*api.AppendReq_ProposedMessage
	for {
		req, err := srv.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		m := req.GetProposedMessage()
		if m == nil {
			return status.Error(codes.InvalidArgument, "esdbdouble: append: options sent twice")
		}
		msgs = append(msgs, m)
	}
	resp, err := d.append(string(opts.GetStreamIdentifier().GetStreamName()), opts, msgs)
	if err != nil {
		return err
	}
	return srv.SendAndClose(resp)
}

func (d *Double) append(stream string, opts *api.AppendReq_Options, msgs []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	revs := d.streams[stream]
	current := int64(len(revs)) - 1 // -1: no stream

	// KurrentDB's idempotence: the batch's ids already follow the expected
	// revision (with any: appear in the stream, in order).
	var from int64 = -1 // revision the batch would start at if replayed
	switch e := opts.ExpectedStreamRevision.(type) {
	case *api.AppendReq_Options_Revision:
		from = int64(e.Revision) + 1
	case *api.AppendReq_Options_NoStream:
		from = 0
	case *api.AppendReq_Options_Any:
		if len(msgs) > 0 {
			for r, i := range revs {
				if sameID(d.log[i].id, msgs[0].Id) {
					from = int64(r)
					break
				}
			}
		}
	}
	if from >= 0 && from <= current && len(msgs) > 0 && sameID(d.log[revs[from]].id, msgs[0].Id) {
		for k, m := range msgs {
			r := from + int64(k)
			if r > current || !sameID(d.log[revs[r]].id, m.Id) {
				return wrongVersion(current, opts), nil // the ids match only in part
			}
		}
		// Written before: KurrentDB reports no position.
		return &api.AppendResp{Result: &api.AppendResp_Success_{Success: &api.AppendResp_Success{
			CurrentRevisionOption: &api.AppendResp_Success_CurrentRevision{CurrentRevision: uint64(from) + uint64(len(msgs)) - 1},
			PositionOption:        &api.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}},
		}}}, nil
	}

	ok := false
	switch e := opts.ExpectedStreamRevision.(type) {
	case *api.AppendReq_Options_Any:
		ok = true
	case *api.AppendReq_Options_NoStream:
		ok = current == -1
	case *api.AppendReq_Options_StreamExists:
		ok = current >= 0
	case *api.AppendReq_Options_Revision:
		ok = current == int64(e.Revision)
	}
	if !ok {
		return wrongVersion(current, opts), nil
	}
	if len(msgs) == 0 {
		return success(uint64(current), 0, 0), nil
	}
	commit := d.cfg.First + (d.written+uint64(len(msgs))-1)*d.cfg.Stride
	created := strconv.FormatInt(time.Now().UnixNano()/100, 10) // .NET ticks since the Unix epoch
	var firstPrepare uint64
	for k, m := range msgs {
		prepare := d.cfg.First + d.written*d.cfg.Stride
		if k == 0 {
			firstPrepare = prepare
		}
		d.written++
		md := map[string]string{"created": created}
		for key, v := range m.Metadata {
			md[key] = v
		}
		d.log = append(d.log, record{
			stream: stream, revision: uint64(current + 1 + int64(k)), id: m.Id, metadata: md,
			custom: clone(m.CustomMetadata), data: clone(m.Data), commit: commit, prepare: prepare,
		})
		d.streams[stream] = append(d.streams[stream], len(d.log)-1)
	}
	close(d.changed)
	d.changed = make(chan struct{})
	return success(uint64(current)+uint64(len(msgs)), commit, firstPrepare), nil
}

func success(revision, commit, prepare uint64) *api.AppendResp {
	return &api.AppendResp{Result: &api.AppendResp_Success_{Success: &api.AppendResp_Success{
		CurrentRevisionOption: &api.AppendResp_Success_CurrentRevision{CurrentRevision: revision},
		PositionOption: &api.AppendResp_Success_Position{Position: &api.AppendResp_Position{
			CommitPosition: commit, PreparePosition: prepare,
		}},
	}}}
}

func wrongVersion(current int64, opts *api.AppendReq_Options) *api.AppendResp {
	w := &api.AppendResp_WrongExpectedVersion{}
	if current < 0 {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
	} else {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: uint64(current)}
	}
	switch e := opts.ExpectedStreamRevision.(type) {
	case *api.AppendReq_Options_Revision:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedRevision{ExpectedRevision: e.Revision}
	case *api.AppendReq_Options_NoStream:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}
	case *api.AppendReq_Options_StreamExists:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedStreamExists{ExpectedStreamExists: &shared.Empty{}}
	default:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedAny{ExpectedAny: &shared.Empty{}}
	}
	return &api.AppendResp{Result: &api.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: w}}
}

// Read implements api.StreamsServer: reads of a stream, reads of $all, and
// subscriptions to $all.
func (d *Double) Read(req *api.ReadReq, srv api.Streams_ReadServer) error {
	o := req.GetOptions()
	if o == nil {
		return status.Error(codes.InvalidArgument, "esdbdouble: read: no options")
	}
	if o.GetFilter() != nil {
		return status.Error(codes.Unimplemented, "esdbdouble: filters are not implemented")
	}
	if o.ResolveLinks {
		return status.Error(codes.Unimplemented, "esdbdouble: links are not implemented")
	}
	switch {
	case o.GetStream() != nil && o.GetSubscription() == nil:
		return d.readStream(o, srv)
	case o.GetAll() != nil && o.GetSubscription() == nil:
		if o.ReadDirection != api.ReadReq_Options_Forwards {
			return status.Error(codes.Unimplemented, "esdbdouble: backward reads of $all are not implemented")
		}
		return d.readAll(o, srv)
	case o.GetAll() != nil:
		return d.subscribeAll(o, srv)
	}
	return status.Error(codes.Unimplemented, "esdbdouble: stream subscriptions are not implemented")
}

func (d *Double) readStream(o *api.ReadReq_Options, srv api.Streams_ReadServer) error {
	so := o.GetStream()
	name := string(so.GetStreamIdentifier().GetStreamName())
	d.mu.Lock()
	revs := d.streams[name]
	if len(revs) == 0 {
		d.mu.Unlock()
		return srv.Send(&api.ReadResp{Content: &api.ReadResp_StreamNotFound_{StreamNotFound: &api.ReadResp_StreamNotFound{
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(name)},
		}}})
	}
	count := o.GetCount()
	forwards := o.ReadDirection == api.ReadReq_Options_Forwards
	var page []record
	var r int64
	switch {
	case so.GetStart() != nil:
		r = 0
	case so.GetEnd() != nil:
		r = int64(len(revs)) - 1
		if forwards {
			r = int64(len(revs))
		}
	default:
		r = int64(so.GetRevision())
	}
	for ; r >= 0 && r < int64(len(revs)) && uint64(len(page)) < count; r = next(r, forwards) {
		page = append(page, d.log[revs[r]])
	}
	d.traffic.Stream += uint64(len(page))
	d.mu.Unlock()
	return sendAll(srv, page)
}

func next(r int64, forwards bool) int64 {
	if forwards {
		return r + 1
	}
	return r - 1
}

// readAll reads $all forwards from start or from a position, inclusive.
func (d *Double) readAll(o *api.ReadReq_Options, srv api.Streams_ReadServer) error {
	ao := o.GetAll()
	d.mu.Lock()
	i := len(d.log)
	switch {
	case ao.GetStart() != nil:
		i = 0
	case ao.GetPosition() != nil:
		p := ao.GetPosition()
		i = d.search(p.CommitPosition, p.PreparePosition)
	}
	end := len(d.log)
	if c := o.GetCount(); uint64(end-i) > c {
		end = i + int(c)
	}
	page := append([]record(nil), d.log[i:end]...)
	d.traffic.All += uint64(len(page))
	d.mu.Unlock()
	return sendAll(srv, page)
}

// search returns the index of the first event at or after (commit, prepare).
func (d *Double) search(commit, prepare uint64) int {
	lo, hi := 0, len(d.log)
	for lo < hi {
		m := (lo + hi) / 2
		if r := d.log[m]; r.commit < commit || (r.commit == commit && r.prepare < prepare) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// subscribeAll sends a confirmation, the events after the start (exclusive
// of a position), a caught-up message, then each event as it is written,
// until the client goes away or the double stops.
func (d *Double) subscribeAll(o *api.ReadReq_Options, srv api.Streams_ReadServer) error {
	ao := o.GetAll()
	d.mu.Lock()
	d.subs++
	id := fmt.Sprintf("esdbdouble-sub-%d", d.subs)
	i := len(d.log)
	switch {
	case ao.GetStart() != nil:
		i = 0
	case ao.GetPosition() != nil:
		p := ao.GetPosition()
		i = d.search(p.CommitPosition, p.PreparePosition)
		if i < len(d.log) && d.log[i].commit == p.CommitPosition && d.log[i].prepare == p.PreparePosition {
			i++ // exclusive
		}
	}
	d.mu.Unlock()
	if err := srv.Send(&api.ReadResp{Content: &api.ReadResp_Confirmation{
		Confirmation: &api.ReadResp_SubscriptionConfirmation{SubscriptionId: id},
	}}); err != nil {
		return err
	}
	caughtUp := false
	for {
		d.mu.Lock()
		page := append([]record(nil), d.log[min(i, len(d.log)):]...)
		changed := d.changed
		d.traffic.Subscription += uint64(len(page))
		d.mu.Unlock()
		if err := sendAll(srv, page); err != nil {
			return err
		}
		i += len(page)
		if !caughtUp {
			caughtUp = true
			if err := srv.Send(&api.ReadResp{Content: &api.ReadResp_CaughtUp_{CaughtUp: &api.ReadResp_CaughtUp{}}}); err != nil {
				return err
			}
		}
		select {
		case <-srv.Context().Done():
			return srv.Context().Err()
		case <-changed:
		}
	}
}

func sendAll(srv api.Streams_ReadServer, page []record) error {
	for _, r := range page {
		if err := srv.Send(&api.ReadResp{Content: &api.ReadResp_Event{Event: &api.ReadResp_ReadEvent{
			Event: &api.ReadResp_ReadEvent_RecordedEvent{
				Id:               r.id,
				StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(r.stream)},
				StreamRevision:   r.revision,
				PreparePosition:  r.prepare,
				CommitPosition:   r.commit,
				Metadata:         r.metadata,
				CustomMetadata:   r.custom,
				Data:             r.data,
			},
			Position: &api.ReadResp_ReadEvent_CommitPosition{CommitPosition: r.commit},
		}}}); err != nil {
			return err
		}
	}
	return nil
}

func sameID(a, b *shared.UUID) bool {
	as, bs := a.GetStructured(), b.GetStructured()
	if as != nil && bs != nil {
		return as.MostSignificantBits == bs.MostSignificantBits && as.LeastSignificantBits == bs.LeastSignificantBits
	}
	return a.GetString_() != "" && a.GetString_() == b.GetString_()
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
