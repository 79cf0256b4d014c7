package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/declaration"
	"meshplane/events"
	"meshplane/internal/gz"
)

// ErrRejected is what a report Handler wraps to say a report can never be
// recorded (its node is unknown, it is invalid): the message is terminated,
// not redelivered, and counted. Any other error from a Handler means "not
// now": the message is redelivered later.
var ErrRejected = errors.New("bus: report rejected")

// Reject wraps err so that the consumer terminates the report (ErrRejected).
func Reject(err error) error { return fmt.Errorf("%w: %w", ErrRejected, err) }

// RejectFor is Reject naming the refusal reason (events.Refused*), which
// the consumer logs with the report (ReasonOf).
func RejectFor(reason string, err error) error { return &rejection{reason: reason, err: err} }

type rejection struct {
	reason string
	err    error
}

func (r *rejection) Error() string         { return ErrRejected.Error() + ": " + r.err.Error() }
func (r *rejection) Unwrap() []error       { return []error{ErrRejected, r.err} }
func (r *rejection) RefusalReason() string { return r.reason }

// Stream and bucket settings.
const (
	// duplicateWindow is how long the stream remembers an apply id. A report
	// re-sent later than this (an agent away for longer) is stored again, and
	// the event store drops it: the apply id is the event's id.
	duplicateWindow = time.Hour
	// reportsMaxBytes bounds the reports waiting for the controller. When it
	// is reached the stream refuses new reports, and the agents keep them in
	// their outboxes (rule 8) rather than the stream dropping old ones.
	reportsMaxBytes = 1 << 30
	// reportsPerNode bounds one node's reports waiting in the stream
	// (MaxMsgsPerSubject with DiscardNewPerSubject): beyond it the stream
	// refuses the node's new reports, which its agent keeps in its outbox
	// and sends again (rule 8). So one node cannot fill the stream for all
	// (with maxReportMsg, it holds at most 128 MiB of the 1 GiB), nor hold
	// more than this many of the consumer's maxAckPending with reports its
	// rate limit defers. A stream that already holds more of one node (made
	// before this limit) keeps that many until it drains (reportsPerSubject).
	reportsPerNode = 64
	// maxReportMsg bounds one message on the reports stream (MaxMsgSize):
	// the controller refuses, and records, a report above MaxReportSize;
	// above this the stream refuses it at publish (the agent keeps it).
	maxReportMsg = 2 * MaxReportSize
	// ackWait is how long a handler has before a report is redelivered.
	ackWait = 30 * time.Second
	// maxAckPending bounds the reports handed out and not yet acknowledged.
	maxAckPending = 4096
	// pullExpiry is how long one pull request of the report consumer lives
	// (nats.go's default is 30 s); its heartbeat is half of it, and two
	// missed heartbeats make the client pull again. On a clustered bus the
	// consumer's leader may move (its server partitioned away): the pulls
	// it held are gone, and with the default the controller heard no report
	// for about 30 s after it (TestHostsFailover). So: 5 s, a pull every 5 s
	// when idle.
	pullExpiry = 5 * time.Second

	// declMaxConsumers bounds the consumers of the declarations bucket's
	// stream. No agent of this build makes one (each hears its key
	// republished, Node.Watch) and the controller makes none; these are for
	// an operator's tools (nats kv watch) and agents whose users were minted
	// before (they hold CONSUMER.CREATE on their key): whatever one of them
	// makes, an agent of this build still hears its declarations.
	declMaxConsumers = 16
	// reportsMaxConsumers bounds the consumers of the reports stream: the
	// controller's durable one (a work queue takes no second overlapping
	// it); no node may create one.
	reportsMaxConsumers = 4
	// AccountMaxConsumers bounds the consumers of the whole mesh account
	// (its JetStream limits, in the account JWT the controller signs, or
	// the one ExternalAccount makes): the two streams' bounds and room to
	// spare. Set, it also replaces the server's default per-stream limit
	// (default_max_consumers, 1,000 in nats-server 2.15) for any stream
	// that sets none.
	AccountMaxConsumers = 64
)

// declRepublish is the bucket's stream's RePublish: every value it stores,
// once stored, is published again on mesh.decl.<key>, with its sequence
// (Nats-Sequence) and headers; agents subscribe to their own key's.
var declRepublish = jetstream.RePublish{Source: declPrefix + ">", Destination: RepublishSubjectPrefix + ">"}

