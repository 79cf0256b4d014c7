package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"meshplane/agent"
	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// Options are a replay's.
type Options struct {
	// Until stops the replay after this position of the file (0: its end).
	Until uint64
}

// Run replays the history at path (an export file, mesh export's
// format) against this build and returns the report; its error is
// ErrDiverged, with the report, when the runs diverge.
func Run(ctx context.Context, path string, o Options) (*Report, error) {
	reg := events.NewRegistry()
	h, err := readHistory(ctx, path, reg, o.Until)
	if err != nil {
		return nil, err
	}
	defer h.store.Close()
	rep := &Report{History: filepath.Base(path), Events: len(h.events), Passes: len(h.rounds)}
	if n := len(h.events); n > 0 {
		rep.Through, rep.At = h.filePos[n-1], h.events[n-1].At
	}

	// The recorded run: its projections, and what each pass did.
	recSet := projections.New()
	if err := projections.NewRunner(h.store, reg, recSet.All()...).CatchUp(ctx); err != nil {
		return nil, fmt.Errorf("replay: fold the history: %w", err)
	}
	recF := newFacts(reg)
	recPasses := make([]map[string]*nodePass, len(h.rounds))
	recEnds := make([]uint64, len(h.rounds))
	found := map[string][]string{} // node → directories found on its disk
	removed := make([][]removal, len(h.rounds))
	running := map[string]map[string]bool{} // node → containers of the declaration it last applied
	hadDir := map[string]map[string]bool{}  // node → directories of every declaration it applied
	nodes := map[string]bool{}
	for k, rd := range h.rounds {
		recPasses[k] = recF.pass(h.events[rd.from:rd.to])
		recEnds[k] = rd.to
	}
	for k, rd := range h.rounds {
		ran := map[string][]string{}
		for _, a := range rd.apply {
			ran[a.node] = append(ran[a.node], applyID(reg, a.ev))
		}
		recF.settle(recPasses[k], ran)
	}
	// What the world did to the nodes, read from their applies in the
	// order they ran (a report delivered late belongs to the pass of its
	// apply, each apply read from its own report).
	for k, rd := range h.rounds {
		for _, at := range rd.apply {
			n := at.node
			a, err := events.DecodeAs[events.ApplyReported](reg, at.ev)
			if err != nil {
				continue
			}
			kind := kinds(recF.decls[a.Declaration])
			held := a.Held
			if a.HeldSince != "" && len(held) == 0 {
				held = recF.held[a.HeldSince]
			}
			for _, hd := range held {
				if kind[hd.Name] == declaration.KindDirectory && !slices.Contains(found[n], hd.Name) {
					found[n] = append(found[n], hd.Name)
				}
			}
			// A directory the node never had declared that its first
			// apply neither created nor failed on was on its disk.
			for _, name := range slices.Sorted(maps.Keys(kind)) {
				if kind[name] != declaration.KindDirectory || hadDir[n][name] {
					continue
				}
				if !slices.Contains(a.Created, name) && !slices.Contains(found[n], name) &&
					!slices.ContainsFunc(a.Failed, func(f events.Failed) bool { return f.Name == name }) &&
					!slices.ContainsFunc(held, func(h events.Held) bool { return h.Name == name }) {
					found[n] = append(found[n], name)
				}
				if hadDir[n] == nil {
					hadDir[n] = map[string]bool{}
				}
				hadDir[n][name] = true
			}
			// A container the node ran that this apply created again was
			// removed from outside before it; so was one it ran that the
			// declaration no longer has and the apply did not remove
			// (nor fail to remove): it was gone already.
			for _, c := range a.Created {
				if running[n][c] {
					removed[k] = append(removed[k], removal{node: n, container: c})
				}
			}
			for _, c := range slices.Sorted(maps.Keys(running[n])) {
				if _, declared := kind[c]; !declared && !slices.Contains(a.Removed, c) &&
					!slices.ContainsFunc(a.Failed, func(f events.Failed) bool { return f.Name == c }) {
					removed[k] = append(removed[k], removal{node: n, container: c})
				}
			}
			running[n] = map[string]bool{}
			for name, kd := range kind {
				if kd == declaration.KindContainer {
					running[n][name] = true
				}
			}
		}
	}
	for _, ev := range h.events {
		if n := nodeOf(ev); n != "" {
			nodes[n] = true
		}
	}
	rep.Nodes = slices.Sorted(maps.Keys(nodes))

	// Today's run, in the sandbox.
	clk := &clock{}
	if len(h.events) > 0 {
		clk.now = h.events[0].At
	}
	store := memstore.New()
	defer store.Close()
	m := sim.New(store, sim.WithClock(clk.Now))
	todayF := newFacts(reg)
	todayEnds := make([]uint64, len(h.rounds))
	todayEvs := make([][]events.Event, len(h.rounds))
	todayRan := make([]map[string][]string, len(h.rounds)) // node → the apply ids it ran in the pass
	faults := map[string]map[string]bool{}                 // node whose reads fail → the nodes whose recorded compose said so
	unreplayed := map[string]bool{}
	cut := map[string]bool{} // nodes whose bus is cut
	for k, rd := range h.rounds {
		clk.set(rd.at)
		from, err := m.Store.Head(ctx)
		if err != nil {
			return nil, fmt.Errorf("replay: sandbox: %w", err)
		}
		pass := func(d Divergence) Divergence {
			d.Pass, d.At, d.Position = k+1, rd.at, h.filePos[rd.to-1]
			return d
		}
		// The operators' commands.
		for _, ev := range rd.ops {
			c, err := commandOf(reg, ev)
			if err != nil {
				return nil, fmt.Errorf("replay: position %d: %w", h.filePos[ev.Position-1], err)
			}
			rep.Inputs.Commands++
			if ev.Type == events.TypeArtifactRecorded {
				rep.Inputs.Builds++
			}
			if _, err := m.Handler.Execute(ctx, ev.Actor, c); err != nil {
				rep.Inputs.Refused++
				rep.Divergences = append(rep.Divergences, pass(Divergence{Node: nodeOf(ev), Kind: KindCommand,
					Recorded: ev.Type + " recorded", Today: "refused: " + err.Error()}))
				continue
			}
			if r, ok := c.(commands.RegisterNode); ok {
				n, err := m.Node(r.Node)
				if err != nil {
					return nil, err
				}
				for _, dir := range found[r.Node] {
					if err := n.Runtime.MakeDirectory(dir, 0o755); err != nil {
						return nil, fmt.Errorf("replay: found directory %s on %s: %w", dir, r.Node, err)
					}
					rep.Inputs.Found++
				}
			}
		}
		// The faults the recorded pass shows.
		// A node composed, sent, or failed on another read, no longer
		// shows a read failing: a read fails while a node's last compose
		// recorded says it does.
		for n, p := range recPasses[k] {
			if p.failed != nil || p.composed != nil || p.pushed {
				for x, owners := range faults {
					if p.failed != nil && p.failed.Read == "node "+x {
						continue
					}
					delete(owners, n)
					if len(owners) == 0 {
						delete(faults, x)
					}
				}
			}
		}
		for n, p := range recPasses[k] {
			if p.failed == nil || p.failed.Read == "" {
				continue
			}
			x, ok := strings.CutPrefix(p.failed.Read, "node ")
			if !ok {
				unreplayed["read "+p.failed.Read] = true
				continue
			}
			if faults[x] == nil {
				faults[x] = map[string]bool{}
			}
			faults[x][n] = true
		}
		for x := range faults {
			m.Store.FailReads(x, false)
			rep.Inputs.FailedReads++
		}
		// A bus cut lasts from a send that failed until a send that
		// succeeded, or until the node's kept reports were delivered late.
		for _, n := range slices.Sorted(maps.Keys(recPasses[k])) {
			p := recPasses[k][n]
			switch {
			case p.pushFailed != nil && !cut[n]:
				if err := m.CutBus(n); err != nil {
					return nil, err
				}
				cut[n] = true
				rep.Inputs.Cuts++
			case p.pushFailed == nil && p.pushed && cut[n]:
				if err := m.RestoreBus(ctx, n); err != nil {
					return nil, err
				}
				delete(cut, n)
			}
		}
		// An apply whose report was delivered late, with the node's reads
		// not failing (the other reason a report is kept), had its bus cut.
		for _, a := range rd.apply {
			if a.late && !cut[a.node] && faults[a.node] == nil {
				if err := m.CutBus(a.node); err != nil {
					return nil, err
				}
				cut[a.node] = true
				rep.Inputs.Cuts++
			}
		}
		for _, r := range removed[k] {
			n, err := m.Node(r.node)
			if err != nil {
				return nil, err
			}
			if err := n.Runtime.RemoveContainer(ctx, r.container); err != nil && !errors.Is(err, agent.ErrNotFound) {
				return nil, fmt.Errorf("replay: remove %s from %s: %w", r.container, r.node, err)
			}
			rep.Inputs.Removed++
		}
		// The controller's pass, then the applies.
		if len(rd.ctl) > 0 || len(rd.apply) > 0 {
			if err := m.PushChanged(ctx); err != nil {
				return nil, fmt.Errorf("replay: pass %d: push: %w", k+1, err)
			}
		}
		todayRan[k] = map[string][]string{}
		for _, a := range rd.apply {
			r, ran, err := m.Apply(ctx, a.node)
			if err != nil {
				return nil, fmt.Errorf("replay: pass %d: %w", k+1, err)
			}
			if ran {
				todayRan[k][a.node] = append(todayRan[k][a.node], r.Outcome.ApplyID)
			}
		}
		m.Store.Recover()
		// The reports kept that the recorded pass delivered, delivered:
		// a cut bus restored, or (kept for a failing store) sent again.
		for _, n := range slices.Sorted(maps.Keys(rd.late)) {
			if err := m.RestoreBus(ctx, n); err != nil {
				return nil, err
			}
			delete(cut, n)
		}
		to, err := m.Store.Head(ctx)
		if err != nil {
			return nil, fmt.Errorf("replay: sandbox: %w", err)
		}
		todayEnds[k] = to
		if todayEvs[k], err = readRange(ctx, m.Store, from, to); err != nil {
			return nil, err
		}
	}
	// Today's passes, compared once every report is in: an apply is
	// compared in the pass it ran in, wherever its report was delivered.
	todayPasses := make([]map[string]*nodePass, len(h.rounds))
	for k := range h.rounds {
		todayPasses[k] = todayF.pass(todayEvs[k])
	}
	for k, rd := range h.rounds {
		todayF.settle(todayPasses[k], todayRan[k])
		for _, d := range compareRound(recPasses[k], todayPasses[k], recF, todayF) {
			d.Pass, d.At, d.Position = k+1, rd.at, h.filePos[rd.to-1]
			rep.Divergences = append(rep.Divergences, d)
		}
	}
	rep.Inputs.Unreplayed = slices.Sorted(maps.Keys(unreplayed))
	if err := m.CatchUp(ctx); err != nil {
		return nil, fmt.Errorf("replay: sandbox projections: %w", err)
	}
	// An apply's report delivered late counts in the pass it ran in.
	recAt, todayAt := map[uint64]int{}, map[uint64]int{}
	ranIn := map[string]int{} // today's apply id → its pass
	for k, rd := range h.rounds {
		for _, a := range rd.apply {
			recAt[a.ev.Position] = k + 1
		}
		for _, ids := range todayRan[k] {
			for _, id := range ids {
				ranIn[id] = k + 1
			}
		}
	}
	for _, evs := range todayEvs {
		for _, ev := range evs {
			if ev.Type == events.TypeApplyReported {
				if k, ok := ranIn[applyID(reg, ev)]; ok {
					todayAt[ev.Position] = k
				}
			}
		}
	}
	rep.ChurnRecorded = episodes(recSet.Churn, recEnds, recAt)
	rep.ChurnToday = episodes(m.Views.Churn, todayEnds, todayAt)
	for _, d := range churnDiffs(rep.ChurnRecorded, rep.ChurnToday) {
		if d.Pass > 0 && d.Pass <= len(h.rounds) {
			rd := h.rounds[d.Pass-1]
			d.At, d.Position = rd.at, h.filePos[rd.to-1]
		}
		rep.Divergences = append(rep.Divergences, d)
	}
	slices.SortStableFunc(rep.Divergences, func(a, b Divergence) int {
		if a.Pass != b.Pass {
			return a.Pass - b.Pass
		}
		return strings.Compare(a.Node, b.Node)
	})
	rep.Recorded, rep.Today = recF.totals, todayF.totals
	rep.Recorded.Episodes, rep.Today.Episodes = len(rep.ChurnRecorded), len(rep.ChurnToday)
	if rep.Divergences == nil {
		rep.Divergences = []Divergence{}
	}
	if rep.ChurnRecorded == nil {
		rep.ChurnRecorded = []Episode{}
	}
	if rep.ChurnToday == nil {
		rep.ChurnToday = []Episode{}
	}
	rep.Agree = len(rep.Divergences) == 0
	if !rep.Agree {
		return rep, ErrDiverged
	}
	return rep, nil
}

