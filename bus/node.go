package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/declaration"
	"meshplane/internal/gz"
	"meshplane/internal/safego"
)

// ErrNoDeclaration means no declaration was ever put for the node.
var ErrNoDeclaration = errors.New("bus: no declaration for the node yet")

// NodeOptions tune a node's connection; the zero value is fine.
type NodeOptions struct {
	Logger *slog.Logger // nil discards
	// WaitForBus makes DialNode try again, every RetryEvery, while no server
	// answers (an agent started before its controller) or the server is too
	// busy to finish the handshake (transientDial), until ctx is done.
	// Refused credentials fail at once either way.
	WaitForBus bool
	RetryEvery time.Duration // 0 means 1s
	// Resync is how often a watch reads its key's latest value besides
	// hearing each new one (Node.Watch); 0 means DefaultResync.
	Resync time.Duration

	inProcess nats.InProcessConnProvider // tests: connect without a socket
}

// Node is an agent's connection to the bus, as one node: it reads and
// watches that node's declaration and publishes its reports. It can do
// nothing else (NodePermissions).
type Node struct {
	node string
	nc   *nats.Conn
	js   jetstream.JetStream
	log  *slog.Logger

	mu      sync.Mutex
	watches map[kicker]struct{} // told when the connection comes back
	closed  chan struct{}       // closed with the connection
	resync  time.Duration

	// subOK says the node's user may subscribe to its key's republish
	// subject (users minted by older builds may not: their watches poll).
	subOK bool

	// rosterOK says the node's user may read the shared roster value
	// (rosterPermitted: users minted before it existed may not); held is
	// the newest roster revision it read, which its heartbeats carry.
	rosterOK bool
	held     atomic.Uint64
}

// DialNode connects to the bus with a node's credentials.
func DialNode(ctx context.Context, c Creds, o NodeOptions) (*Node, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{node: c.Node, log: log.With("node", c.Node), watches: map[kicker]struct{}{}, closed: make(chan struct{}),
		rosterOK: rosterPermitted(c.JWT), subOK: republishPermitted(c.JWT, c.Node), resync: o.Resync}
	if n.resync <= 0 {
		n.resync = DefaultResync
	}
	var closeOnce sync.Once
	every := o.RetryEvery
	if every <= 0 {
		every = time.Second
	}
	var nc *nats.Conn
	for {
		var err error
		nc, err = dial(dialConfig{
			name: "agent:" + c.Node, urls: c.URLs, user: c.User(), ca: []byte(c.CA),
			inbox: NodeInbox(c.Node), logger: log, reconnected: n.reconnected, noBuffer: true, inProcess: o.inProcess,
			closed: func() { closeOnce.Do(func() { close(n.closed) }) },
		})
		if err == nil {
			log.Info("bus: connected", "conn", "agent:"+c.Node, "url", nc.ConnectedUrlRedacted())
			break
		}
		if !o.WaitForBus || !transientDial(err) {
			return nil, err
		}
		log.Info("bus: no server answers yet; trying again", "node", c.Node, "in", every, "err", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up waiting: %w)", err, ctx.Err())
		case <-time.After(every):
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bus: node %s: %w", c.Node, err)
	}
	n.nc, n.js = nc, js
	return n, nil
}

// transientDial says a first connection failed for want of a server's
// answer in time, not for what it is: no server listens yet, or one too
// busy to finish the handshake (thousands of agents connecting at once:
// "Authentication Timeout", or its first PING before the PONG the client
// waits for). Refused credentials and a bad certificate are not.
func transientDial(err error) bool {
	if errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "authentication timeout") || strings.Contains(s, "expected 'pong'")
}

// reconnected tells every watch that the connection came back: values
// republished while it was away were not delivered, so each watch reads its
// key anew.
func (n *Node) reconnected() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for w := range n.watches {
		select {
		case w.kicked() <- struct{}{}:
		default:
		}
	}
}

// kicker is a watch, told when the connection comes back.
type kicker interface{ kicked() chan struct{} }

