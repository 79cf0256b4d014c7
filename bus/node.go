package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
	// answers (an agent started before its controller), until ctx is done.
	// Refused credentials fail at once either way.
	WaitForBus bool
	RetryEvery time.Duration // 0 means 1s
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
	n := &Node{node: c.Node, log: log.With("node", c.Node), watches: map[kicker]struct{}{}, rosterOK: rosterPermitted(c.JWT)}
	every := o.RetryEvery
	if every <= 0 {
		every = time.Second
	}
	var nc *nats.Conn
	for {
		var err error
		nc, err = dial(dialConfig{
			name: "agent:" + c.Node, urls: c.URLs, user: c.User(), ca: []byte(c.CA),
			inbox: NodeInbox(c.Node), logger: log, reconnected: n.reconnected, noBuffer: true,
		})
		if err == nil {
			log.Info("bus: connected", "conn", "agent:"+c.Node, "url", nc.ConnectedUrlRedacted())
			break
		}
		if !o.WaitForBus || !errors.Is(err, nats.ErrNoServers) {
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

// reconnected tells every watch that the connection came back: the bus may
// have restarted and lost the watch's consumer (it is in memory), and
// waiting for the client to notice missing heartbeats takes tens of seconds.
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

func (n *Node) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := n.js.KeyValue(ctx, DeclarationsBucket)
	if err != nil {
		return nil, fmt.Errorf("bus: node %s: bucket %s: %w", n.node, DeclarationsBucket, err)
	}
	return kv, nil
}

// Latest returns the node's latest declaration and its revision in the
// bucket, or ErrNoDeclaration.
func (n *Node) Latest(ctx context.Context) (declaration.Declaration, uint64, error) {
	kv, err := n.bucket(ctx)
	if err != nil {
		return declaration.Declaration{}, 0, err
	}
	e, err := kv.Get(ctx, n.node)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: node %s: %w", n.node, ErrNoDeclaration)
	}
	if err != nil {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: node %s: get declaration: %w", n.node, err)
	}
	d, err := decodeDeclaration(n.node, e.Value())
	if err != nil {
		return declaration.Declaration{}, 0, fmt.Errorf("bus: node %s: revision %d: %w", n.node, e.Revision(), err)
	}
	return d, e.Revision(), nil
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
// by decode.
type keyWatch[T any] struct {
	n       *Node
	key     string
	what    string // "declaration", "roster": for the log
	decode  func([]byte) (T, error)
	out     chan T
	kick    chan struct{} // the connection came back: watch anew
	done    chan struct{}
	stop    sync.Once
	refused atomic.Uint64
	seen    atomic.Uint64 // the newest revision the watch has handled
}

// Watch watches the node's declaration: Updates yields the latest
// declaration now (if one was ever put; so an agent that was away gets it on
// return) and then each new one. It keeps only the latest: an agent busy
// applying finds the newest waiting, not a queue of stale ones. A value that
// does not decode, or is for another node, is logged, counted (Refused) and
// skipped. The watch survives the bus going away and coming back: it watches
// anew on reconnection and yields what it has not seen. It ends when ctx is
// done, Stop is called or the Node is closed; then Updates is closed.
func (n *Node) Watch(ctx context.Context) (*Watch, error) {
	return startWatch(ctx, n, n.node, "declaration", func(b []byte) (declaration.Declaration, error) {
		return decodeDeclaration(n.node, b)
	})
}

func startWatch[T any](ctx context.Context, n *Node, key, what string, decode func([]byte) (T, error)) (*keyWatch[T], error) {
	kw, err := n.watchKey(ctx, key, what)
	if err != nil {
		return nil, err
	}
	w := &keyWatch[T]{n: n, key: key, what: what, decode: decode, out: make(chan T, 1), kick: make(chan struct{}, 1), done: make(chan struct{})}
	n.mu.Lock()
	n.watches[w] = struct{}{}
	n.mu.Unlock()
	go w.run(ctx, kw)
	return w, nil
}

// watchStart bounds one try at starting a watch. The watch's context
// lives as long as the watch and need not have a deadline, and JetStream
// waits on it for the answer to the requests that make the watch's
// consumer: one that no server answers (the stream between leaders, just
// after its server stopped) would hold the watch until that context ends,
// rather than letting it try again.
const watchStart = 10 * time.Second

// watchKey starts a watch of key. The watch's subscription ends with the
// context it was made under (the client unsubscribes when it is done), so
// that context is the watch's own, ended by its Stop, and a try that has
// not started within watchStart is abandoned by ending it.
func (n *Node) watchKey(ctx context.Context, key, what string) (jetstream.KeyWatcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	abandon := time.AfterFunc(watchStart, cancel)
	kw, err := n.tryWatch(ctx, key, what)
	if !abandon.Stop() { // abandoned: ctx is done and the try with it
		cancel()
		if err == nil {
			_ = kw.Stop()
		}
		return nil, fmt.Errorf("bus: node %s: watch %s: no answer within %v: %w", n.node, what, watchStart, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &ownWatch{KeyWatcher: kw, cancel: cancel}, nil
}

func (n *Node) tryWatch(ctx context.Context, key, what string) (jetstream.KeyWatcher, error) {
	kv, err := n.bucket(ctx)
	if err != nil {
		return nil, err
	}
	kw, err := kv.Watch(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("bus: node %s: watch %s: %w", n.node, what, err)
	}
	return kw, nil
}

// ownWatch is a JetStream watch with the context it lives under, ended
// with it.
type ownWatch struct {
	jetstream.KeyWatcher
	cancel context.CancelFunc
}

func (k *ownWatch) Stop() error {
	defer k.cancel()
	return k.KeyWatcher.Stop()
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

// rewatchDelay is how long a watch that could not start again waits before
// the next try.
const rewatchDelay = time.Second

func (w *keyWatch[T]) run(ctx context.Context, kw jetstream.KeyWatcher) {
	log := w.n.log
	defer close(w.out)
	defer func() {
		w.n.mu.Lock()
		delete(w.n.watches, w)
		w.n.mu.Unlock()
	}()
	drop := func() {
		if kw != nil {
			if err := kw.Stop(); err != nil {
				log.Debug("bus: stop watch", "of", w.what, "err", err)
			}
			kw = nil
		}
	}
	defer func() { drop() }()
	// Last deferred, first run: a panic stops the process before the
	// closed Updates tell the agent its source ended.
	defer safego.Catch("bus.watch", log)
	updates := kw.Updates()
	var retry <-chan time.Time
	// rewatch watches anew; false means the connection is closed: the end.
	rewatch := func() bool {
		drop()
		updates, retry = nil, nil
		nkw, err := w.n.watchKey(ctx, w.key, w.what)
		if err != nil && w.n.nc.IsClosed() {
			return false
		}
		if err != nil {
			log.Warn("bus: watch not restarted; trying again", "of", w.what, "in", rewatchDelay, "err", err)
			retry = time.After(rewatchDelay)
			return true
		}
		kw, updates = nkw, nkw.Updates()
		return true
	}
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.done:
			return
		case <-w.kick:
			if !rewatch() {
				return
			}
		case <-retry:
			if !rewatch() {
				return
			}
		case e, ok := <-updates:
			if !ok { // the subscription ended under us
				kw = nil
				if w.n.nc.IsClosed() {
					return
				}
				updates, retry = nil, time.After(rewatchDelay)
				continue
			}
			if e == nil || e.Revision() <= last { // nil: the initial values are done
				continue
			}
			last = e.Revision()
			w.handle(e)
			w.seen.Store(last) // handled: offered, or skipped with its reason
		}
	}
}

// handle offers the value of entry e on w.out, keeping only the latest (one
// not yet taken is replaced), or logs why it is skipped.
func (w *keyWatch[T]) handle(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		w.n.log.Warn("bus: key deleted; keeping the last value", "of", w.what, "revision", e.Revision())
		return
	}
	v, err := w.decode(e.Value())
	if err != nil {
		w.refused.Add(1)
		w.n.log.Error("bus: value refused", "of", w.what, "revision", e.Revision(), "err", err)
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
