package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/declaration"
)

// ErrRejected is what a report Handler wraps to say a report can never be
// recorded (its node is unknown, it is invalid): the message is terminated,
// not redelivered, and counted. Any other error from a Handler means "not
// now": the message is redelivered later.
var ErrRejected = errors.New("bus: report rejected")

// Reject wraps err so that the consumer terminates the report (ErrRejected).
func Reject(err error) error { return fmt.Errorf("%w: %w", ErrRejected, err) }

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
	// ackWait is how long a handler has before a report is redelivered.
	ackWait = 30 * time.Second
	// maxAckPending bounds the reports handed out and not yet acknowledged.
	maxAckPending = 4096
)

// ControllerConfig is how the controller reaches the bus. Server.Controller
// fills it for the embedded bus; with --nats it comes from the operator.
type ControllerConfig struct {
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

// Controller is the controller's connection to the bus: it puts
// declarations and consumes reports.
type Controller struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	log     *slog.Logger
	workers int
}

// DialController connects, and makes the declarations bucket and the reports
// stream if they are not there (or brings their settings up to date).
func DialController(ctx context.Context, cfg ControllerConfig) (*Controller, error) {
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

func setup(ctx context.Context, nc *nats.Conn, cfg ControllerConfig, log *slog.Logger) (*Controller, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("bus: controller: %w", err)
	}
	replicas := max(cfg.Replicas, 1)
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       DeclarationsBucket,
		Description:  "meshplane: the latest declaration of each node, under the node's name",
		History:      1,
		MaxValueSize: maxPayload - 64<<10, // room for the headers
		Storage:      jetstream.FileStorage,
		Replicas:     replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("bus: controller: bucket %s: %w", DeclarationsBucket, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        ReportsStream,
		Description: "meshplane: apply reports, mesh.report.<node>, deduplicated by apply id",
		Subjects:    []string{ReportSubjectPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardNew,
		MaxBytes:    reportsMaxBytes,
		Duplicates:  duplicateWindow,
		Replicas:    replicas,
	}); err != nil {
		return nil, fmt.Errorf("bus: controller: stream %s: %w", ReportsStream, err)
	}
	return &Controller{nc: nc, js: js, kv: kv, log: log, workers: max(cfg.ReportWorkers, 1)}, nil
}

// Close closes the connection.
func (c *Controller) Close() { c.nc.Close() }

// PutDeclaration makes d its node's latest declaration, and returns its
// revision in the bucket.
func (c *Controller) PutDeclaration(ctx context.Context, d declaration.Declaration) (uint64, error) {
	if err := ValidNode(d.Node); err != nil {
		return 0, fmt.Errorf("bus: put declaration %s: %w", d.ID, err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return 0, fmt.Errorf("bus: put declaration %s: %w", d.ID, err)
	}
	rev, err := c.kv.Put(ctx, d.Node, b)
	if err != nil {
		return 0, fmt.Errorf("bus: put declaration %s: %w", d.ID, err)
	}
	return rev, nil
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
	Refused  uint64 // did not decode, or came on another node's subject
	Rejected uint64 // the handler rejected them (ErrRejected)
}

// Consumer is the controller's consumption of reports.
type Consumer struct {
	cc  jetstream.ConsumeContext
	log *slog.Logger
	// queues feed the workers when there are several (ReportWorkers), one
	// per worker; a node's reports go to queues[hash(subject) % len].
	queues  []chan jetstream.Msg
	workers sync.WaitGroup

	recorded, retried, refused, rejected atomic.Uint64
}

// ConsumeReports hands every report to h, one at a time in stream order (a
// redelivered one comes again later; with ReportWorkers above 1, one at a
// time per worker, each node's in stream order),
// through the durable consumer ReportsConsumer: a report is acknowledged
// only after h recorded it, so a controller that stops in between gets it
// again. A message that is not a report of the node whose subject it came on
// is refused: logged with the reason, counted, terminated; the consumer goes
// on. It runs until Stop (or the connection closes); ctx is what h gets.
func (c *Controller) ConsumeReports(ctx context.Context, h Handler) (*Consumer, error) {
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
	k := &Consumer{log: c.log}
	deliver := func(m jetstream.Msg) { k.handleSafely(ctx, h, m) }
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
		deliver = func(m jetstream.Msg) {
			f := fnv.New32a()
			f.Write([]byte(m.Subject()))
			queues[f.Sum32()%uint32(len(queues))] <- m
		}
	}
	cc, err := cons.Consume(deliver,
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			c.log.Warn("bus: report consumer", "err", err)
		}))
	if err != nil {
		k.closeQueues()
		return nil, fmt.Errorf("bus: consume %s: %w", ReportsStream, err)
	}
	k.cc = cc
	return k, nil
}

func (k *Consumer) handle(ctx context.Context, h Handler, m jetstream.Msg) {
	var seq uint64
	var delivered uint64 = 1
	if md, err := m.Metadata(); err == nil {
		seq, delivered = md.Sequence.Stream, md.NumDelivered
	}
	r, err := DecodeReport(m.Subject(), m.Data())
	if err != nil {
		k.refused.Add(1)
		k.log.Error("bus: report refused", "subject", m.Subject(), "seq", seq, "reason", err)
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
		k.log.Error("bus: report rejected", "node", r.Node, "apply", r.ApplyID, "seq", seq, "reason", err)
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
		Refused: k.refused.Load(), Rejected: k.rejected.Load(),
	}
}

// Refused counts the messages refused so far (did not decode, or came on
// another node's subject).
func (k *Consumer) Refused() uint64 { return k.refused.Load() }

// Stop stops taking reports: the ones already handed out are handled first,
// then it returns (or when ctx is done).
func (k *Consumer) Stop(ctx context.Context) error {
	k.cc.Drain()
	select {
	case <-k.cc.Closed():
	case <-ctx.Done():
		k.cc.Stop()
		return fmt.Errorf("bus: stop consumer: %w", ctx.Err())
	}
	k.closeQueues()
	done := make(chan struct{})
	go func() { k.workers.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bus: stop consumer: %w", ctx.Err())
	}
}

// closeQueues ends the workers once they have handled what is queued.
func (k *Consumer) closeQueues() {
	for _, q := range k.queues {
		close(q)
	}
	k.queues = nil
}

// Declaration returns node's latest declaration in the bucket and its
// revision, or ErrNoDeclaration: what a controller that restarted compares
// a newly composed declaration with, to push only one that changed.
func (c *Controller) Declaration(ctx context.Context, node string) (declaration.Declaration, uint64, error) {
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
