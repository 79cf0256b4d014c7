package esdbstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"meshplane/events"
)

var _ events.Store = (*Store)(nil)

// ErrUnavailable means the KurrentDB server could not be reached or did not
// answer in time. The error wraps the client's. An append that fails with it
// may or may not have been written: retry it with the same ids.
var ErrUnavailable = errors.New("esdbstore: KurrentDB unavailable")

// DefaultPrefix is the prefix of the KurrentDB streams of a store opened
// without WithPrefix.
const DefaultPrefix = "mesh-"

// page is how many events a read of $all or of a stream asks for at a time.
const page = 4096

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of the store's KurrentDB stream names
// (DefaultPrefix by default; "" for a server that holds nothing else).
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// WithClock sets the clock that dates events appended with a zero At
// (time.Now by default).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Store is an events.Store on a KurrentDB server. It is safe for concurrent
// use.
type Store struct {
	cfg    *esdb.Configuration
	addr   string // for errors: the connection string may hold a password
	prefix string
	now    func() time.Time

	life context.Context // cancelled by Close: ends every call in flight
	kill context.CancelFunc

	mu     sync.RWMutex
	closed bool
	calls  sync.WaitGroup // calls in flight, waited for by Close
	client *esdb.Client   // replaced when the client gives up (see conn)

	chunk     int  // positions a chunk of the table holds (see table.go)
	unchained bool // no chain values computed (zero): for benchmarks of the chain's cost only

	// The position table (see the package comment and table.go).
	sync   sync.Mutex // one reader extends the table at a time
	tab    sync.Mutex // guards what follows
	runs   uint64     // catch-up runs started
	ran    uint64     // the last catch-up run completed (runs are serial)
	seen   esdb.AllPosition
	dir    []chunkRef           // where each chunk of the table stream begins
	chunks []*chunk             // chunks[k]: chunk k, nil until read
	tail   chunk                // the positions after the last chunk, read from $all
	check  *tableEntry          // the last chunk's last entry, which the first catch-up finds in $all
	legacy *tableEntry          // the last entry of an older build's table, which the first catch-up finds in $all
	retry  int                  // the tail's length at which a failed chunk write is tried again
	ids    map[uuid.UUID]uint64 // id -> position, of the tail and the chunks read (the first, were an id stored twice)
	idsAll bool                 // every chunk has been read: ids holds every id
	vers   map[string]uint64    // stream -> the highest version this store has seen it at

	busy    sync.Mutex
	pending map[uuid.UUID]chan struct{} // ids of appends in flight in this process
	writing map[string]*turn            // stream -> the appends to it in this process
}

// turn lets one append at a time write to a stream; users counts the appends
// holding or waiting for it.
type turn struct {
	ch    chan struct{} // holds a token while free
	users int
}

// Open connects to the KurrentDB server of the connection string url, reads
// the last chunk of the store's position table and, from where it ends, the
// store's events in $all that no chunk holds yet (see the package comment).
// The client connects lazily, so it is this first read that fails
// (ErrUnavailable) when the server cannot be reached.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg, err := esdb.ParseConnectionString(url)
	if err != nil {
		return nil, fmt.Errorf("esdbstore: open: %w", err)
	}
	cfg.Logger = esdb.NoopLogging()
	s := &Store{
		cfg: cfg, addr: cfg.Address, prefix: DefaultPrefix, now: time.Now,
		chunk: defaultChunk, seen: esdb.Start{}, tail: chunk{first: 1},
		ids: map[uuid.UUID]uint64{}, vers: map[string]uint64{}, pending: map[uuid.UUID]chan struct{}{},
		writing: map[string]*turn{},
	}
	s.life, s.kill = context.WithCancel(context.Background())
	for _, o := range opts {
		o(s)
	}
	if strings.HasPrefix(s.prefix, "$") {
		s.kill()
		return nil, fmt.Errorf("esdbstore: open: prefix %q: %w", s.prefix,
			&events.InvalidError{Field: "prefix", Reason: "starts with $, which KurrentDB reserves"})
	}
	if s.client, err = esdb.NewClient(cfg); err != nil {
		return nil, fmt.Errorf("esdbstore: open %s: %w", s.addr, err)
	}
	if s.chunk < 1 {
		s.Close()
		return nil, fmt.Errorf("esdbstore: open: %w", &events.InvalidError{Field: "chunk", Reason: fmt.Sprint(s.chunk)})
	}
	err = s.loadLast(ctx)
	if err == nil {
		err = s.catchUp(ctx)
	}
	if err != nil {
		err = s.fail(ctx, err)
		s.Close()
		return nil, fmt.Errorf("esdbstore: open %s: %w", s.addr, err)
	}
	return s, nil
}

