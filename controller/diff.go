package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/declaration/nodeplan"
	"meshplane/events"
	"meshplane/projections"
	"meshplane/wire"
)

// DiffHelp is mesh diff's help.
const DiffHelp = `diff says what changed in the mesh between two moments, per node and per module: module
definitions (defined, redefined with the spec fields it changed, removed), builds recorded and
deploys; per node its registration or removal, the assignments, takes and releases, the
declarations composed (the resources added, removed, or changed with each field that changed,
as mesh why words it) and the routed names that came and went, the holds that appeared and
cleared, its sync and health, and the churn episodes detected or ended.

--from and --to are each a time in RFC 3339 (2026-09-29T22:46:00Z) or a store position (as
mesh timeline and mesh export show them); a time stands for the last event at or before it.
--to defaults to the store's head. A moment past the head or before the first event (position
0, or a time before the first event's: as --at and revert read a moment), or --from after
--to, is refused (exit 3). The diff compares the projections as they stood after each end, and reads the
events in between; only nodes and modules something changed on are shown.`

// Diff is what changed in the mesh between two moments (mesh diff): the
// projections folded afresh to each end (viewsAt), the events in between,
// and projections.DiffMesh over them.
func (c *Controller) Diff(ctx context.Context, req api.DiffRequest) (api.MeshDiff, error) {
	if err := req.Validate(); err != nil {
		return api.MeshDiff{}, err
	}
	from, to, err := c.diffEnds(ctx, req)
	if err != nil {
		return api.MeshDiff{}, err
	}
	d, err := DiffBetween(ctx, c.store, c.reg, from, to, c.keeper)
	if err != nil {
		return api.MeshDiff{}, err
	}
	return c.meshDiffOf(ctx, d)
}

// diffEnds resolves req's moments to positions: from after to, or either
// past the head, is a rejection.
func (c *Controller) diffEnds(ctx context.Context, req api.DiffRequest) (from, to uint64, err error) {
	head, err := c.store.Head(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("controller: diff: head: %w", err)
	}
	to = head
	if req.To != "" {
		if to, err = c.momentPosition(ctx, "to", req.To, head); err != nil {
			return 0, 0, err
		}
	}
	if from, err = c.momentPosition(ctx, "from", req.From, head); err != nil {
		return 0, 0, err
	}
	if from > to {
		return 0, 0, &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
			"--from %s (position %d) is after --to (position %d): a diff goes forward in time", req.From, from, to)}
	}
	return from, to, nil
}

// momentPosition reads flag's moment s and resolves it to a position
// (PositionAt): one past the head, or a time after now, is a rejection.
func (c *Controller) momentPosition(ctx context.Context, flag, s string, head uint64) (uint64, error) {
	m, err := commands.ParseMoment(s)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flag, err)
	}
	switch {
	case m.At.IsZero() && m.Position > head:
		return 0, &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
			"--%s: position %d is past the store's last event (%d)", flag, m.Position, head)}
	case !m.At.IsZero() && m.At.After(c.clock()):
		return 0, &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
			"--%s: %s is after now (%s)", flag, s, c.clock().UTC().Format(time.RFC3339))}
	}
	pos, err := PositionAt(ctx, c.store, m, head)
	if err == nil && pos == 0 {
		return 0, c.beforeFirst(ctx, "--"+flag+" "+s)
	}
	return pos, err
}

// PositionAt is the position a moment stands for: a position itself, or
// for a time the last event at or before it (projections.PositionAt), 0
// when the first event is after it.
func PositionAt(ctx context.Context, store events.Store, m commands.Moment, head uint64) (uint64, error) {
	if m.At.IsZero() {
		return m.Position, nil
	}
	pos, _, err := projections.PositionAt(ctx, store, m.At)
	if errors.Is(err, projections.ErrNoMoment) {
		return 0, nil
	}
	return pos, err
}

// timeAt is the time of the event at pos (zero at 0).
func timeAt(ctx context.Context, store events.Store, pos uint64) (time.Time, error) {
	if pos == 0 {
		return time.Time{}, nil
	}
	return projections.TimeOf(ctx, store, pos)
}

// viewsAt is the projections as they stood at pos, and the runner that
// fed them: from the nearest of k's checkpoints (projections.FoldTo; nil
// k: from 0), empty at 0, its runner then feeding all but the timeline,
// which the diff does not read (the heaviest fold, left out as before
// checkpoints).
func viewsAt(ctx context.Context, store events.Store, reg *events.Registry, pos uint64, k *projections.Keeper) (*projections.Set, *projections.Runner, error) {
	if pos == 0 {
		set := projections.New()
		return set, projections.NewRunner(store, reg, set.Small()...), nil
	}
	set, r, err := projections.FoldTo(ctx, store, reg, pos, k)
	if err != nil {
		return nil, nil, fmt.Errorf("controller: fold to %d: %w", pos, err)
	}
	return set, r, nil
}