// ControllerConnConfig is how the controller reaches the bus. Server.Controller
// fills it for the embedded bus; with --nats it comes from the operator.
type ControllerConnConfig struct {
	URLs []string
	User User   // the controller's user (every right in the mesh account)
	CA   []byte // PEM of a private CA; nil for the system's roots or no TLS
	// Replicas of the bucket and the stream (a NATS cluster); 0 means 1.
	Replicas int
	Logger   *slog.Logger // nil discards
	// ReportWorkers is how many reports ConsumeReports hands to its handler
	// at once; 0 means 1. Each node's reports always go to the same worker,
	// so a node's are handled in stream order; different nodes' overlap,
	// which lets an event store commit them together (group commit).
	ReportWorkers int

	inProcess nats.InProcessConnProvider
}

// ControllerConn is the controller's connection to the bus: it puts
// declarations and consumes reports.
type ControllerConn struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	log     *slog.Logger
	workers int

	rosterMu  sync.Mutex
	rosterPut rosterPut // the roster value last put (ensureRosters)
	// holders are the nodes whose last heartbeat said they hold a roster
	// (node -> struct{}): their declarations travel without it (wireOf).
	holders sync.Map
}

// heardRoster notes what node's heartbeat said of the roster it holds.
func (c *ControllerConn) heardRoster(node string, held uint64) {
	if held == 0 {
		c.holders.Delete(node)
		return
	}
	if _, ok := c.holders.Load(node); !ok {
		c.holders.Store(node, struct{}{})
	}
}

// holdsRoster reports whether node's last heartbeat said it holds a roster.
func (c *ControllerConn) holdsRoster(node string) bool {
	_, ok := c.holders.Load(node)
	return ok
}

// encodeFor is d's value in the bucket, as it travels to its node: the
// JSON of d whole to a node not known to hold a roster (wireOf), which
// every agent reads; to a holder, the JSON of d without its roster,
// gzipped (an agent that holds a roster decodes both: decodeDeclaration).
// A declaration of a few containers is some 2 KB of JSON, most of it keys
// and digests that repeat; gzipped, about a third.
func (c *ControllerConn) encodeFor(d declaration.Declaration) ([]byte, error) {
	if !c.holdsRoster(d.Node) {
		return json.Marshal(d)
	}
	b, err := json.Marshal(d.Wire())
	if err != nil {
		return nil, err
	}
	return gz.Compress(b), nil
}

// wireOf is d as it travels to its node: without its roster when the node
// holds one (its heartbeat said so: it reads the shared value and can fill
// d), else whole, roster and hosts file in it. A node not heard of since
// the controller started (its first heartbeat comes within seconds), an
// agent older than the shared roster and a node whose credentials may not
// read it are sent the whole declaration, which every agent applies.
func (c *ControllerConn) wireOf(d declaration.Declaration) declaration.Declaration {
	if c.holdsRoster(d.Node) {
		return d.Wire()
	}
	return d
}

// DialController connects, and makes the declarations bucket and the reports
// stream if they are not there (or brings their settings up to date).
func DialController(ctx context.Context, cfg ControllerConnConfig) (*ControllerConn, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	nc, err := dial(dialConfig{
		name: "controller", urls: cfg.URLs, user: cfg.User, ca: cfg.CA,
		inbox: controllerInboxRoot, inProcess: cfg.inProcess, logger: log,
	})
	if err != nil {
		return nil, err
	}
	c, err := setup(ctx, nc, cfg, log)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func setup(ctx context.Context, nc *nats.Conn, cfg ControllerConnConfig, log *slog.Logger) (*ControllerConn, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bus: controller: %w", err)
	}
	replicas := max(cfg.Replicas, 1)
	kv, err := ensureBucket(ctx, js, replicas, log)
	if err != nil {
		return nil, fmt.Errorf("bus: controller: bucket %s: %w", DeclarationsBucket, err)
	}
	perNode, err := reportsPerSubject(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("bus: controller: stream %s: %w", ReportsStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:                 ReportsStream,
		Description:          "meshplane: apply reports, mesh.report.<node>, deduplicated by apply id",
		Subjects:             []string{ReportSubjectPrefix + ">"},
		Retention:            jetstream.WorkQueuePolicy,
		Storage:              jetstream.FileStorage,
		Discard:              jetstream.DiscardNew,
		MaxBytes:             reportsMaxBytes,
		MaxMsgsPerSubject:    perNode,
		DiscardNewPerSubject: true,
		MaxMsgSize:           maxReportMsg,
		Duplicates:           duplicateWindow,
		Replicas:             replicas,
		MaxConsumers:         reportsMaxConsumers,
	}); err != nil {
		return nil, fmt.Errorf("bus: controller: stream %s: %w", ReportsStream, err)
	}
	return &ControllerConn{nc: nc, js: js, kv: kv, log: log, workers: max(cfg.ReportWorkers, 1)}, nil
}