// begin starts a call: it fails on a done ctx or a closed store, and returns
// the context the call runs under (ended by Close as well) and the function
// that ends the call.
func (s *Store) begin(ctx context.Context) (context.Context, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, nil, events.ErrClosed
	}
	s.calls.Add(1)
	c, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	return c, func() { stop(); cancel(); s.calls.Done() }, nil
}

// conn returns the current client.
func (s *Store) conn() *esdb.Client {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.client
}

// fail maps an error of the client onto the contract's: ErrClosed once the
// store is closed, the context's error once it is done, ErrUnavailable for a
// server out of reach. A client that closed itself (it does when discovery
// fails) is replaced, so that the next call tries the server again.
func (s *Store) fail(ctx context.Context, err error) error {
	if s.life.Err() != nil {
		return events.ErrClosed
	}
	if ctxErr := done(ctx); ctxErr != nil {
		return ctxErr
	}
	var ee *esdb.Error
	if errors.As(err, &ee) {
		switch ee.Code() {
		case esdb.ErrorCodeConnectionClosed:
			var ce *clientError
			if errors.As(err, &ce) {
				s.renew(ce.c)
			}
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		case esdb.ErrorUnavailable, esdb.ErrorCodeDeadlineExceeded, esdb.ErrorCodeNotLeader:
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// The call's stream broke before the server answered.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// done is ctx.Err(), or context.DeadlineExceeded once ctx's deadline has
// passed: gRPC can fail a call on the deadline before the context's own
// timer has fired.
func done(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// renew replaces a client that closed itself. The old one is left to the
// garbage collector, not closed: its connection goroutine has already
// stopped, and closing it could panic a call that raced its failure (the
// client closes its request channel).
func (s *Store) renew(old *esdb.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.client != old {
		return // closed, or already replaced by another call
	}
	if c, err := esdb.NewClient(s.cfg); err == nil { // the configuration was valid once
		s.client = c
	}
}

// clientError is an error of a call, with the client that made it, so that
// fail replaces only that client.
type clientError struct {
	c   *esdb.Client
	err error
}

func (e *clientError) Error() string { return e.err.Error() }
func (e *clientError) Unwrap() error { return e.err }

// by marks err (if any) as an error of a call made with c.
func by(c *esdb.Client, err error) error {
	if err == nil {
		return nil
	}
	return &clientError{c: c, err: err}
}

// revision maps an expected version onto the client's expected revision.
func revision(e events.ExpectedVersion) esdb.ExpectedRevision {
	switch e {
	case events.Any:
		return esdb.Any{}
	case events.NoStream:
		return esdb.NoStream{}
	default:
		return esdb.StreamRevision{Value: uint64(e) - 1}
	}
}

// Append implements events.Store; see the package comment for how ids are
// checked.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	out, err := s.append(ctx, stream, expected, evs)
	if err != nil {
		return nil, fmt.Errorf("esdbstore: append %s: %w", stream, err)
	}
	return out, nil
}

func (s *Store) append(ctx context.Context, stream string, expected events.ExpectedVersion, evs []events.Event) ([]events.Event, error) {
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	if !expected.Valid() {
		return nil, &events.InvalidError{Field: "expected", Reason: expected.String()}
	}
	out, err := events.Prepare(stream, evs, s.now())
	if err != nil {
		return nil, err
	}
	data := make([]esdb.EventData, len(out))
	for i, e := range out {
		if strings.HasPrefix(e.Type, "$") {
			return nil, &events.InvalidError{Field: fmt.Sprintf("events[%d].type", i), Reason: "starts with $, which KurrentDB reserves"}
		}
		md, err := encodeMeta(e.Schema, e.At, e.Actor, e.Causation, e.Correlation)
		if err != nil {
			return nil, err
		}
		data[i] = esdb.EventData{EventID: e.ID, EventType: e.Type, ContentType: esdb.ContentTypeJson, Data: e.Data, Metadata: md}
	}
	if err := s.checkStream(stream); err != nil {
		return nil, err
	}

	release, err := s.reserve(ctx, out)
	if err != nil {
		return nil, err
	}
	defer release()
	// Ids this process has stored, or seen stored, are in the table; ids
	// another process stored since are caught below, by KurrentDB's own
	// idempotence or a wrong expected version.
	if done, err := s.replayed(ctx, out); done || err != nil {
		return out, err
	}
	// One append at a time per stream: a loser of the race then learns its
	// version is stale from the winner, without asking the server.
	unlock, err := s.lockStream(ctx, stream)
	if err != nil {
		return nil, err
	}
	var once sync.Once
	defer once.Do(unlock)
	// Versions only grow: a stream seen past the expected version refuses
	// the append without asking the server.
	s.tab.Lock()
	seen := s.vers[stream]
	s.tab.Unlock()
	if expected != events.Any && seen > uint64(expected) {
		return nil, &events.VersionError{Stream: stream, Expected: expected, Actual: seen}
	}
	c := s.conn()
	res, err := c.AppendToStream(ctx, s.prefix+stream, esdb.AppendToStreamOptions{ExpectedRevision: revision(expected)}, data...)
	err = by(c, err)
	if err != nil {
		var ee *esdb.Error
		if !errors.As(err, &ee) || ee.Code() != esdb.ErrorCodeWrongExpectedVersion {
			return nil, s.fail(ctx, err)
		}
		// The table may have grown meanwhile (other calls catch it up):
		// these very ids may be in it now.
		if done, err := s.replayed(ctx, out); done || err != nil {
			return out, err
		}
		actual, ok := currentVersion(ee)
		if !ok {
			if actual, err = s.version(ctx, stream); err != nil {
				return nil, s.fail(ctx, err)
			}
		}
		s.saw(stream, actual)
		return nil, &events.VersionError{Stream: stream, Expected: expected, Actual: actual}
	}
	// The next append to the stream may go while this one numbers its
	// events: it knows the stream's new version.
	last := res.NextExpectedVersion + 1 // the version of the batch's last event
	s.saw(stream, last)
	once.Do(unlock)
	if err := s.catchUp(ctx, func() bool { return s.stored(out) }); err != nil {
		return nil, s.fail(ctx, err)
	}
	s.tab.Lock()
	var commit uint64 // of the events found under the batch's ids
	for i := range out {
		p, ok := s.ids[out[i].ID]
		en, inTable := s.entryLocked(p)
		if !ok || !inTable || (i > 0 && p != out[i-1].Position+1) {
			s.tab.Unlock()
			return nil, fmt.Errorf("esdbstore: appended event %s not found in $all where expected (position %d)", out[i].ID, p)
		}
		commit = en.at.Commit
		out[i].Version = last - uint64(len(out)-1-i)
		out[i].Position = p
		out[i].Chain = en.chain
	}
	s.tab.Unlock()
	if commit != res.CommitPosition {
		// Not our write: KurrentDB found the ids already stored (by another
		// process) and wrote nothing. The contract wants their content
		// compared.
		if _, err := s.replayed(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lockStream waits for stream's turn; unlock gives it back.
func (s *Store) lockStream(ctx context.Context, stream string) (unlock func(), err error) {
	s.busy.Lock()
	t := s.writing[stream]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		t.ch <- struct{}{}
		s.writing[stream] = t
	}
	t.users++
	s.busy.Unlock()
	done := func() {
		s.busy.Lock()
		if t.users--; t.users == 0 {
			delete(s.writing, stream)
		}
		s.busy.Unlock()
	}
	select {
	case <-t.ch:
		return func() { t.ch <- struct{}{}; done() }, nil
	case <-ctx.Done():
		done()
		return nil, s.fail(ctx, ctx.Err())
	}
}

// checkStream refuses the stream names KurrentDB or the store keep for
// themselves: with the empty prefix a name starting with $ is a system
// stream, and TableStream and LegacyTableStream are the position table's.
func (s *Store) checkStream(stream string) error {
	switch {
	case stream == TableStream, stream == LegacyTableStream:
		return &events.InvalidError{Field: "stream", Reason: stream + " is the store's position table"}
	case s.prefix == "" && strings.HasPrefix(stream, "$"):
		return &events.InvalidError{Field: "stream", Reason: "starts with $, which KurrentDB reserves"}
	}
	return nil
}

// entryLocked returns where in $all position p is and its chain value, if
// the tail or a chunk in memory holds it (position 0: the zero entry). The
// caller holds s.tab.
func (s *Store) entryLocked(p uint64) (entry, bool) {
	if p == 0 {
		return entry{}, true
	}
	if p >= s.tail.first {
		if i := p - s.tail.first; i < uint64(len(s.tail.at)) {
			return entry{at: s.tail.at[i], chain: s.tail.chain[i]}, true
		}
		return entry{}, false
	}
	k := s.chunkOf(p)
	if k < 0 || s.chunks[k] == nil {
		return entry{}, false
	}
	c := s.chunks[k]
	return entry{at: c.at[p-c.first], chain: c.chain[p-c.first]}, true
}

// headLocked is the store's last position. The caller holds s.tab.
func (s *Store) headLocked() uint64 { return s.tail.next() - 1 }

// saw records that stream was at version v.
func (s *Store) saw(stream string, v uint64) {
	s.tab.Lock()
	if v > s.vers[stream] {
		s.vers[stream] = v
	}
	s.tab.Unlock()
}

// stored reports whether the table holds every id of evs. The caller holds
// s.tab.
func (s *Store) stored(evs []events.Event) bool {
	for _, e := range evs {
		if _, ok := s.ids[e.ID]; !ok {
			return false
		}
	}
	return true
}

// reserve waits until no other append of this process holds one of evs'
// ids, then holds them all until release is called.
func (s *Store) reserve(ctx context.Context, evs []events.Event) (release func(), err error) {
	for {
		s.busy.Lock()
		var wait chan struct{}
		for _, e := range evs {
			if ch, ok := s.pending[e.ID]; ok {
				wait = ch
				break
			}
		}
		if wait == nil {
			mine := make(chan struct{})
			for _, e := range evs {
				s.pending[e.ID] = mine
			}
			s.busy.Unlock()
			return func() {
				s.busy.Lock()
				for _, e := range evs {
					delete(s.pending, e.ID)
				}
				s.busy.Unlock()
				close(mine)
			}, nil
		}
		s.busy.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, s.fail(ctx, ctx.Err())
		}
	}
}

// replayed decides an append's ids against the table (brought up to date by
// the caller): it reads back the events stored under them and decides by
// events.AlreadyStored. If the append replays them, evs become the stored events
// and done is true.
func (s *Store) replayed(ctx context.Context, evs []events.Event) (done bool, err error) {
	if err := s.loadIDs(ctx); err != nil {
		return false, s.fail(ctx, err)
	}
	s.tab.Lock()
	at := make([]uint64, len(evs))
	found := 0
	for i, e := range evs {
		if p, ok := s.ids[e.ID]; ok {
			at[i] = p
			found++
		}
	}
	s.tab.Unlock()
	if found == 0 {
		return false, nil
	}
	stored := make([]events.Event, len(evs))
	for i, p := range at {
		if p == 0 {
			continue
		}
		got, err := s.readAll(ctx, p-1, 1)
		if err != nil {
			return false, s.fail(ctx, err)
		}
		if len(got) != 1 || got[0].ID != evs[i].ID {
			return false, fmt.Errorf("events[%d]: id %s not found at its position %d", i, evs[i].ID, p)
		}
		stored[i] = got[0]
	}
	if done, err = events.AlreadyStored(evs, stored); done {
		copy(evs, stored)
	}
	return done, err
}

// currentVersion reads the stream's version from a wrong-expected-version
// error of the client, which carries the server's current revision only in
// its text ("... expecting '4' but got 'no_stream'"); false if the text is
// not in that form, and the caller reads the stream instead.
func currentVersion(ee *esdb.Error) (uint64, bool) {
	msg := ee.Error()
	i := strings.LastIndex(msg, "but got '")
	if i < 0 {
		return 0, false
	}
	rest := msg[i+len("but got '"):]
	j := strings.IndexByte(rest, '\'')
	if j < 0 {
		return 0, false
	}
	if rest[:j] == "no_stream" {
		return 0, true
	}
	rev, err := strconv.ParseUint(rest[:j], 10, 64)
	if err != nil || rev == math.MaxUint64 {
		return 0, false
	}
	return rev + 1, true
}

// version reads the version of stream: its last event's revision plus one,
// 0 for a stream never written.
func (s *Store) version(ctx context.Context, stream string) (uint64, error) {
	c := s.conn()
	rs, err := c.ReadStream(ctx, s.prefix+stream, esdb.ReadStreamOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
	err = by(c, err)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	ev, err := rs.Recv()
	switch {
	case isNotFound(err) || isEOF(err):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return ev.OriginalEvent().EventNumber + 1, nil
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	out, err := s.readStream(ctx, stream, after, limit)
	if err != nil {
		return nil, fmt.Errorf("esdbstore: read %s: %w", stream, err)
	}
	return out, nil
}

func (s *Store) readStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	if err := events.ValidateStream(stream); err != nil {
		return nil, err
	}
	if err := s.checkStream(stream); err != nil {
		return nil, err
	}
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	var out []events.Event
	for {
		n := page
		if limit > 0 {
			n = min(n, limit-len(out))
		}
		// Version after+1 is revision after.
		c := s.conn()
		rs, err := c.ReadStream(ctx, s.prefix+stream, esdb.ReadStreamOptions{From: esdb.Revision(after)}, uint64(n))
		err = by(c, err)
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		got := 0
		for {
			ev, err := rs.Recv()
			if isEOF(err) || isNotFound(err) {
				break
			}
			if err != nil {
				rs.Close()
				return nil, s.fail(ctx, err)
			}
			got++
			rec := ev.OriginalEvent()
			p, err := s.position(ctx, rec)
			var en entry
			if err == nil {
				en, _, err = s.entryAt(ctx, p) // in the table: position found it there
			}
			if err != nil {
				rs.Close()
				return nil, s.fail(ctx, err)
			}
			e, err := s.decode(rec, p)
			if err != nil {
				rs.Close()
				return nil, err
			}
			e.Chain = en.chain
			out = append(out, e)
			after = e.Version
		}
		rs.Close()
		s.saw(stream, after)
		if got < n || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
	}
}

// ReadAll implements events.Store.
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("esdbstore: read all: %w", err)
	}
	defer end()
	out, err := s.readAll(ctx, after, limit)
	if err != nil {
		return nil, fmt.Errorf("esdbstore: read all: %w", s.fail(ctx, err))
	}
	return out, nil
}

// readAll reads the store's events after position after from $all, starting
// at the (commit, prepare) of after in the table.
func (s *Store) readAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	from, ok, err := s.lookup(ctx, after)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := s.catchUp(ctx); err != nil {
			return nil, err
		}
		if from, ok, err = s.lookup(ctx, after); err != nil || !ok {
			return nil, err // beyond the head, if no error
		}
	}
	prev := from.chain
	var out []events.Event
	p := after
	cursor := from.at
	for {
		n := page
		if limit > 0 {
			n = min(n, limit-len(out)+1) // +1: a read from a position returns that position's event too
		}
		c := s.conn()
		rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{From: cursor}, uint64(n))
		err = by(c, err)
		if err != nil {
			return nil, err
		}
		got := 0
		for {
			ev, err := rs.Recv()
			if isEOF(err) {
				break
			}
			if err != nil {
				rs.Close()
				return nil, err
			}
			got++
			rec := ev.OriginalEvent()
			if !beyond(rec.Position, cursor) {
				continue
			}
			cursor = rec.Position
			if !s.ours(rec) {
				continue
			}
			p++
			e, err := s.decodeAt(ctx, rec, p, prev)
			if err != nil {
				rs.Close()
				return nil, err
			}
			prev = e.Chain
			out = append(out, e)
			if limit > 0 && len(out) == limit {
				rs.Close()
				return out, nil
			}
		}
		rs.Close()
		if got < n {
			return out, nil
		}
	}
}