// Name is the node this connection is for.
func (n *Node) Name() string { return n.node }

// Close closes the connection.
func (n *Node) Close() { n.nc.Close() }

// Latest returns the node's latest declaration and its revision in the
// bucket, or ErrNoDeclaration.
func (n *Node) Latest(ctx context.Context) (declaration.Declaration, uint64, error) {
	m, err := n.directGet(ctx, n.node)
	if errors.Is(err, errNoValue) {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: node %s: %w", n.node, ErrNoDeclaration)
	}
	if err != nil {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: node %s: get declaration: %w", n.node, err)
	}
	rev, _ := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if op := m.Header.Get(kvOperationHeader); op != "" && op != "PUT" {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: node %s: deleted at revision %d: %w", n.node, rev, ErrNoDeclaration)
	}
	d, err := decodeDeclaration(n.node, m.Data)
	if err != nil {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: node %s: revision %d: %w", n.node, rev, err)
	}
	return d, rev, nil
}

// ErrBadDeclaration means a value in the bucket is not a declaration for
// the node whose key it is under.
var ErrBadDeclaration = errors.New("bus: bad declaration")

// maxDeclarationJSON bounds a gzipped declaration once gunzipped
// (Controller.encodeFor): a value that inflates beyond it is refused, never
// read into memory whole.
const maxDeclarationJSON = 64 << 20

// decodeDeclaration decodes a value of node's key: the JSON of a
// declaration, or that JSON gzipped (what the controller puts for a node
// that holds a roster).
func decodeDeclaration(node string, b []byte) (declaration.Declaration, error) {
	if gz.Compressed(b) {
		raw, err := gz.Decompress(b, maxDeclarationJSON)
		if err != nil {
			return declaration.Declaration{}, fmt.Errorf("%w: %w", ErrBadDeclaration, err)
		}
		b = raw
	}
	var d declaration.Declaration
	if err := json.Unmarshal(b, &d); err != nil {
		return declaration.Declaration{}, fmt.Errorf("%w: %v", ErrBadDeclaration, err)
	}
	if d.Node != node {
		return declaration.Declaration{}, fmt.Errorf("%w: it is for node %q", ErrBadDeclaration, d.Node)
	}
	return d, nil
}

// Watch is a watch of a node's declaration key.
type Watch = keyWatch[declaration.Declaration]

// RosterWatch is a watch of the mesh's roster value (RosterKey).
type RosterWatch = keyWatch[declaration.Roster]

// keyWatch is a watch of one key of DeclarationsBucket, each value decoded
// by decode: a core NATS subscription on the key's republish subject
// (RepublishSubject), and a direct get of the key's latest value at start,
// when the connection comes back and every resync. No JetStream consumer.
type keyWatch[T any] struct {
	n       *Node
	key     string
	what    string // "declaration", "roster": for the log
	decode  func([]byte) (T, error)
	out     chan T
	kick    chan struct{} // the connection came back: read the key anew
	done    chan struct{}
	stop    sync.Once
	refused atomic.Uint64
	seen    atomic.Uint64 // the newest sequence the watch has handled

	mu    sync.Mutex
	last  uint64 // the newest sequence handled; older values are ignored
	ended bool   // out is closed: the subscription's late deliveries are dropped
	sub   *nats.Subscription
}

// Watch watches the node's declaration: Updates yields the latest
// declaration now (if one was ever put; so an agent that was away gets it on
// return) and then each new one. It keeps only the latest: an agent busy
// applying finds the newest waiting, not a queue of stale ones. A value that
// does not decode, or is for another node, is logged, counted (Refused) and
// skipped. The watch survives the bus going away and coming back: it reads
// its key anew on reconnection and yields what it has not seen. It ends
// when ctx is done, Stop is called or the Node is closed; then Updates is
// closed.
//
// Each new value reaches the watch as the bucket's stream republishes it
// (declRepublish), on a core NATS subscription to mesh.decl.<node>: the
// server keeps no consumer for it, so any number of agents watch one
// bucket. A value republished while the connection was away is not
// redelivered: the watch reads the key's latest value by direct get at its
// start, on every reconnection and every NodeOptions.Resync, and yields a
// value only if its stream sequence is newer than the last one handled. A
// user minted by an older build may not subscribe to mesh.decl.<node>: its
// watch reads by direct get alone, every legacyPoll.
func (n *Node) Watch(ctx context.Context) (*Watch, error) {
	return startWatch(ctx, n, n.node, "declaration", func(b []byte) (declaration.Declaration, error) {
		return decodeDeclaration(n.node, b)
	})
}