// checkpointIn reports whether k keeps a checkpoint in (from, to].
func checkpointIn(k *projections.Keeper, from, to uint64) bool {
	if k == nil {
		return false
	}
	for _, p := range k.Positions() {
		if p > from && p <= to {
			return true
		}
	}
	return false
}

// Diffed is a mesh diff and what explaining its changed resources needs:
// each node's declaration at both ends.
type Diffed struct {
	projections.MeshDiff
	declFrom, declTo map[string]string // node → declaration at each end
}

// DiffBetween is what changed from position from to position to (from <=
// to <= the head): the projections at each end, the events in between, and
// each module's definition at from.
func DiffBetween(ctx context.Context, store events.Store, reg *events.Registry, from, to uint64, k *projections.Keeper) (Diffed, error) {
	set, r, err := viewsAt(ctx, store, reg, from, k)
	if err != nil {
		return Diffed{}, err
	}
	atFrom, err := timeAt(ctx, store, from)
	if err != nil {
		return Diffed{}, err
	}
	a := projections.StateOf(set, from, atFrom)
	switch {
	case to == from:
	case checkpointIn(k, from, to):
		// Nearer from a checkpoint past from than folding on.
		if set, _, err = viewsAt(ctx, store, reg, to, k); err != nil {
			return Diffed{}, err
		}
	default:
		if err := r.CatchUpTo(ctx, to); err != nil {
			return Diffed{}, fmt.Errorf("controller: fold to %d: %w", to, err)
		}
	}
	atTo, err := timeAt(ctx, store, to)
	if err != nil {
		return Diffed{}, err
	}
	b := projections.StateOf(set, to, atTo)
	evs, err := decodedBetween(ctx, store, reg, from, to)
	if err != nil {
		return Diffed{}, err
	}
	before, err := modulesAt(ctx, store, reg, evs, from)
	if err != nil {
		return Diffed{}, err
	}
	d := Diffed{MeshDiff: projections.DiffMesh(a, b, evs, before), declFrom: map[string]string{}, declTo: map[string]string{}}
	for n, st := range a.Nodes {
		d.declFrom[n] = st.Declaration
	}
	for n, st := range b.Nodes {
		d.declTo[n] = st.Declaration
	}
	return d, nil
}

// decodedBetween reads and decodes the events in (from, to]; those of a
// type this build does not know, or that do not decode, are passed over
// (the projections count them).
func decodedBetween(ctx context.Context, store events.Store, reg *events.Registry, from, to uint64) ([]projections.Decoded, error) {
	var out []projections.Decoded
	for after := from; after < to; {
		page, err := store.ReadAll(ctx, after, int(min(to-after, projections.PageSize)))
		if err != nil {
			return nil, fmt.Errorf("controller: diff: read after %d: %w", after, err)
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("controller: diff: the store read nothing after %d, below %d", after, to)
		}
		for _, ev := range page {
			if p, err := reg.Decode(ev); err == nil {
				ev.Data = nil
				out = append(out, projections.Decoded{Event: ev, Payload: p})
			}
		}
		after = page[len(page)-1].Position
	}
	return out, nil
}

// modulesAt is, for each module evs define, its spec at position pos (if
// it was defined then and not removed), read from its stream.
func modulesAt(ctx context.Context, store events.Store, reg *events.Registry, evs []projections.Decoded, pos uint64) (map[string]events.ModuleSpec, error) {
	out := map[string]events.ModuleSpec{}
	seen := map[string]bool{}
	for _, e := range evs {
		v, ok := e.Payload.(events.ModuleDefined)
		if !ok || seen[v.Module] {
			continue
		}
		seen[v.Module] = true
		stream := events.ModuleStream(v.Module)
		mevs, err := store.ReadStream(ctx, stream, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("controller: diff: read %s: %w", stream, err)
		}
		for _, ev := range mevs {
			if ev.Position > pos {
				break
			}
			switch p, _ := reg.Decode(ev); p := p.(type) {
			case events.ModuleDefined:
				out[v.Module] = p.Spec
			case events.ModuleRemoved:
				delete(out, v.Module)
			}
		}
	}
	return out, nil
}

// meshDiffOf is d as the API gives it, each changed resource with the
// fields that changed when the specs of both declarations are known.
func (c *Controller) meshDiffOf(ctx context.Context, d Diffed) (api.MeshDiff, error) {
	out := api.MeshDiff{
		From:    api.DiffEnd{Position: d.From.Position, At: d.From.At},
		To:      api.DiffEnd{Position: d.To.Position, At: d.To.At},
		Events:  d.Events,
		Nodes:   []api.NodeDiff{},
		Modules: mapSlice(d.Modules, moduleDiffOf),
	}
	if out.Modules == nil {
		out.Modules = []api.ModuleDiff{}
	}
	for _, n := range d.Nodes {
		nd := nodeDiffOf(n)
		if len(n.ResourcesChanged) > 0 {
			decl, err := readComposed(ctx, c.store, c.reg, n.Node, d.To.Position)
			if err != nil {
				return api.MeshDiff{}, fmt.Errorf("controller: diff: %w", err)
			}
			for i, rc := range n.ResourcesChanged {
				nd.ResourcesChanged[i].Changes = decl.specChanges(d.declFrom[n.Node], d.declTo[n.Node], rc.Name)
			}
		}
		out.Nodes = append(out.Nodes, nd)
	}
	return out, nil
}