// bucketConfig is the declarations bucket meshplane makes.
func bucketConfig(replicas int) jetstream.KeyValueConfig {
	rp := declRepublish
	return jetstream.KeyValueConfig{
		Bucket:       DeclarationsBucket,
		Description:  "meshplane: the latest declaration of each node, under the node's name",
		History:      1,
		MaxValueSize: maxPayload - 64<<10, // room for the headers
		Storage:      jetstream.FileStorage,
		Replicas:     replicas,
		RePublish:    &rp,
	}
}

// ensureBucket makes the declarations bucket, or brings the stream of one
// made by an older build up to date in place (its values kept): RePublish
// added (declRepublish), its consumers bounded (declMaxConsumers), its
// replicas as asked. A new bucket's stream is made with the consumer limit
// in it (the KV client would make it unlimited, and a server before 2.10
// cannot change the limit later). A server that refuses to change an
// existing stream's consumer limit gets the rest of the update, and a
// warning: the account's limit (AccountMaxConsumers) bounds it still.
func ensureBucket(ctx context.Context, js jetstream.JetStream, replicas int, log *slog.Logger) (jetstream.KeyValue, error) {
	want := bucketConfig(replicas)
	st, err := js.Stream(ctx, declStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name:              declStream,
			Description:       want.Description,
			Subjects:          []string{declPrefix + ">"},
			MaxMsgsPerSubject: int64(want.History),
			MaxBytes:          -1,
			MaxMsgs:           -1,
			MaxMsgSize:        want.MaxValueSize,
			Storage:           want.Storage,
			Replicas:          replicas,
			AllowRollup:       true,
			DenyDelete:        true,
			Duplicates:        2 * time.Minute,
			MaxConsumers:      declMaxConsumers,
			AllowDirect:       true,
			RePublish:         want.RePublish,
			Discard:           jetstream.DiscardNew,
		})
		if err == nil || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return js.KeyValue(ctx, DeclarationsBucket)
		}
		return nil, fmt.Errorf("create stream %s: %w", declStream, err)
	}
	if err != nil {
		return nil, err
	}
	cfg := st.CachedInfo().Config
	was := cfg
	changed := false
	set := func(ok bool, apply func()) {
		if !ok {
			apply()
			changed = true
		}
	}
	set(cfg.RePublish != nil && *cfg.RePublish == *want.RePublish, func() { cfg.RePublish = want.RePublish })
	set(cfg.MaxConsumers == declMaxConsumers, func() { cfg.MaxConsumers = declMaxConsumers })
	set(cfg.Replicas == replicas, func() { cfg.Replicas = replicas })
	set(cfg.Description == want.Description, func() { cfg.Description = want.Description })
	set(cfg.MaxMsgSize == want.MaxValueSize, func() { cfg.MaxMsgSize = want.MaxValueSize })
	set(cfg.AllowDirect, func() { cfg.AllowDirect = true })
	if changed {
		_, err := js.UpdateStream(ctx, cfg)
		if err != nil && was.MaxConsumers != declMaxConsumers {
			log.Warn("bus: the server did not change the declarations stream's consumer limit; the account's bounds it", "stream", declStream, "was", was.MaxConsumers, "want", declMaxConsumers, "err", err)
			cfg.MaxConsumers = was.MaxConsumers
			_, err = js.UpdateStream(ctx, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("update stream %s: %w", declStream, err)
		}
	}
	return js.KeyValue(ctx, DeclarationsBucket)
}

