package bus

import (
	"time"

	"github.com/nats-io/jwt/v2"
)

// WatchSeen is the newest revision w has handled, for tests that must wait
// for the watch without taking from it.
func WatchSeen(w *Watch) uint64 { return w.seen.Load() }

// HoldsRoster reports whether c sends node's declarations without their
// roster (its heartbeat said it holds one).
func HoldsRoster(c *ControllerConn, node string) bool { return c.holdsRoster(node) }

// NodeBeforeRoster mints node's user as builds before the shared roster
// did: NodePermissions without the roster value's subjects.
func NodeBeforeRoster(i *Issuer, node string) (User, error) {
	p := NodePermissions(node)
	var allow []string
	for _, s := range p.Pub.Allow {
		if s != "$JS.API.CONSUMER.CREATE."+declStream+".*."+RosterSubject && s != "$JS.API.DIRECT.GET."+declStream+"."+RosterSubject {
			allow = append(allow, s)
		}
	}
	p.Pub.Allow = allow
	var sub []string
	for _, s := range p.Sub.Allow {
		if s != RepublishSubject(RosterKey) {
			sub = append(sub, s)
		}
	}
	p.Sub.Allow = sub
	return i.user("node:"+node, &p)
}

// NodeBeforeRepublish mints node's user as builds before the republished
// keys did: its watches were JetStream consumers of the bucket, so it may
// create them (on its key and the roster's), delete them, bind to the
// bucket and answer flow control, and subscribe to no mesh.decl subject.
func NodeBeforeRepublish(i *Issuer, node string) (User, error) {
	var p jwt.Permissions
	p.Pub.Allow.Add(
		ReportSubject(node),
		HeartbeatSubject(node),
		SecretSubject(node),
		"$JS.API.CONSUMER.CREATE."+declStream+".*."+DeclarationSubject(node),
		"$JS.API.DIRECT.GET."+declStream+"."+DeclarationSubject(node),
		"$JS.API.CONSUMER.CREATE."+declStream+".*."+RosterSubject,
		"$JS.API.DIRECT.GET."+declStream+"."+RosterSubject,
		"$JS.API.CONSUMER.DELETE."+declStream+".*",
		"$JS.API.STREAM.INFO."+declStream,
		"$JS.FC."+declStream+".>",
	)
	p.Sub.Allow.Add(NodeInbox(node)+".>", PlanSubject(node))
	p.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	return i.user("node:"+node, &p)
}

// InProcess is o connecting to s without a socket (as the controller in
// s's process does): 10,000 agents in one test process would need 20,000
// file descriptors over TCP.
func InProcess(o NodeOptions, s *Server) NodeOptions {
	o.inProcess = s.ns
	return o
}

// Subscriptions is the number of subscriptions s holds.
func Subscriptions(s *Server) uint32 { return s.ns.NumSubscriptions() }
