package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"meshplane/agent"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// sandbox is today's run: the recorded world run again, pass by pass,
// through this build (package sim over a memory store, on a clock that
// follows the recorded passes).
type sandbox struct {
	reg   *events.Registry
	h     *history
	rec   *recorded
	rep   *Report // its inputs counted, a refused command's divergence added
	clk   *clock
	store *memstore.Store
	m     *sim.Mesh

	faults     map[string]map[string]bool // node whose reads fail → the nodes whose recorded compose said so
	unreplayed map[string]bool            // the faults it cannot inject
	cut        map[string]bool            // nodes whose bus is cut

	// Per pass: the sandbox store's last position after it, its events,
	// and node → the apply ids it ran in it.
	ends []uint64
	evs  [][]events.Event
	ran  []map[string][]string
}

// newSandbox is an empty sandbox for replaying h (recorded as rec) into
// rep, its clock at the history's first event. Close it.
func newSandbox(reg *events.Registry, h *history, rec *recorded, rep *Report) *sandbox {
	s := &sandbox{reg: reg, h: h, rec: rec, rep: rep, clk: &clock{}, store: memstore.New(),
		faults: map[string]map[string]bool{}, unreplayed: map[string]bool{}, cut: map[string]bool{},
		ends: make([]uint64, len(h.rounds)), evs: make([][]events.Event, len(h.rounds)), ran: make([]map[string][]string, len(h.rounds))}
	if len(h.events) > 0 {
		s.clk.now = h.events[0].At
	}
	s.m = sim.New(s.store, sim.WithClock(s.clk.Now))
	return s
}

// Close releases the sandbox's store.
func (s *sandbox) Close() { s.store.Close() }

// round runs pass k (rd) again: the operators' commands, the faults the
// recorded pass shows, the controller's pass and the applies, then the
// late reports it delivered; and keeps what it recorded.
func (s *sandbox) round(ctx context.Context, k int, rd round) error {
	s.clk.set(rd.at)
	from, err := s.m.Store.Head(ctx)
	if err != nil {
		return fmt.Errorf("replay: sandbox: %w", err)
	}
	if err := s.commands(ctx, k, rd); err != nil {
		return err
	}
	s.readFaults(k)
	if err := s.busCuts(ctx, k, rd); err != nil {
		return err
	}
	if err := s.removals(ctx, k); err != nil {
		return err
	}
	if err := s.pass(ctx, k, rd); err != nil {
		return err
	}
	to, err := s.m.Store.Head(ctx)
	if err != nil {
		return fmt.Errorf("replay: sandbox: %w", err)
	}
	s.ends[k] = to
	s.evs[k], err = readRange(ctx, s.m.Store, from, to)
	return err
}

// commands runs pass k's operators' commands again; a command refused
// today is a divergence. A node registered gets the directories found on
// its disk.
func (s *sandbox) commands(ctx context.Context, k int, rd round) error {
	for _, ev := range rd.ops {
		c, err := commandOf(s.reg, ev)
		if err != nil {
			return fmt.Errorf("replay: position %d: %w", s.h.filePos[ev.Position-1], err)
		}
		s.rep.Inputs.Commands++
		if ev.Type == events.TypeArtifactRecorded {
			s.rep.Inputs.Builds++
		}
		if _, err := s.m.Handler.Execute(ctx, ev.Actor, c); err != nil {
			s.rep.Inputs.Refused++
			s.rep.Divergences = append(s.rep.Divergences, s.h.at(k, Divergence{Node: nodeOf(ev), Kind: KindCommand,
				Recorded: ev.Type + " recorded", Today: "refused: " + err.Error()}))
			continue
		}
		if r, ok := c.(commands.RegisterNode); ok {
			n, err := s.m.Node(r.Node)
			if err != nil {
				return err
			}
			for _, dir := range s.rec.world.found[r.Node] {
				if err := n.Runtime.MakeDirectory(dir, 0o755); err != nil {
					return fmt.Errorf("replay: found directory %s on %s: %w", dir, r.Node, err)
				}
				s.rep.Inputs.Found++
			}
		}
	}
	return nil
}