// reportsPerSubject is the per-node limit to give the reports stream:
// reportsPerNode, or more if the stream already holds more reports of one
// node (it was made before the limit): a stream lowers its per-subject
// limit by deleting the oldest messages, which would lose reports. The
// next start, once they are recorded, lowers it to reportsPerNode.
func reportsPerSubject(ctx context.Context, js jetstream.JetStream) (int64, error) {
	st, err := js.Stream(ctx, ReportsStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return reportsPerNode, nil
	}
	if err != nil {
		return 0, err
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxMsgsPerSubject > 0 && cfg.MaxMsgsPerSubject <= reportsPerNode {
		return reportsPerNode, nil // set before: no subject holds more
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(ReportSubjectPrefix+">"))
	if err != nil {
		return 0, err
	}
	most := uint64(reportsPerNode)
	for _, n := range info.State.Subjects {
		most = max(most, n)
	}
	return int64(most), nil
}

// Close closes the connection.
func (c *ControllerConn) Close() { c.nc.Close() }

// PutDeclaration makes d its node's latest declaration, and returns its
// revision in the bucket, encoded for its node (encodeFor: without the
// roster, gzipped, to a node that holds one; whole otherwise). The roster a
// declaration names is put first as the shared roster value (PutRoster),
// once per revision, and a failure to put it fails the declaration's put.
func (c *ControllerConn) PutDeclaration(ctx context.Context, d declaration.Declaration) (uint64, error) {
	if err := ValidNode(d.Node); err != nil {
		return 0, fmt.Errorf("bus: put declaration %s: %w", d.ID, err)
	}
	if err := rosterErr(c.ensureRosters(ctx, []declaration.Declaration{d}), d); err != nil {
		return 0, fmt.Errorf("bus: put declaration %s: %w", d.ID, err)
	}
	b, err := c.encodeFor(d)
	if err != nil {
		return 0, fmt.Errorf("bus: put declaration %s: %w", d.ID, err)
	}
	rev, err := c.kv.Put(ctx, d.Node, b)
	if err != nil {
		return 0, fmt.Errorf("bus: put declaration %s: %w", d.ID, err)
	}
	return rev, nil
}

// putAckWait bounds the wait for a batch's acknowledgements (ctx may bound
// it sooner): twice the JetStream client's default for one put (5s), since
// a window of puts is acknowledged in turn. An unanswered put (the bus
// went away after the publish) fails then.
const putAckWait = 10 * time.Second

// putWindow bounds a batch's puts awaiting their acknowledgement, well
// under the JetStream client's own bound on pending asynchronous publishes
// (4,000 by default; past it a publish stalls, then fails).
const putWindow = 1024

// PutDeclarations makes each of ds its node's latest declaration,
// pipelined: up to putWindow puts are published before any of their
// acknowledgements is awaited, so a batch costs about one round trip a
// window, not one a declaration; every put not acknowledged within
// putAckWait fails. It returns each put's error in the order
// of ds (nil: acknowledged by the bucket's stream), or nil when every put
// was acknowledged. The rosters they name are put first, once each, as
// PutDeclaration puts them; a declaration whose roster could not be put is
// not put, and fails with that error.
func (c *ControllerConn) PutDeclarations(ctx context.Context, ds []declaration.Declaration) []error {
	rosters := c.ensureRosters(ctx, ds)
	wait, cancel := context.WithTimeout(ctx, putAckWait)
	defer cancel()
	errs := make([]error, len(ds))
	failed := false
	fail := func(i int, err error) {
		errs[i], failed = fmt.Errorf("bus: put declaration %s: %w", ds[i].ID, err), true
	}
	futures := make([]jetstream.PubAckFuture, len(ds))
	await := func(i int) {
		if futures[i] == nil {
			return
		}
		select {
		case <-futures[i].Ok():
		case err := <-futures[i].Err():
			fail(i, err)
		case <-wait.Done():
			fail(i, fmt.Errorf("no acknowledgement: %w", wait.Err()))
		}
	}
	for i, d := range ds {
		if i >= putWindow {
			await(i - putWindow)
		}
		if err := rosterErr(rosters, d); err != nil {
			fail(i, err)
			continue
		}
		if err := c.publishAsync(ctx, d, &futures[i]); err != nil {
			fail(i, err)
		}
	}
	for i := max(len(ds)-putWindow, 0); i < len(ds); i++ {
		await(i)
	}
	if !failed {
		return nil
	}
	return errs
}

// publishAsync publishes d under its node's key without awaiting the
// acknowledgement, whose future it leaves in f.
func (c *ControllerConn) publishAsync(ctx context.Context, d declaration.Declaration, f *jetstream.PubAckFuture) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidNode(d.Node); err != nil {
		return err
	}
	b, err := c.encodeFor(d)
	if err != nil {
		return err
	}
	*f, err = c.js.PublishMsgAsync(&nats.Msg{Subject: DeclarationSubject(d.Node), Data: b})
	return err
}

