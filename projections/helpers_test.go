package projections

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// t0 is when every generated history starts.
var t0 = time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)

// gen makes events with events.Registry.New, numbered as a store would
// (position p, a minute apart), with no store involved.
type gen struct {
	tb  testing.TB
	reg *events.Registry
	evs []events.Event
}

func newGen(tb testing.TB) *gen { return &gen{tb: tb, reg: events.NewRegistry()} }

// id is a deterministic UUID for position pos.
func id(pos uint64) uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[8:], pos)
	u[6] = 0x70
	return u
}

// add appends one event of p on stream, by actor, in correlation corr.
func (g *gen) add(stream, actor, corr string, p events.Payload) *gen {
	g.tb.Helper()
	pos := uint64(len(g.evs) + 1)
	ev, err := g.reg.New(stream, p, events.Meta{
		ID: id(pos), At: t0.Add(time.Duration(pos) * time.Minute), Actor: actor, Correlation: corr,
	})
	if err != nil {
		g.tb.Fatalf("new %s: %v", p.EventType(), err)
	}
	ev.Position = pos
	g.evs = append(g.evs, ev)
	return g
}

// raw appends an event with hand-written data, as "the event stream
// receives:" would.
func (g *gen) raw(stream, typ, data string) *gen {
	pos := uint64(len(g.evs) + 1)
	g.evs = append(g.evs, events.Event{
		ID: id(pos), Stream: stream, Type: typ, Schema: 1, Position: pos,
		At: t0.Add(time.Duration(pos) * time.Minute), Data: []byte(data),
	})
	return g
}

func (g *gen) op(node string, p events.Payload) *gen {
	return g.add(events.NodeStream(node), "operator:jo", "", p)
}

func (g *gen) assign(module, node string) *gen {
	return g.op(node, events.ModuleAssigned{Module: module, Node: node})
}

// resources makes n resources of module, named <module>-<i>, digests by
// spec.
func resources(module string, n int, spec string) []events.ResourceRef {
	out := make([]events.ResourceRef, n)
	for i := range out {
		out[i] = events.ResourceRef{
			Name: fmt.Sprintf("%s-%d", module, i), Kind: "container", Module: module,
			Digest: fmt.Sprintf("sha256:%s-%d", spec, i),
		}
	}
	return out
}

func (g *gen) composed(node, decl, digest string, roster []string, res []events.ResourceRef) *gen {
	return g.add(events.NodeStream(node), "controller", "c-"+decl, events.DeclarationComposed{
		Node: node, Declaration: decl, Digest: digest, Roster: roster, Resources: res,
	})
}

func (g *gen) pushed(node, decl, digest string, n int) *gen {
	return g.add(events.NodeStream(node), "controller", "c-"+decl, events.DeclarationPushed{
		Node: node, Declaration: decl, Digest: digest, Resources: n,
	})
}

func (g *gen) applied(node string, a events.ApplyReported) *gen {
	a.Node = node
	return g.add(events.NodeStream(node), "agent:"+node, "c-"+a.Declaration, a)
}

func (g *gen) composeFailed(node, read, msg string) *gen {
	return g.add(events.NodeStream(node), "controller", "", events.DeclarationComposeFailed{Node: node, Read: read, Error: msg})
}

// pass is one whole pass on node: composed, pushed, applied; the apply
// replaces `replaced` of the n resources (for the "roster" field).
func (g *gen) pass(node, decl, digest string, roster []string, n, replaced int) *gen {
	res := resources("m", n, digest)
	g.composed(node, decl, digest, roster, res).pushed(node, decl, digest, n)
	a := events.ApplyReported{Declaration: decl, Sent: n, Applied: n, Unchanged: n - replaced, Digest: digest}
	for i := 0; i < replaced; i++ {
		a.Replaced = append(a.Replaced, events.Replaced{Name: res[i].Name, Fields: []string{"hosts"}})
	}
	return g.applied(node, a)
}

// mixedPass is a pass on node of a declaration of c containers of module m
// and files other resources (directories and files), whose apply creates
// created of the containers.
func (g *gen) mixedPass(node, decl string, c, files, created int) *gen {
	res := resources("m", c, "A")
	for i := 0; i < files; i++ {
		res = append(res, events.ResourceRef{Name: fmt.Sprintf("/var/lib/m/f%d", i), Kind: "file", Module: "m", Digest: "sha256:f"})
	}
	g.composed(node, decl, "A", nil, res).pushed(node, decl, "A", len(res))
	a := events.ApplyReported{Declaration: decl, Sent: len(res), Applied: len(res), Unchanged: len(res) - created, Digest: "A"}
	for i := 0; i < created; i++ {
		a.Created = append(a.Created, res[i].Name)
	}
	return g.applied(node, a)
}

// fold decodes each event once and folds it into ps, as the runner does;
// a fold error fails the test.
func fold(tb testing.TB, reg *events.Registry, evs []events.Event, ps ...Projection) {
	tb.Helper()
	for _, ev := range evs {
		p, err := reg.Decode(ev)
		if err != nil {
			tb.Fatalf("decode %s: %v", ev, err)
		}
		for _, proj := range ps {
			if err := proj.Fold(ev, p); err != nil {
				tb.Fatalf("%s: fold %s: %v", proj.Name(), ev, err)
			}
		}
	}
}

// folded returns a fresh Set that has folded g's events.
func (g *gen) folded() *Set {
	g.tb.Helper()
	s := New()
	fold(g.tb, g.reg, g.evs, s.All()...)
	return s
}