// watchStart bounds one direct get of a watched key: one that no server
// answers (the stream between leaders, just after its server stopped) is
// given up and tried again after rewatchDelay.
const watchStart = 10 * time.Second

// legacyPoll is how often the watch of a node whose user may not subscribe
// to its republish subject (minted by an older build) reads its key.
const legacyPoll = 5 * time.Second

// DefaultResync is how often a watch reads its key's latest value although
// the subscription is there (NodeOptions.Resync): a republished value the
// connection lost without a reconnection (the server dropped it from a slow
// client) is found by then.
const DefaultResync = time.Minute

func startWatch[T any](ctx context.Context, n *Node, key, what string, decode func([]byte) (T, error)) (*keyWatch[T], error) {
	w := &keyWatch[T]{n: n, key: key, what: what, decode: decode, out: make(chan T, 1), kick: make(chan struct{}, 1), done: make(chan struct{})}
	if n.subOK {
		// Subscribed before the first get: a value stored between the two
		// comes by both, and the newer sequence wins.
		sub, err := n.nc.Subscribe(RepublishSubject(key), w.heard)
		if err != nil {
			return nil, fmt.Errorf("bus: node %s: watch %s: %w", n.node, what, err)
		}
		w.sub = sub
	}
	if err := w.fetch(ctx); err != nil {
		w.end()
		return nil, err
	}
	n.mu.Lock()
	n.watches[w] = struct{}{}
	n.mu.Unlock()
	go w.run(ctx)
	return w, nil
}

// Updates yields the values; it is closed when the watch ends.
func (w *keyWatch[T]) Updates() <-chan T { return w.out }

// Refused counts the values that did not decode (or were for another node).
func (w *keyWatch[T]) Refused() uint64 { return w.refused.Load() }

// Stop ends the watch.
func (w *keyWatch[T]) Stop() {
	w.stop.Do(func() { close(w.done) })
}

func (w *keyWatch[T]) kicked() chan struct{} { return w.kick }

// rewatchDelay is how long a watch whose read of its key failed waits
// before the next try.
const rewatchDelay = time.Second

// end unsubscribes and closes out; a delivery after it is dropped.
func (w *keyWatch[T]) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended = true
	if w.sub != nil {
		if err := w.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
			w.n.log.Debug("bus: stop watch", "of", w.what, "err", err)
		}
	}
	close(w.out)
}

func (w *keyWatch[T]) run(ctx context.Context) {
	log := w.n.log
	defer w.end()
	defer func() {
		w.n.mu.Lock()
		delete(w.n.watches, w)
		w.n.mu.Unlock()
	}()
	// Last deferred, first run: a panic stops the process before the
	// closed Updates tell the agent its source ended.
	defer safego.Catch("bus.watch", log)
	every := w.n.resync
	if w.sub == nil {
		every = min(every, legacyPoll)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var retry <-chan time.Time
	read := func() {
		retry = nil
		if !w.n.nc.IsConnected() {
			return // reconnected kicks the watch, which reads then
		}
		if err := w.fetch(ctx); err != nil {
			if ctx.Err() != nil || w.n.nc.IsClosed() {
				return
			}
			log.Warn("bus: latest value not read; trying again", "of", w.what, "in", rewatchDelay, "err", err)
			retry = time.After(rewatchDelay)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.done:
			return
		case <-w.n.closed:
			return
		case <-w.kick:
			read()
		case <-retry:
			read()
		case <-tick.C:
			read()
		}
	}
}

// fetch reads the key's latest value by direct get and handles it if it is
// newer than what the watch handled. No value yet is no error.
func (w *keyWatch[T]) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, watchStart)
	defer cancel()
	m, err := w.n.directGet(ctx, w.key)
	if errors.Is(err, errNoValue) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bus: node %s: watch %s: %w", w.n.node, w.what, err)
	}
	w.offer(m)
	return nil
}