// agree checks that counting the store's events in $all, as reads and
// subscriptions do, gives the number the table has for the same event: the
// table and the count are two derivations of one numbering, and a
// disagreement (events deleted, truncated or scavenged away) would hand out
// wrong positions. It returns the table's entry of p; false if p is beyond
// the table.
func (s *Store) agree(ctx context.Context, p uint64, at esdb.Position) (entry, bool, error) {
	want, ok, err := s.entryAt(ctx, p)
	if err != nil {
		return entry{}, false, err
	}
	if ok && want.at != at {
		return entry{}, false, fmt.Errorf("esdbstore: position %d: counted at $all %d/%d, the table has %d/%d: events were removed from $all",
			p, at.Commit, at.Prepare, want.at.Commit, want.at.Prepare)
	}
	return want, ok, nil
}

// decodeAt decodes the event rec of $all, counted as position p after the
// chain value prev: agree checks its place, and its chain value is the
// table's, or, beyond the table (an event newer than the last catch-up),
// computed from prev as catchUp computes it.
func (s *Store) decodeAt(ctx context.Context, rec *esdb.RecordedEvent, p uint64, prev events.Hash) (events.Event, error) {
	en, ok, err := s.agree(ctx, p, rec.Position)
	if err != nil {
		return events.Event{}, err
	}
	e, err := s.decode(rec, p)
	if err != nil {
		return events.Event{}, err
	}
	if e.Chain = en.chain; !ok {
		e.Chain = s.chainOf(prev, e)
	}
	return e, nil
}