// Handler records one report. It returns nil once the report is recorded
// (then it is acknowledged), an error wrapping ErrRejected if it never can
// be (then it is terminated), and any other error to have it redelivered.
// It must be idempotent per ApplyID: a report may come again.
type Handler func(ctx context.Context, r Report) error

// ConsumerStats counts what the report consumer did.
type ConsumerStats struct {
	Recorded uint64 // acknowledged after the handler recorded them
	Retried  uint64 // the handler failed; redelivered later
	Refused  uint64 // did not decode, too large, or came on another node's subject: terminated
	Rejected uint64 // the handler rejected them (ErrRejected): terminated
	Deferred uint64 // over their node's rate limit: given back to the bus until their turn
}

// Refused is a report message the consumer refused as it decoded it.
type Refused struct {
	Node   string // the subject's node
	Reason string // events.RefusedTooLarge, RefusedMalformed or RefusedWrongNode
	Err    error  // what was wrong (a *BadReportError)
	Size   int    // of the message's bytes
	Digest string // of the message's bytes (Digest)
}

// ConsumeOption configures ConsumeReports.
type ConsumeOption func(*Consumer)

// WithRefused has fn told of each message the consumer refuses as it
// decodes it, before the message is terminated (the controller records it
// as report.refused). An error from fn means "not now": the message is
// redelivered, and refused again then.
func WithRefused(fn func(ctx context.Context, r Refused) error) ConsumeOption {
	return func(k *Consumer) { k.onRefused = fn }
}

// WithRateLimit sets each node's rate limit (see RateLimit; the defaults
// otherwise). Rate rate.Inf turns it off.
func WithRateLimit(l RateLimit) ConsumeOption {
	return func(k *Consumer) { k.limit = newThrottle(l) }
}

// WithThrottled has fn told, once every RateLimit.Every per node, of the
// reports deferred by the node's rate limit (they are logged too). It runs
// on the consumer's summary goroutine.
func WithThrottled(fn func(ctx context.Context, t Throttled)) ConsumeOption {
	return func(k *Consumer) { k.onThrottled = fn }
}

// Consumer is the controller's consumption of reports.
type Consumer struct {
	cc  jetstream.ConsumeContext
	log *slog.Logger
	// queues feed the workers when there are several (ReportWorkers), one
	// per worker; a node's reports go to queues[hash(subject) % len].
	queues  []chan jetstream.Msg
	workers sync.WaitGroup

	limit       *throttle
	onRefused   func(context.Context, Refused) error
	onThrottled func(context.Context, Throttled)
	stopSay     chan struct{}
	sayOnce     sync.Once
	said        sync.WaitGroup

	recorded, retried, refused, rejected, deferred atomic.Uint64
}