// readComposed reads node's stream up to position to for what
// specChanges needs: each declaration composed and every spec by digest
// (why's readDeclared, without the applies: only the composes decoded).
func readComposed(ctx context.Context, store events.Store, reg *events.Registry, node string, to uint64) (*declared, error) {
	evs, err := store.ReadStream(ctx, events.NodeStream(node), 0, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", events.NodeStream(node), err)
	}
	d := &declared{composed: map[string]events.DeclarationComposed{}, specs: map[string]json.RawMessage{}}
	book := resourceBook(store, reg)
	for _, ev := range evs {
		if ev.Position > to {
			break
		}
		if ev.Type != events.TypeDeclarationComposed {
			continue
		}
		p, err := decodeComposed(ctx, book, reg, ev)
		if err != nil {
			return nil, fmt.Errorf("read %s #%d: %w", events.NodeStream(node), ev.Version, err)
		}
		for dg, spec := range p.Specs {
			d.specs[dg] = spec
		}
		p.Specs = nil
		d.composed[p.Declaration] = p
	}
	return d, nil
}

// specChanges is what each field of resource is in declaration to and was
// in declaration from, as why words it (nodeplan.DeclaredChanges); none when
// either spec is unknown.
func (d *declared) specChanges(from, to, resource string) []api.Change {
	have, ok1 := d.resource(from, resource)
	want, ok2 := d.resource(to, resource)
	if !ok1 || !ok2 {
		return nil
	}
	fields := []string{"module", "mode", "content"}
	if have.Container != nil && want.Container != nil {
		for _, ch := range nodeplan.ContainerChanges(*have.Container, *want.Container) {
			fields = append(fields, ch.Field)
		}
	}
	return mapSlice(nodeplan.DeclaredChanges(have, want, fields), func(ch wire.Change) api.Change { return api.Change(ch) })
}

func diffMarkOf(m projections.EventMark) api.DiffMark { return api.DiffMark(m) }

func diffMarkPtr(m *projections.EventMark) *api.DiffMark {
	if m == nil {
		return nil
	}
	v := diffMarkOf(*m)
	return &v
}

func valueChangeOf(ch *projections.Change) *api.ValueChange {
	if ch == nil {
		return nil
	}
	return &api.ValueChange{From: ch.From, To: ch.To}
}

func nodeDiffOf(n projections.NodeDiff) api.NodeDiff {
	return api.NodeDiff{
		Node: n.Node, Registered: diffMarkPtr(n.Registered), Removed: diffMarkPtr(n.Removed), Adopted: diffMarkPtr(n.Adopted),
		Modules: mapSlice(n.Modules, func(m projections.ModuleEvent) api.ModuleEvent {
			return api.ModuleEvent{DiffMark: diffMarkOf(m.EventMark), Type: m.Type, Module: m.Module}
		}),
		Sync: valueChangeOf(n.Sync), Health: valueChangeOf(n.Health), Composed: n.Composed, Declaration: valueChangeOf(n.Decl),
		RosterAdded: n.RosterAdded, RosterRemoved: n.RosterRemoved,
		ResourcesAdded: n.ResourcesAdded, ResourcesRemoved: n.ResourcesRemoved,
		ResourcesChanged: mapSlice(n.ResourcesChanged, func(r projections.ResourceChange) api.ResourceChange {
			return api.ResourceChange{Name: r.Name, Kind: r.Kind, Module: r.Module, From: r.From, To: r.To}
		}),
		HoldsAppeared: mapSlice(n.HoldsAppeared, holdOf), HoldsCleared: mapSlice(n.HoldsCleared, holdOf),
		ChurnOpened: mapSlice(n.ChurnOpened, episodeOf), ChurnClosed: mapSlice(n.ChurnClosed, episodeOf),
	}
}

func moduleDiffOf(m projections.ModuleDiff) api.ModuleDiff {
	return api.ModuleDiff{
		Module: m.Module, Removed: diffMarkPtr(m.Removed),
		Definitions: mapSlice(m.Definitions, func(d projections.Definition) api.Definition {
			return api.Definition{DiffMark: diffMarkOf(d.EventMark), New: d.New, Fields: d.Fields}
		}),
		Builds: mapSlice(m.Builds, func(b projections.BuildMark) api.BuildMark {
			return api.BuildMark{DiffMark: diffMarkOf(b.EventMark), Name: b.Name, Digest: b.Digest}
		}),
		Deploys: mapSlice(m.Deploys, func(d projections.DeployMark) api.DeployMark {
			return api.DeployMark{DiffMark: diffMarkOf(d.EventMark), By: d.By, Builds: d.Builds}
		}),
	}
}