// chainOf is events.ChainOf (zero for a store opened unchained, in
// benchmarks).
func (s *Store) chainOf(prev events.Hash, e events.Event) events.Hash {
	if s.unchained {
		return events.Hash{}
	}
	return events.ChainOf(prev, e)
}

// readFrom is where a read after a position starts: the $all position to read
// from (exclusive; esdb.Start{} for position 0) and the chain value of the
// position.
type readFrom struct {
	at    esdb.AllPosition
	chain events.Hash
}

// lookup returns where in $all the store's events after position after
// begin, or false if after is beyond the table.
func (s *Store) lookup(ctx context.Context, after uint64) (readFrom, bool, error) {
	if after == 0 {
		return readFrom{at: esdb.Start{}}, true, nil
	}
	en, ok, err := s.entryAt(ctx, after)
	if err != nil || !ok {
		return readFrom{}, false, err
	}
	return readFrom{at: en.at, chain: en.chain}, true, nil
}

// beyond reports whether the $all position at is past cursor (Start: any).
func beyond(at esdb.Position, cursor esdb.AllPosition) bool {
	c, ok := cursor.(esdb.Position)
	return !ok || at.Commit > c.Commit || (at.Commit == c.Commit && at.Prepare > c.Prepare)
}

// ours reports whether an event of $all is one of the store's: in a stream
// with the prefix, neither the stream nor the type a system one ($).
func (s *Store) ours(rec *esdb.RecordedEvent) bool {
	return strings.HasPrefix(rec.StreamID, s.prefix) && !strings.HasPrefix(rec.StreamID, "$") &&
		!strings.HasPrefix(rec.EventType, "$")
}

