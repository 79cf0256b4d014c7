package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"meshplane/events"
	"meshplane/internal/safego"
)

// Heartbeats. An agent publishes one on mesh.heartbeat.<node> every
// DefaultHeartbeatEvery, on core NATS: nothing is stored, nothing is
// acknowledged, a heartbeat sent while the bus is away is lost (and meant
// to be). The controller keeps the last one it heard of each node in
// memory; only the transitions (a node going silent, coming back) are
// events (controller.Liveness).
//
// The wire form is JSON:
//
//	{"node": "n1", "at": "2026-12-02T10:00:00Z", "version": "0.20.0", "roster": 7}
//
// roster is the newest revision of the shared roster value the node read
// (Node.HeldRoster; absent: none, or an agent older than the shared
// roster). The controller sends declarations without their roster only to
// a node that said it holds one (ControllerConn.holdsRoster): an older agent
// would write an empty hosts file from such a declaration, and a node
// whose credentials predate the shared roster cannot read it.
// at is the agent's clock, for the log only: the controller stamps what it
// heard with its own. A node's user may publish on its own heartbeat
// subject alone (NodePermissions), so the subject says who sent it; a
// heartbeat whose node differs from its subject's, that does not decode
// strictly (a key given twice, or in another case: events.CheckKeys; an
// unknown key is let by, for a newer agent), or whose version is longer
// than MaxVersionLen or not printable ASCII, is ignored (logged, counted:
// HeartbeatStats.Ignored).

// DefaultHeartbeatEvery is how often an agent heartbeats: well inside the
// controller's default bound (30 s), so that a lost one or two never make a
// node silent.
const DefaultHeartbeatEvery = 5 * time.Second

// maxHeartbeat bounds a heartbeat message the controller decodes.
const maxHeartbeat = 1 << 10

// MaxVersionLen bounds the version a heartbeat says (a module version or a
// VCS revision with "+dirty", internal/buildinfo): a heartbeat with a
// longer one, or one with a byte that is not printable ASCII, is ignored.
const MaxVersionLen = 128

var heartbeatType = reflect.TypeFor[Heartbeat]()

// checkVersion says what is wrong with a heartbeat's version.
func checkVersion(v string) error {
	if len(v) > MaxVersionLen {
		return fmt.Errorf("a version of %d bytes, over the limit of %d", len(v), MaxVersionLen)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("a version with byte %d not printable ASCII (%q)", i, c)
		}
	}
	return nil
}

// Heartbeat is one agent heartbeat.
type Heartbeat struct {
	Node    string    `json:"node"`
	At      time.Time `json:"at"`
	Version string    `json:"version,omitempty"`
	Roster  uint64    `json:"roster,omitempty"`
}

// Heartbeat publishes one heartbeat of the node, stamped at (the agent's
// clock). It does not wait for anything: an error means the connection
// could not take it (the bus is away).
func (n *Node) Heartbeat(at time.Time, version string) error {
	b, err := json.Marshal(Heartbeat{Node: n.node, At: at.UTC(), Version: version, Roster: n.HeldRoster()})
	if err != nil {
		return fmt.Errorf("bus: node %s: heartbeat: %w", n.node, err)
	}
	if err := n.nc.Publish(HeartbeatSubject(n.node), b); err != nil {
		return fmt.Errorf("bus: node %s: heartbeat: %w", n.node, err)
	}
	return nil
}