// removal is a container removed from outside before a pass.
type removal struct{ node, container string }

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

// commandOf is the operator's command that recorded ev.
func commandOf(reg *events.Registry, ev events.Event) (commands.Command, error) {
	p, err := reg.Decode(ev)
	if err != nil {
		return nil, err
	}
	switch v := p.(type) {
	case events.NodeRegistered:
		return commands.RegisterNode{Node: v.Node}, nil
	case events.NodeAdopted:
		return commands.AdoptNode{Node: v.Node}, nil
	case events.NodeSettingSet:
		return commands.SetNodeSetting{Node: v.Node, Key: v.Key, Value: v.Value}, nil
	case events.ModuleDefined:
		return commands.DefineModule{Module: v.Module, Spec: v.Spec}, nil
	case events.ModuleAssigned:
		return commands.AssignModule{Module: v.Module, Node: v.Node}, nil
	case events.ModuleReleased:
		return commands.ReleaseModule{Module: v.Module, Node: v.Node}, nil
	case events.ModuleTaken:
		return commands.TakeModule{Module: v.Module, Node: v.Node}, nil
	case events.ArtifactRecorded:
		return commands.RecordArtifact{Module: v.Module, Name: v.Name, Digest: v.Digest}, nil
	case events.SecretSet:
		return commands.SetSecret{Name: v.Name, Digest: v.Digest, Sealed: v.Sealed, KeyID: v.KeyID, By: v.By}, nil
	case events.ModuleDeployed:
		c := commands.DeployModule{Module: v.Module}
		if len(v.Builds) == 1 {
			c.Digest = v.Builds[0].Digest
		}
		return c, nil
	}
	return nil, fmt.Errorf("replay: %s is no command to run again", ev.Type)
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