// catchUp extends the table with the store's events in $all past the last
// one it has seen, up to the head of $all as it was when catchUp was called,
// or until enough (if not nil; called with s.tab held) says the table has
// what the caller wants; then it writes the tail's full chunks (see
// writeChunks). Concurrent callers share runs: a run that started after a
// caller asked has read everything the caller needs.
func (s *Store) catchUp(ctx context.Context, enough ...func() bool) error {
	s.tab.Lock()
	ticket := s.runs
	s.tab.Unlock()
	s.sync.Lock()
	defer s.sync.Unlock()
	s.tab.Lock()
	if s.ran > ticket || (len(enough) > 0 && enough[0]()) {
		s.tab.Unlock()
		return nil
	}
	s.runs++
	run := s.runs
	from := counted{cursor: s.seen, p: s.headLocked(), prev: s.tail.last()}
	check := s.check
	s.tab.Unlock()
	for {
		got, err := s.countPage(ctx, from, check)
		if err != nil {
			return err
		}
		if check != nil {
			check = nil
			s.tab.Lock()
			s.check = nil
			s.tab.Unlock()
		}
		if err := s.extend(got, run); err != nil {
			return err
		}
		if got.read < page {
			return s.writeChunks(ctx)
		}
		from = counted{cursor: got.cursor, p: got.p, prev: got.prev}
	}
}

