package bus

// WatchSeen is the newest revision w has handled, for tests that must wait
// for the watch without taking from it.
func WatchSeen(w *Watch) uint64 { return w.seen.Load() }

// HoldsRoster reports whether c sends node's declarations without their
// roster (its heartbeat said it holds one).
func HoldsRoster(c *Controller, node string) bool { return c.holdsRoster(node) }

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
	return i.user("node:"+node, &p)
}