// Heartbeats publishes a heartbeat at once and then every every (0:
// DefaultHeartbeatEvery) until ctx ends, stamped with now (nil: time.Now).
// A heartbeat the connection cannot take is logged at debug level and the
// next one is tried on time.
func (n *Node) Heartbeats(ctx context.Context, every time.Duration, version string, now func() time.Time) {
	if every <= 0 {
		every = DefaultHeartbeatEvery
	}
	if now == nil {
		now = time.Now
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := n.Heartbeat(now(), version); err != nil {
			n.log.Debug("bus: heartbeat not sent", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// HeartbeatStats counts what the controller's heartbeat subscription did.
type HeartbeatStats struct {
	Heard   uint64 // handed to the callback
	Ignored uint64 // did not decode, too large, or named another node than its subject's
}

// HeartbeatSubscription is the controller's subscription to every node's
// heartbeats.
type HeartbeatSubscription struct {
	sub            *nats.Subscription
	heard, ignored atomic.Uint64
	log            *slog.Logger
	fn             func(node string, hb Heartbeat)
	ctl            *ControllerConn // told which nodes hold a roster
	warnedOnce     atomic.Bool
}

// SubscribeHeartbeats hands each heartbeat heard on mesh.heartbeat.> to fn,
// with the node its subject names, one at a time (from the connection's
// goroutine: fn must not block), until Stop or the connection closes. A
// heartbeat that does not decode or names another node is ignored.
func (c *ControllerConn) SubscribeHeartbeats(fn func(node string, hb Heartbeat)) (*HeartbeatSubscription, error) {
	s := &HeartbeatSubscription{log: c.log, fn: fn, ctl: c}
	sub, err := c.subscribe(HeartbeatSubjectPrefix+">", s.handle)
	if err != nil {
		return nil, fmt.Errorf("bus: subscribe heartbeats: %w", err)
	}
	s.sub = sub
	return s, nil
}

// subscribe subscribes h to subject on the controller's connection and
// flushes, so that the server has the subscription when it returns; a
// subscription the flush cannot confirm is undone.
func (c *ControllerConn) subscribe(subject string, h nats.MsgHandler) (*nats.Subscription, error) {
	sub, err := c.nc.Subscribe(subject, h)
	if err != nil {
		return nil, err
	}
	if err := c.nc.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return sub, nil
}

// handle is one heartbeat, behind a recover (safego.Call, "bus.heartbeat"):
// a panic is logged and counted, and the heartbeat is lost.
func (s *HeartbeatSubscription) handle(m *nats.Msg) {
	_ = safego.Call("bus.heartbeat", s.log, func() error { s.heard1(m); return nil })
}

func (s *HeartbeatSubscription) heard1(m *nats.Msg) {
	node := strings.TrimPrefix(m.Subject, HeartbeatSubjectPrefix)
	hb, err := decodeHeartbeat(node, m.Data)
	if err != nil {
		s.ignored.Add(1)
		if s.warnedOnce.CompareAndSwap(false, true) {
			s.log.Warn("bus: heartbeat ignored (said once; counted after)", "subject", m.Subject, "err", err)
		}
		return
	}
	s.heard.Add(1)
	s.ctl.heardRoster(node, hb.Roster)
	s.fn(node, hb)
}

func decodeHeartbeat(node string, b []byte) (Heartbeat, error) {
	if err := ValidNode(node); err != nil {
		return Heartbeat{}, err
	}
	if len(b) > maxHeartbeat {
		return Heartbeat{}, fmt.Errorf("a heartbeat of %d bytes: at most %d", len(b), maxHeartbeat)
	}
	if err := events.CheckKeys(b, heartbeatType, true); err != nil {
		return Heartbeat{}, fmt.Errorf("heartbeat: %w", err)
	}
	var hb Heartbeat
	if err := json.Unmarshal(b, &hb); err != nil {
		return Heartbeat{}, fmt.Errorf("heartbeat: %w", err)
	}
	if hb.Node != node {
		return Heartbeat{}, fmt.Errorf("a heartbeat on %s's subject claims node %q", node, hb.Node)
	}
	if err := checkVersion(hb.Version); err != nil {
		return Heartbeat{}, fmt.Errorf("a heartbeat of %s: %w", node, err)
	}
	return hb, nil
}

// Stats says what the subscription heard and ignored.
func (s *HeartbeatSubscription) Stats() HeartbeatStats {
	return HeartbeatStats{Heard: s.heard.Load(), Ignored: s.ignored.Load()}
}

// Stop ends the subscription.
func (s *HeartbeatSubscription) Stop() {
	if err := s.sub.Unsubscribe(); err != nil {
		s.log.Debug("bus: unsubscribe heartbeats", "err", err)
	}
}