// counted is what a page of catchUp's read of $all counted: the entries of
// the store's events it found, and where the count stands after them: the
// cursor in $all, the last position and its chain value.
type counted struct {
	at     []esdb.Position
	ids    []uuid.UUID
	chain  []events.Hash
	cursor esdb.AllPosition
	p      uint64
	prev   events.Hash
	read   int // events of $all read
}

// countPage reads a page of $all after from.cursor and numbers the store's
// events in it from from.p, computing each one's chain value from the one
// before (events/chain.go): each needs its event decoded, so an event that
// is not esdbstore's fails the read. With check set, the page starts at the
// last chunk's last event, which must be there, with its chain value.
func (s *Store) countPage(ctx context.Context, from counted, check *tableEntry) (counted, error) {
	c := s.conn()
	rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{From: from.cursor}, page)
	if err = by(c, err); err != nil {
		return counted{}, err
	}
	defer rs.Close()
	for {
		ev, err := rs.Recv()
		if isEOF(err) {
			break
		}
		if err != nil {
			return counted{}, err
		}
		from.read++
		rec := ev.OriginalEvent()
		if check != nil {
			if err := s.checkLast(check, rec); err != nil {
				return counted{}, err
			}
			check = nil
		}
		if !beyond(rec.Position, from.cursor) {
			continue
		}
		from.cursor = rec.Position
		if !s.ours(rec) {
			continue
		}
		from.p++
		if !s.unchained {
			e, err := s.decode(rec, from.p)
			if err != nil {
				return counted{}, err
			}
			from.prev = events.ChainOf(from.prev, e)
		}
		from.at = append(from.at, rec.Position)
		from.ids = append(from.ids, rec.EventID)
		from.chain = append(from.chain, from.prev)
	}
	if check != nil {
		return counted{}, s.lost(s.tableName(), check)
	}
	return from, nil
}