// ConsumeReports hands every report to h, one at a time in stream order (a
// redelivered one comes again later; with ReportWorkers above 1, one at a
// time per worker, each node's in stream order),
// through the durable consumer ReportsConsumer: a report is acknowledged
// only after h recorded it, so a controller that stops in between gets it
// again. A message that is not a report of the node whose subject it came on
// (too large, not decoding, another node's) is refused: told to the
// WithRefused callback, logged once with the node and the reason, counted,
// terminated (never redelivered); the consumer goes on. So is a report h
// rejects (ErrRejected).
//
// Each node's reports are rate-limited (WithRateLimit; DefaultReportRate,
// DefaultReportBurst): one over its node's limit is not decoded nor queued,
// but given back to the bus until its turn (see throttle), and what was
// deferred is logged once a minute per node and told to the WithThrottled
// callback. It runs until Stop (or the connection closes); ctx is what h
// and the callbacks get.
func (c *ControllerConn) ConsumeReports(ctx context.Context, h Handler, opts ...ConsumeOption) (*Consumer, error) {
	cons, err := c.js.CreateOrUpdateConsumer(ctx, ReportsStream, jetstream.ConsumerConfig{
		Durable:       ReportsConsumer,
		Description:   "meshplane controller: records apply reports",
		FilterSubject: ReportSubjectPrefix + ">",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s: %w", ReportsConsumer, err)
	}
	k := &Consumer{log: c.log, stopSay: make(chan struct{})}
	for _, o := range opts {
		o(k)
	}
	if k.limit == nil {
		k.limit = newThrottle(RateLimit{})
	}
	dispatch := func(m jetstream.Msg) { k.handleSafely(ctx, h, m) }
	if c.workers > 1 {
		k.queues = make([]chan jetstream.Msg, c.workers)
		for i := range k.queues {
			q := make(chan jetstream.Msg, 64)
			k.queues[i] = q
			k.workers.Go(func() {
				for m := range q {
					k.handleSafely(ctx, h, m)
				}
			})
		}
		queues := k.queues
		dispatch = func(m jetstream.Msg) {
			f := fnv.New32a()
			f.Write([]byte(m.Subject()))
			queues[f.Sum32()%uint32(len(queues))] <- m
		}
	}
	deliver := func(m jetstream.Msg) {
		if k.holdBack(m) {
			return
		}
		dispatch(m)
	}
	k.said.Go(func() { k.sayThrottled(ctx) })
	cc, err := cons.Consume(deliver, jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			c.log.Warn("bus: report consumer", "err", err)
		}))
	if err != nil {
		k.closeQueues()
		k.stopSaying()
		k.said.Wait()
		return nil, fmt.Errorf("bus: consume %s: %w", ReportsStream, err)
	}
	k.cc = cc
	return k, nil
}

// holdBack gives m back to the bus, with a delay, if its node is over its
// rate limit, and says so. It runs on the consumer's delivery goroutine,
// before m is decoded or queued: O(1).
func (k *Consumer) holdBack(m jetstream.Msg) bool {
	md, err := m.Metadata()
	if err != nil {
		return false
	}
	wait, fresh := k.limit.admit(m.Subject(), md.Sequence.Stream, time.Now())
	if wait <= 0 {
		return false
	}
	if fresh {
		k.deferred.Add(1)
	}
	k.settle(m.NakWithDelay(wait), md.Sequence.Stream)
	return true
}

// sayThrottled says, every RateLimit.Every, what each node had deferred.
func (k *Consumer) sayThrottled(ctx context.Context) {
	t := time.NewTicker(k.limit.every)
	defer t.Stop()
	say := func(th Throttled) {
		if k.onThrottled != nil {
			k.onThrottled(ctx, th)
		}
	}
	for {
		select {
		case <-k.stopSay:
			k.limit.say(k.log, time.Now(), say) // what the last window deferred
			return
		case now := <-t.C:
			k.limit.say(k.log, now, say)
		}
	}
}