// heard is the subscription's handler: a value republished by the stream.
func (w *keyWatch[T]) heard(m *nats.Msg) {
	defer safego.Catch("bus.watch", w.n.log)
	w.offer(m)
}

// offer handles m (a direct get's answer or a republished value), unless
// the watch handled a newer one or has ended.
func (w *keyWatch[T]) offer(m *nats.Msg) {
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil || seq == 0 {
		w.n.log.Warn("bus: value without its stream sequence ignored", "of", w.what, "subject", m.Subject)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended || seq <= w.last {
		return
	}
	w.last = seq
	w.handle(seq, m)
	w.seen.Store(seq) // handled: offered, or skipped with its reason
}

// handle offers the value of m on w.out, keeping only the latest (one not
// yet taken is replaced), or logs why it is skipped. Called with w.mu
// held, the only sender on w.out.
func (w *keyWatch[T]) handle(seq uint64, m *nats.Msg) {
	if op := m.Header.Get(kvOperationHeader); op != "" && op != "PUT" {
		w.n.log.Warn("bus: key deleted; keeping the last value", "of", w.what, "revision", seq)
		return
	}
	v, err := w.decode(m.Data)
	if err != nil {
		w.refused.Add(1)
		w.n.log.Error("bus: value refused", "of", w.what, "revision", seq, "err", err)
		return
	}
	select {
	case w.out <- v:
	default:
		select {
		case <-w.out:
		default:
		}
		w.out <- v
	}
}

// kvOperationHeader says what a KV message is: absent for a put, DEL or
// PURGE for a delete.
const kvOperationHeader = "KV-Operation"

// errNoValue means a direct get found no value under the key.
var errNoValue = errors.New("bus: no value under the key")

// directGet reads the latest message of key in DeclarationsBucket with a
// direct get (the only read a node's user may make: its own key's and the
// roster's). The answer carries the value, its stream sequence
// (Nats-Sequence) and the KV operation; errNoValue if there is none.
func (n *Node) directGet(ctx context.Context, key string) (*nats.Msg, error) {
	m, err := n.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+declStream+"."+declPrefix+key, nil)
	if err != nil {
		return nil, fmt.Errorf("direct get of %s: %w", key, err)
	}
	switch st := m.Header.Get("Status"); st {
	case "":
		return m, nil
	case "404":
		return nil, errNoValue
	default:
		return nil, fmt.Errorf("direct get of %s: status %s %s", key, st, m.Header.Get("Description"))
	}
}

// PublishReport publishes one of the node's reports and waits for the
// stream to store it, with its apply id as the message id: a report sent
// again (its acknowledgement was lost) is dropped by the stream, and
// duplicate says so. An error means the report may not be stored: keep it
// and send it again.
func (n *Node) PublishReport(ctx context.Context, r Report) (duplicate bool, err error) {
	if r.Node != n.node {
		return false, fmt.Errorf("%w: node %s cannot send node %q's report", ErrBadReport, n.node, r.Node)
	}
	b, err := EncodeReport(r)
	if err != nil {
		return false, err
	}
	ack, err := n.js.Publish(ctx, ReportSubject(n.node), b,
		jetstream.WithMsgID(r.ApplyID.String()), jetstream.WithExpectStream(ReportsStream))
	if err != nil {
		return false, fmt.Errorf("bus: node %s: publish report %s: %w", n.node, r.ApplyID, err)
	}
	return ack.Duplicate, nil
}