// checkLast checks the first event a catch-up after Open reads: the last
// chunk's last event, which must still be in $all where the chunk says, and
// chain to the value the chunk has for it.
func (s *Store) checkLast(e *tableEntry, rec *esdb.RecordedEvent) error {
	if rec.Position != e.at || rec.EventID != e.id || !s.ours(rec) {
		return s.lost(s.tableName(), e)
	}
	if s.unchained {
		return nil
	}
	ev, err := s.decode(rec, e.p)
	if err != nil {
		return err
	}
	if got := events.ChainOf(e.prev, ev); got != e.chain {
		return fmt.Errorf("esdbstore: position table %s@%d: %w: its chain value of position %d is %s, and the event there chains to %s",
			s.tableName(), e.chunk, events.ErrDamaged, e.p, e.chain, got)
	}
	return nil
}

// extend adds a counted page to the tail, and checks an older build's table
// against it (see loadLegacy). run is the catch-up run, complete when the
// page was the last.
func (s *Store) extend(got counted, run uint64) error {
	s.tab.Lock()
	defer s.tab.Unlock()
	s.tail.at = append(s.tail.at, got.at...)
	s.tail.ids = append(s.tail.ids, got.ids...)
	s.tail.chain = append(s.tail.chain, got.chain...)
	for i, id := range got.ids {
		if _, dup := s.ids[id]; !dup {
			s.ids[id] = s.tail.next() - uint64(len(got.ids)-i)
		}
	}
	s.seen = got.cursor
	if l := s.legacy; l != nil && l.p >= s.tail.first && l.p < s.tail.next() {
		if i := l.p - s.tail.first; s.tail.at[i] != l.at || s.tail.ids[i] != l.id {
			return s.lost(s.prefix+LegacyTableStream, l)
		}
		s.legacy = nil
	}
	if got.read < page {
		if s.legacy != nil {
			return s.lost(s.prefix+LegacyTableStream, s.legacy)
		}
		s.ran = run
	}
	return nil
}

// lost is the error of a table (the stream table) whose last chunk names an
// event $all does not hold at that position (or not as one of the store's:
// a table copied from another prefix).
func (s *Store) lost(table string, e *tableEntry) error {
	return fmt.Errorf("esdbstore: position table %s@%d: %w: its last chunk has position %d (id %s) at $all %d/%d, which $all does not hold: events were removed from $all",
		table, e.chunk, events.ErrDamaged, e.p, e.id, e.at.Commit, e.at.Prepare)
}

// position returns the store's position of an event read from a stream: by
// its $all position, extending the table if the event is newer than the
// table; failing that (a server that leaves positions out of stream reads),
// by its id.
func (s *Store) position(ctx context.Context, rec *esdb.RecordedEvent) (uint64, error) {
	at := rec.Position
	for try := 0; ; try++ {
		p, found, err := s.find(ctx, at)
		if err != nil {
			return 0, err
		}
		if found {
			return p, nil
		}
		if try > 0 {
			if err := s.loadIDs(ctx); err != nil {
				return 0, err
			}
			s.tab.Lock()
			p, byID := s.ids[rec.EventID]
			s.tab.Unlock()
			if byID {
				return p, nil
			}
			return 0, fmt.Errorf("esdbstore: %s@%d (id %s, $all %d/%d) is not in the position table",
				rec.StreamID, rec.EventNumber, rec.EventID, at.Commit, at.Prepare)
		}
		if err := s.catchUp(ctx, func() bool { _, ok := s.ids[rec.EventID]; return ok && !beyond(at, s.seen) }); err != nil {
			return 0, err
		}
	}
}