func (k *Consumer) handle(ctx context.Context, h Handler, m jetstream.Msg) {
	var seq uint64
	var delivered uint64 = 1
	if md, err := m.Metadata(); err == nil {
		seq, delivered = md.Sequence.Stream, md.NumDelivered
	}
	r, err := DecodeReport(m.Subject(), m.Data())
	if err != nil {
		node, _ := strings.CutPrefix(m.Subject(), ReportSubjectPrefix)
		ref := Refused{Node: node, Reason: ReasonOf(err), Err: err, Size: len(m.Data()), Digest: Digest(m.Data())}
		if ref.Reason == "" {
			ref.Reason = events.RefusedMalformed
		}
		if k.onRefused != nil {
			if rerr := k.onRefused(ctx, ref); rerr != nil {
				k.retried.Add(1)
				delay := retryDelay(delivered)
				k.log.Warn("bus: report refused, and its refusal not recorded; redelivering", "node", node, "seq", seq, "in", delay, "reason", ref.Reason, "err", rerr)
				k.settle(m.NakWithDelay(delay), seq)
				return
			}
		}
		k.refused.Add(1)
		k.log.Error("bus: report refused", "node", node, "seq", seq, "reason", ref.Reason, "size", ref.Size, "digest", ref.Digest, "err", err)
		k.settle(m.TermWithReason(truncate(err.Error(), 200)), seq)
		return
	}
	err = h(ctx, r)
	switch {
	case err == nil:
		k.recorded.Add(1)
		k.settle(m.Ack(), seq)
	case errors.Is(err, ErrRejected):
		k.rejected.Add(1)
		k.log.Error("bus: report refused", "node", r.Node, "apply", r.ApplyID, "seq", seq, "reason", ReasonOf(err), "size", r.Size, "digest", r.Digest, "err", err)
		k.settle(m.TermWithReason(truncate(err.Error(), 200)), seq)
	default:
		k.retried.Add(1)
		delay := retryDelay(delivered)
		k.log.Warn("bus: report not recorded; redelivering", "node", r.Node, "apply", r.ApplyID, "seq", seq, "in", delay, "err", err)
		k.settle(m.NakWithDelay(delay), seq)
	}
}

func (k *Consumer) settle(err error, seq uint64) {
	if err != nil {
		// The report comes again after ackWait; the handler is idempotent.
		k.log.Warn("bus: report acknowledgement not sent", "seq", seq, "err", err)
	}
}

// retryDelay backs off from 1s, doubling per delivery, to at most a minute.
func retryDelay(delivered uint64) time.Duration {
	d := time.Second
	for i := uint64(1); i < delivered && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Stats returns the counts so far.
func (k *Consumer) Stats() ConsumerStats {
	return ConsumerStats{
		Recorded: k.recorded.Load(), Retried: k.retried.Load(),
		Refused: k.refused.Load(), Rejected: k.rejected.Load(), Deferred: k.deferred.Load(),
	}
}

// Refused counts the messages refused so far as they were decoded (too
// large, did not decode, or came on another node's subject).
func (k *Consumer) Refused() uint64 { return k.refused.Load() }

// Stop stops taking reports: the ones already handed out are handled first,
// then what the rate limit deferred since its last summary is said, then it
// returns (or when ctx is done).
func (k *Consumer) Stop(ctx context.Context) error {
	k.cc.Drain()
	select {
	case <-k.cc.Closed():
	case <-ctx.Done():
		k.cc.Stop()
		k.stopSaying()
		return fmt.Errorf("bus: stop consumer: %w", ctx.Err())
	}
	k.closeQueues()
	done := make(chan struct{})
	go func() { k.workers.Wait(); k.stopSaying(); k.said.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bus: stop consumer: %w", ctx.Err())
	}
}

// stopSaying ends the summaries of deferred reports (once).
func (k *Consumer) stopSaying() { k.sayOnce.Do(func() { close(k.stopSay) }) }

// closeQueues ends the workers once they have handled what is queued.
func (k *Consumer) closeQueues() {
	for _, q := range k.queues {
		close(q)
	}
	k.queues = nil
}

// ConsumerInfo returns the state of the reports consumer (ReportsConsumer):
// the reports not yet handed out, those handed out and not acknowledged,
// those redelivered and not yet acknowledged.
func (c *ControllerConn) ConsumerInfo(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	cons, err := c.js.Consumer(ctx, ReportsStream, ReportsConsumer)
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s: %w", ReportsConsumer, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: consumer %s: %w", ReportsConsumer, err)
	}
	return info, nil
}

// Declaration returns node's latest declaration in the bucket and its
// revision, or ErrNoDeclaration: what a controller that restarted compares
// a newly composed declaration with, to push only one that changed.
func (c *ControllerConn) Declaration(ctx context.Context, node string) (declaration.Declaration, uint64, error) {
	if err := ValidNode(node); err != nil {
		return declaration.Declaration{}, 0, err
	}
	e, err := c.kv.Get(ctx, node)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: declaration of %s: %w", node, ErrNoDeclaration)
	}
	if err != nil {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: declaration of %s: %w", node, err)
	}
	d, err := decodeDeclaration(node, e.Value())
	if err != nil {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: declaration of %s: revision %d: %w", node, e.Revision(), err)
	}
	return d, e.Revision(), nil
}
