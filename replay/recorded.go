package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"meshplane/declaration"
	"meshplane/events"
	"meshplane/projections"
)

// recorded is the recorded run, read from the history: its projections,
// what each of its passes did, and what the world did to its nodes.
type recorded struct {
	set    *projections.Set
	facts  *facts
	passes []map[string]*nodePass // per pass: node → what it did
	ends   []uint64               // per pass: its last position in the history's store
	world  *world
}

// readRecorded folds the history h: its projections, and each pass's
// facts, settled with the applies that ran in it (a report delivered late
// is compared in the pass of its apply).
func readRecorded(ctx context.Context, reg *events.Registry, h *history) (*recorded, error) {
	set := projections.New()
	if err := projections.NewRunner(h.store, reg, set.All()...).CatchUp(ctx); err != nil {
		return nil, fmt.Errorf("replay: fold the history: %w", err)
	}
	r := &recorded{set: set, facts: newFacts(reg),
		passes: make([]map[string]*nodePass, len(h.rounds)), ends: make([]uint64, len(h.rounds))}
	for k, rd := range h.rounds {
		r.passes[k] = r.facts.pass(h.events[rd.from:rd.to])
		r.ends[k] = rd.to
	}
	for k, rd := range h.rounds {
		ran := map[string][]string{}
		for _, a := range rd.apply {
			ran[a.node] = append(ran[a.node], applyID(reg, a.ev))
		}
		r.facts.settle(r.passes[k], ran)
	}
	r.world = worldOf(reg, h, r.facts)
	return r, nil
}

// world is what the world did to the nodes, read from their applies in
// the order they ran (a report delivered late belongs to the pass of its
// apply, each apply read from its own report).
type world struct {
	found   map[string][]string        // node → directories found on its disk
	removed [][]removal                // per pass: containers removed from outside before it
	running map[string]map[string]bool // node → containers of the declaration it last applied
	hadDir  map[string]map[string]bool // node → directories of every declaration it applied
}

// removal is a container removed from outside before a pass.
type removal struct{ node, container string }

// worldOf reads the world from the applies of h's passes, whose
// declarations f knows.
func worldOf(reg *events.Registry, h *history, f *facts) *world {
	w := &world{found: map[string][]string{}, removed: make([][]removal, len(h.rounds)),
		running: map[string]map[string]bool{}, hadDir: map[string]map[string]bool{}}
	for k, rd := range h.rounds {
		for _, at := range rd.apply {
			a, err := events.DecodeAs[events.ApplyReported](reg, at.ev)
			if err != nil {
				continue
			}
			kind := kinds(f.decls[a.Declaration])
			held := a.Held
			if a.HeldSince != "" && len(held) == 0 {
				held = f.held[a.HeldSince]
			}
			w.foundDirs(at.node, a, held, kind)
			w.removedContainers(k, at.node, a, kind)
		}
	}
	return w
}

// foundDirs notes the directories node's apply a (of a declaration whose
// resources' kinds are kind, holding held) shows were on its disk: those
// it held, and those its declarations never had that its first apply
// declaring them neither created, held nor failed on.
func (w *world) foundDirs(n string, a events.ApplyReported, held []events.Held, kind map[string]string) {
	for _, hd := range held {
		if kind[hd.Name] == declaration.KindDirectory && !slices.Contains(w.found[n], hd.Name) {
			w.found[n] = append(w.found[n], hd.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(kind)) {
		if kind[name] != declaration.KindDirectory || w.hadDir[n][name] {
			continue
		}
		if !slices.Contains(a.Created, name) && !slices.Contains(w.found[n], name) &&
			!slices.ContainsFunc(a.Failed, func(f events.Failed) bool { return f.Name == name }) &&
			!slices.ContainsFunc(held, func(h events.Held) bool { return h.Name == name }) {
			w.found[n] = append(w.found[n], name)
		}
		if w.hadDir[n] == nil {
			w.hadDir[n] = map[string]bool{}
		}
		w.hadDir[n][name] = true
	}
}

// removedContainers notes the containers removed from node n from
// outside before pass k, as its apply a there shows: a container it ran
// that a created again, and one it ran that the declaration (whose
// resources' kinds are kind) no longer has and a did not remove (nor fail
// to remove): it was gone already. Then n runs the declaration's.
func (w *world) removedContainers(k int, n string, a events.ApplyReported, kind map[string]string) {
	for _, c := range a.Created {
		if w.running[n][c] {
			w.removed[k] = append(w.removed[k], removal{node: n, container: c})
		}
	}
	for _, c := range slices.Sorted(maps.Keys(w.running[n])) {
		if _, declared := kind[c]; !declared && !slices.Contains(a.Removed, c) &&
			!slices.ContainsFunc(a.Failed, func(f events.Failed) bool { return f.Name == c }) {
			w.removed[k] = append(w.removed[k], removal{node: n, container: c})
		}
	}
	w.running[n] = map[string]bool{}
	for name, kd := range kind {
		if kd == declaration.KindContainer {
			w.running[n][name] = true
		}
	}
}