func cmp(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decode makes an events.Event of a KurrentDB event at the store's position
// p.
func (s *Store) decode(rec *esdb.RecordedEvent, p uint64) (events.Event, error) {
	m, at, err := decodeMeta(rec.UserMetadata)
	if err != nil {
		return events.Event{}, fmt.Errorf("esdbstore: %s@%d (id %s): %w", rec.StreamID, rec.EventNumber, rec.EventID, err)
	}
	return events.Event{
		ID: rec.EventID, Stream: strings.TrimPrefix(rec.StreamID, s.prefix),
		Version: rec.EventNumber + 1, Position: p,
		Type: rec.EventType, Schema: m.Schema, At: at,
		Actor: m.Actor, Causation: m.Causation, Correlation: m.Correlation,
		Data: slices.Clip(rec.Data),
	}, nil
}

// Subscribe implements events.Store with a catch-up subscription to $all,
// from the (commit, prepare) of position after (exclusive).
func (s *Store) Subscribe(ctx context.Context, after uint64, fn func(events.Event) error) error {
	cctx, end, err := s.begin(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("esdbstore: subscribe: %w", err)
	}
	defer end()
	fail := func(err error) error {
		err = s.fail(cctx, err)
		if ctxErr := done(ctx); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("esdbstore: subscribe: %w", err)
	}
	// from is where the subscription starts; p counts the store's events
	// up to it. Beyond the table, start at its end and skip up to after.
	from, ok, err := s.lookup(cctx, after)
	if err != nil {
		return fail(err)
	}
	p := after
	if !ok {
		if err := s.catchUp(cctx); err != nil {
			return fail(err)
		}
		if from, ok, err = s.lookup(cctx, after); err != nil {
			return fail(err)
		}
		if !ok {
			s.tab.Lock()
			p = s.headLocked()
			s.tab.Unlock()
			if from, _, err = s.lookup(cctx, p); err != nil {
				return fail(err)
			}
		}
	}
	prev := from.chain
	c := s.conn()
	sub, err := c.SubscribeToAll(cctx, esdb.SubscribeToAllOptions{From: from.at})
	err = by(c, err)
	if err != nil {
		return fail(err)
	}
	defer sub.Close()
	for {
		ev := sub.Recv()
		switch {
		case ev.SubscriptionDropped != nil:
			return fail(ev.SubscriptionDropped.Error)
		case ev.EventAppeared != nil:
			rec := ev.EventAppeared.OriginalEvent()
			if !beyond(rec.Position, from.at) || !s.ours(rec) {
				continue
			}
			p++
			e, err := s.decodeAt(cctx, rec, p, prev)
			if err != nil {
				return fail(err)
			}
			if prev = e.Chain; p <= after {
				continue
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}

// Head implements events.Store: the number of the store's events in $all.
func (s *Store) Head(ctx context.Context) (uint64, error) {
	ctx, end, err := s.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("esdbstore: head: %w", err)
	}
	defer end()
	if err := s.catchUp(ctx); err != nil {
		return 0, fmt.Errorf("esdbstore: head: %w", s.fail(ctx, err))
	}
	s.tab.Lock()
	defer s.tab.Unlock()
	return s.headLocked(), nil
}

// ChainHead implements events.Store: the head's position and chain value
// from the table (see the package comment, "The hash chain"), brought up to
// date, and its event's time.
func (s *Store) ChainHead(ctx context.Context) (events.ChainHead, error) {
	head, err := s.Head(ctx)
	if err != nil || head == 0 {
		return events.ChainHead{}, err
	}
	evs, err := s.ReadAll(ctx, head-1, 1)
	if err != nil {
		return events.ChainHead{}, err
	}
	if len(evs) == 0 {
		return events.ChainHead{}, fmt.Errorf("esdbstore: chain head: no event at head %d: %w", head, events.ErrDamaged)
	}
	return events.ChainHead{Position: head, Chain: evs[0].Chain, At: evs[0].At}, nil
}

// Close implements events.Store: it ends every call in flight (they return
// ErrClosed), waits for them, and closes the client. It is harmless to
// repeat.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.kill != nil {
		s.kill()
	}
	s.calls.Wait()
	s.mu.RLock()
	c := s.client
	s.mu.RUnlock()
	if c != nil {
		c.Close()
	}
	return nil
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

func isNotFound(err error) bool {
	var ee *esdb.Error
	return errors.As(err, &ee) && ee.Code() == esdb.ErrorCodeResourceNotFound
}