// readFaults fails the reads pass k's recorded composes show failing. A
// read fails while a node's last compose recorded says it does: a node
// composed, sent, or failed on another read, no longer shows it failing.
// A failed read of something other than a node is not injected, and
// listed.
func (s *sandbox) readFaults(k int) {
	for n, p := range s.rec.passes[k] {
		if p.failed != nil || p.composed != nil || p.pushed {
			for x, owners := range s.faults {
				if p.failed != nil && p.failed.Read == "node "+x {
					continue
				}
				delete(owners, n)
				if len(owners) == 0 {
					delete(s.faults, x)
				}
			}
		}
	}
	for n, p := range s.rec.passes[k] {
		if p.failed == nil || p.failed.Read == "" {
			continue
		}
		x, ok := strings.CutPrefix(p.failed.Read, "node ")
		if !ok {
			s.unreplayed["read "+p.failed.Read] = true
			continue
		}
		if s.faults[x] == nil {
			s.faults[x] = map[string]bool{}
		}
		s.faults[x][n] = true
	}
	for x := range s.faults {
		s.m.Store.FailReads(x, false)
		s.rep.Inputs.FailedReads++
	}
}

// busCuts cuts and restores the nodes' buses as pass k shows. A cut lasts
// from a send that failed until a send that succeeded, or until the
// node's kept reports were delivered late; an apply whose report was
// delivered late, with the node's reads not failing (the other reason a
// report is kept), had its bus cut.
func (s *sandbox) busCuts(ctx context.Context, k int, rd round) error {
	for _, n := range slices.Sorted(maps.Keys(s.rec.passes[k])) {
		p := s.rec.passes[k][n]
		switch {
		case p.pushFailed != nil && !s.cut[n]:
			if err := s.m.CutBus(n); err != nil {
				return err
			}
			s.cut[n] = true
			s.rep.Inputs.Cuts++
		case p.pushFailed == nil && p.pushed && s.cut[n]:
			if err := s.m.RestoreBus(ctx, n); err != nil {
				return err
			}
			delete(s.cut, n)
		}
	}
	for _, a := range rd.apply {
		if a.late && !s.cut[a.node] && s.faults[a.node] == nil {
			if err := s.m.CutBus(a.node); err != nil {
				return err
			}
			s.cut[a.node] = true
			s.rep.Inputs.Cuts++
		}
	}
	return nil
}

// removals removes from the nodes what the world removed before pass k.
func (s *sandbox) removals(ctx context.Context, k int) error {
	for _, r := range s.rec.world.removed[k] {
		n, err := s.m.Node(r.node)
		if err != nil {
			return err
		}
		if err := n.Runtime.RemoveContainer(ctx, r.container); err != nil && !errors.Is(err, agent.ErrNotFound) {
			return fmt.Errorf("replay: remove %s from %s: %w", r.container, r.node, err)
		}
		s.rep.Inputs.Removed++
	}
	return nil
}

// pass runs the controller's pass (when the recorded one had any of its
// events or applies), then the applies, in the recorded order; reads
// recover; and the reports kept that the recorded pass delivered are
// delivered: a cut bus restored, or (kept for a failing store) sent
// again.
func (s *sandbox) pass(ctx context.Context, k int, rd round) error {
	if len(rd.ctl) > 0 || len(rd.apply) > 0 {
		if err := s.m.PushChanged(ctx); err != nil {
			return fmt.Errorf("replay: pass %d: push: %w", k+1, err)
		}
	}
	s.ran[k] = map[string][]string{}
	for _, a := range rd.apply {
		r, ran, err := s.m.Apply(ctx, a.node)
		if err != nil {
			return fmt.Errorf("replay: pass %d: %w", k+1, err)
		}
		if ran {
			s.ran[k][a.node] = append(s.ran[k][a.node], r.Outcome.ApplyID)
		}
	}
	s.m.Store.Recover()
	for _, n := range slices.Sorted(maps.Keys(rd.late)) {
		if err := s.m.RestoreBus(ctx, n); err != nil {
			return err
		}
		delete(s.cut, n)
	}
	return nil
}

// clock is the sandbox's: it follows the recorded passes' times (set),
// never going back, and advances a second each time it is read.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now
	c.now = c.now.Add(time.Second)
	return t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}

// readRange reads the events of s in (from, to].
func readRange(ctx context.Context, s events.Store, from, to uint64) ([]events.Event, error) {
	var out []events.Event
	for from < to {
		page, err := s.ReadAll(ctx, from, int(min(4096, to-from)))
		if err != nil {
			return nil, fmt.Errorf("replay: sandbox: read after %d: %w", from, err)
		}
		if len(page) == 0 {
			break
		}
		out = append(out, page...)
		from = page[len(page)-1].Position
	}
	return out, nil
}
