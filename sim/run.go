package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/projections"
)

// Config is a simulated run (mesh sim): a mesh of Nodes nodes and Modules
// modules, Passes passes, the faults of a SPEC, all chosen from Seed.
type Config struct {
	Nodes, Modules, Passes int
	Seed                   uint64
	Faults                 []Fault
	// Big is how many nodes carry 330 resources, as the seeds' control
	// node and novox did: ten modules of 11 containers, 11 directories and
	// 11 files. The other nodes carry ModulesPerNode modules of
	// Containers containers and one directory each.
	Big            int
	ModulesPerNode int // 0: 3
	Containers     int // 0: 3
	// Progress, when set, is called after every pass.
	Progress func(PassStats)
	// Clock measures the run's wall time (nil: time.Now). It stamps no
	// event: the mesh's events carry the simulated clock.
	Clock func() time.Time
}

// PassStats is what one pass did.
type PassStats struct {
	Pass          int           `json:"pass"`
	Nodes         int           `json:"nodes"`          // nodes that took the pass
	Events        int           `json:"events"`         // appended during it (operator commands included)
	Bytes         int           `json:"bytes"`          // their records and index entries, counted as RecordBytes
	ComposeFailed int           `json:"compose_failed"` // compose failures recorded (the controller records one once)
	PushFailed    int           `json:"push_failed"`    // sends that failed, recorded
	Heavy         int           `json:"heavy"`          // heavy applies (rule 7, events.Heavy), as the timeline marks them
	Operator      int           `json:"operator"`
	Took          time.Duration `json:"took_ns"`
}

// RecordBytes is what an event costs a boltstore, counted: its record
// (events.AppendRecord) and its three index entries (events key 8, stream
// version → position 16, id → position 24), as BenchmarkIdlePass counts.
func RecordBytes(ev events.Event) int { return len(events.AppendRecord(nil, ev)) + 8 + 16 + 24 }

// Run is a simulated run in progress: the mesh, the faults' plan, and the
// truth of what was injected.
type Run struct {
	Mesh *Mesh
	cfg  Config
	rng  *rand.Rand

	nodes    []string            // every node ever, in order of joining
	active   map[string]bool     // nodes that take passes
	adopted  map[string]bool     // adopted nodes
	assigned map[string][]string // node → modules, in order
	modules  []string
	version  int // the modules' image version (a roll-out bumps it)

	chosen  [][]string       // per fault, the nodes it acts on
	joiners map[int][]string // pass → nodes that join at it
	leavers map[int][]string // pass → nodes that leave at it
	moves   map[int]int      // pass → modules to move at it

	truth   truthKeeper
	legit   map[string][]int // node → passes with an operator command on it
	passEnd []uint64         // store head after pass p (passEnd[0]: after set-up)
	stats   []PassStats
	read    uint64 // store position counted so far
	wall    time.Duration
}

// NewRun sets up cfg's mesh on store: modules defined, nodes registered and
// assigned, the faults' nodes chosen.
func NewRun(ctx context.Context, store events.Store, cfg Config) (*Run, error) {
	if cfg.Nodes < 1 || cfg.Modules < 1 || cfg.Passes < 1 {
		return nil, errors.New("sim: a run needs at least one node, one module and one pass")
	}
	if cfg.Big < 0 || cfg.Big > cfg.Nodes {
		return nil, fmt.Errorf("sim: %d big nodes of %d", cfg.Big, cfg.Nodes)
	}
	if cfg.ModulesPerNode == 0 {
		cfg.ModulesPerNode = 3
	}
	if cfg.Containers == 0 {
		cfg.Containers = 3
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	r := &Run{
		Mesh: New(store), cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6d657368)),
		active: map[string]bool{}, adopted: map[string]bool{}, assigned: map[string][]string{},
		joiners: map[int][]string{}, leavers: map[int][]string{}, moves: map[int]int{},
		legit: map[string][]int{}, version: 1,
	}
	r.truth.init()
	start := cfg.Clock()
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	if err := r.endPass(ctx, PassStats{Pass: 0}, start); err != nil {
		return nil, err
	}
	return r, nil
}

const bigModules = 10

func moduleName(i int) string { return fmt.Sprintf("mod-%03d", i) }
func bigName(i int) string    { return fmt.Sprintf("big-%02d", i) }

// moduleSpec is module name's spec at image version v: small modules have
// c containers, the first mounting the module's one directory; big ones 11
// containers, 11 directories and 11 files.
func moduleSpec(name string, big bool, c, v int) events.ModuleSpec {
	spec := events.ModuleSpec{Routes: []string{name + ".mesh.example"}}
	if big {
		c = 11
	}
	for i := 0; i < c; i++ {
		cs := events.ContainerSpec{
			Name:  fmt.Sprintf("%s-c%02d", name, i),
			Image: fmt.Sprintf("registry.example/%s/c%d:%d", name, i, v),
			Env:   map[string]string{"MODULE": name},
		}
		switch {
		case big:
			dir := fmt.Sprintf("/var/lib/%s/d%02d", name, i)
			spec.Directories = append(spec.Directories, events.DirectorySpec{Path: dir, Mode: "0750"})
			spec.Files = append(spec.Files, events.FileSpec{Path: dir + "/app.conf", Content: fmt.Sprintf("name = %s-%d\n", name, i)})
			cs.Mounts = []events.Mount{{Source: dir, Target: "/data"}}
		case i == 0:
			cs.Mounts = []events.Mount{{Source: "/var/lib/" + name}}
		}
		spec.Containers = append(spec.Containers, cs)
	}
	return spec
}

func (r *Run) defineModules(ctx context.Context) error {
	for i := 0; i < r.cfg.Modules; i++ {
		if err := r.Mesh.Do(ctx, commands.DefineModule{Module: moduleName(i), Spec: moduleSpec(moduleName(i), false, r.cfg.Containers, r.version)}); err != nil {
			return err
		}
	}
	if r.cfg.Big == 0 {
		return nil
	}
	for i := 0; i < bigModules; i++ {
		if err := r.Mesh.Do(ctx, commands.DefineModule{Module: bigName(i), Spec: moduleSpec(bigName(i), true, 0, r.version)}); err != nil {
			return err
		}
	}
	return nil
}

// pick draws f's nodes from pool: Count of them, or Rate of them (at least
// one), without repeats.
func (r *Run) pick(f Fault, pool []string) []string {
	n := f.Count
	if n == 0 {
		n = max(1, int(f.Rate*float64(len(pool))+0.5))
	}
	n = min(n, len(pool))
	perm := r.rng.Perm(len(pool))[:n]
	out := make([]string, n)
	for i, j := range perm {
		out[i] = pool[j]
	}
	slices.Sort(out)
	return out
}

// spread places n things over f's window, one pass each, evenly.
func spread(f Fault, passes, n int) []int {
	from, to := f.From, f.end(passes)
	out := make([]int, n)
	for i := range out {
		out[i] = from
		if to > from && n > 1 {
			out[i] = from + i*(to-from)/(n-1)
		}
	}
	return out
}

func (r *Run) setUp(ctx context.Context) error {
	if err := r.defineModules(ctx); err != nil {
		return err
	}
	for i := 0; i < r.cfg.Modules; i++ {
		r.modules = append(r.modules, moduleName(i))
	}
	initial := make([]string, r.cfg.Nodes)
	for i := range initial {
		initial[i] = NodeName(i)
	}
	// Each fault draws its nodes from the seed, in the order given.
	r.chosen = make([][]string, len(r.cfg.Faults))
	joined := r.cfg.Nodes
	for k, f := range r.cfg.Faults {
		switch f.Kind {
		case FaultJoin:
			n := f.Count
			if n == 0 {
				n = max(1, int(f.Rate*float64(r.cfg.Nodes)+0.5))
			}
			for i, p := range spread(f, r.cfg.Passes, n) {
				name := NodeName(joined + i)
				r.joiners[p] = append(r.joiners[p], name)
				r.chosen[k] = append(r.chosen[k], name)
			}
			joined += n
		case FaultMove:
			n := f.Count
			if n == 0 {
				n = max(1, int(f.Rate*float64(r.cfg.Modules)+0.5))
			}
			for _, p := range spread(f, r.cfg.Passes, n) {
				r.moves[p]++
			}
		case FaultRollout:
		case FaultLeave:
			r.chosen[k] = r.pick(f, initial)
			for i, p := range spread(f, r.cfg.Passes, len(r.chosen[k])) {
				r.leavers[p] = append(r.leavers[p], r.chosen[k][i])
			}
		default:
			r.chosen[k] = r.pick(f, initial)
		}
		if f.Kind == FaultAdopt {
			for _, n := range r.chosen[k] {
				r.adopted[n] = true
			}
		}
	}
	bigEvery := 0
	if r.cfg.Big > 0 {
		bigEvery = r.cfg.Nodes / r.cfg.Big
	}
	for i, node := range initial {
		big := bigEvery > 0 && i%bigEvery == 0 && i/bigEvery < r.cfg.Big
		if err := r.addNode(ctx, node, i, big, 0); err != nil {
			return err
		}
	}
	return nil
}

// addNode registers node i (its settings, adoption, modules) at pass p.
func (r *Run) addNode(ctx context.Context, node string, i int, big bool, p int) error {
	n, err := r.Mesh.AddNode(ctx, node)
	if err != nil {
		return err
	}
	cs := []commands.Command{
		commands.SetNodeSetting{Node: node, Key: events.SettingPrivateAddress, Value: fmt.Sprintf("10.%d.%d.%d", 1+i/62500, i/250%250, i%250+1)},
		commands.SetNodeSetting{Node: node, Key: events.SettingPortPrefix + "store", Value: "6852"},
	}
	if r.adopted[node] {
		cs = append(cs, commands.AdoptNode{Node: node})
	}
	var mods []string
	if big {
		for j := 0; j < bigModules; j++ {
			mods = append(mods, bigName(j))
		}
	} else {
		for j := 0; j < r.cfg.ModulesPerNode; j++ {
			mods = append(mods, moduleName((i*r.cfg.ModulesPerNode+j)%r.cfg.Modules))
		}
	}
	mods = slices.Compact(mods)
	for _, m := range mods {
		cs = append(cs, commands.AssignModule{Module: m, Node: node})
	}
	for _, c := range cs {
		if err := r.Mesh.Do(ctx, c); err != nil {
			return fmt.Errorf("sim: set up %s: %w", node, err)
		}
	}
	if r.adopted[node] {
		// Its first module's data is found on disk: held until taken.
		for _, d := range moduleSpec(mods[0], big, r.cfg.Containers, r.version).Directories {
			if err := n.Runtime.MakeDirectory(d.Path, 0o755); err != nil {
				return err
			}
		}
		if !big {
			if err := n.Runtime.MakeDirectory("/var/lib/"+mods[0], 0o755); err != nil {
				return err
			}
		}
	}
	r.nodes = append(r.nodes, node)
	r.active[node] = true
	r.assigned[node] = mods
	r.operator(node, p, false)
	return nil
}

// operator records an operator command on node at pass p; roster says it
// may change every node's roster.
func (r *Run) operator(node string, p int, roster bool) {
	if l := r.legit[node]; len(l) == 0 || l[len(l)-1] != p {
		r.legit[node] = append(r.legit[node], p)
	}
	r.truth.operator(node, roster)
}

// do runs an operator command on node at pass p.
func (r *Run) do(ctx context.Context, p int, node string, c commands.Command, roster bool, st *PassStats) error {
	if err := r.Mesh.Do(ctx, c); err != nil {
		return fmt.Errorf("sim: pass %d: %T on %s: %w", p, c, node, err)
	}
	st.Operator++
	r.operator(node, p, roster)
	return nil
}

// Passes runs the remaining passes.
func (r *Run) Passes(ctx context.Context) error {
	for p := len(r.passEnd); p <= r.cfg.Passes; p++ {
		if err := r.Pass(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// Pass runs pass p (from 1): the operators' commands and faults it calls
// for, then the controller's pass (Mesh.PushChanged: every node composed,
// what changed pushed, as mesh up pushes every interval), then an apply on
// every active node of what it last received.
func (r *Run) Pass(ctx context.Context, p int) error {
	start := r.cfg.Clock()
	st := PassStats{Pass: p}
	if err := r.operators(ctx, p, &st); err != nil {
		return err
	}
	// Faults of this pass.
	var lossy []string
	removes := map[string]bool{}
	reads := false // a store read fails: every compose of the pass fails
	r.Mesh.Store.Recover()
	for k, f := range r.cfg.Faults {
		switch f.Kind {
		case FaultReads:
			if f.Hits(p, r.cfg.Passes) {
				for _, n := range r.chosen[k] {
					r.Mesh.Store.FailReads(n, false)
					reads = true
				}
			}
		case FaultLossy:
			if f.Hits(p, r.cfg.Passes) {
				lossy = append(lossy, r.chosen[k]...)
			}
		case FaultRemove:
			if f.Active(p, r.cfg.Passes) {
				for _, n := range r.chosen[k] {
					removes[n] = true
				}
			}
		case FaultCut:
			if p == f.From {
				for _, n := range r.chosen[k] {
					if err := r.Mesh.CutBus(n); err != nil {
						return err
					}
				}
			}
		}
	}
	r.Mesh.SetLossy(lossy...)
	// Something outside removes the containers of the chosen nodes.
	removed := map[string]bool{}
	for _, node := range r.nodes {
		if r.active[node] && removes[node] {
			n, err := r.Mesh.Node(node)
			if err != nil {
				return err
			}
			removed[node] = n.Runtime.RemoveAllContainers() > 0
		}
	}
	// The controller's pass. A node's failed compose or send is recorded on
	// its stream (and counted by endPass).
	if err := r.Mesh.PushChanged(ctx); err != nil {
		return fmt.Errorf("sim: pass %d: push: %w", p, err)
	}
	if !reads {
		r.composedTruth(p, lossy)
	}
	for _, node := range r.nodes {
		if !r.active[node] {
			continue
		}
		st.Nodes++
		_, applied, err := r.Mesh.Apply(ctx, node)
		if err != nil {
			return fmt.Errorf("sim: pass %d: %w", p, err)
		}
		r.truth.pass(node, p, applied && removed[node])
	}
	// The world makes the containers of the chosen nodes crash, or fail
	// their health check, through a window (after the pass's applies, so
	// that they exist), and stops at its end.
	if err := r.workloadFaults(p); err != nil {
		return err
	}
	// Reads recover between passes: the operators' commands of the next
	// pass go through.
	r.Mesh.Store.Recover()
	r.Mesh.SetLossy()
	// Bus cuts end after their window: the agents deliver what they kept.
	for k, f := range r.cfg.Faults {
		if f.Kind == FaultCut && p == f.end(r.cfg.Passes) {
			for _, n := range r.chosen[k] {
				if err := r.Mesh.RestoreBus(ctx, n); err != nil {
					return err
				}
			}
		}
	}
	for _, n := range r.leavers[p] {
		r.active[n] = false // it applied the release: switched off
	}
	r.truth.endPass(p)
	return r.endPass(ctx, st, start)
}

// workloadFaults starts the crash and unhealthy faults at the end of
// their window's first pass, and ends them at the end of its last.
func (r *Run) workloadFaults(p int) error {
	for k, f := range r.cfg.Faults {
		if f.Kind != FaultCrash && f.Kind != FaultUnhealthy {
			continue
		}
		start, end := p == f.From, p == f.end(r.cfg.Passes)
		if !start && !end {
			continue
		}
		for _, node := range r.chosen[k] {
			n, err := r.Mesh.Follow(node)
			if err != nil {
				return err
			}
			for _, c := range n.Runtime.Names() {
				switch {
				case start && f.Kind == FaultCrash:
					err = n.Runtime.ExitAtStart(c, 1, c+": exited with code 1 (injected crash)")
				case start:
					err = n.Runtime.Unhealthy(c, "injected: health check failed")
				case f.Kind == FaultCrash:
					err = n.Runtime.RunsAgain(c)
				default:
					err = n.Runtime.Healthy(c)
				}
				if err != nil {
					return fmt.Errorf("sim: pass %d: %s on %s: %w", p, f.Kind, node, err)
				}
			}
		}
	}
	return nil
}

// composedTruth tells the truth what every registered node's compose of
// pass p was composed from (the controller composes every node, those that
// left too): which other nodes with a module were read lossily.
func (r *Run) composedTruth(p int, lossy []string) {
	var feeding []string // lossy nodes whose modules route names
	for _, n := range lossy {
		if len(r.assigned[n]) > 0 {
			feeding = append(feeding, n)
		}
	}
	slices.Sort(feeding)
	feeding = slices.Compact(feeding)
	for _, node := range r.nodes {
		r.truth.composed(node, p, slices.DeleteFunc(slices.Clone(feeding), func(n string) bool { return n == node }))
	}
}

// operators runs pass p's operator commands: joins, leaves, bursts, moves,
// a roll-out, takes.
func (r *Run) operators(ctx context.Context, p int, st *PassStats) error {
	for _, node := range r.joiners[p] {
		i := len(r.nodes)
		if err := r.addNode(ctx, node, i, false, p); err != nil {
			return err
		}
		st.Operator += 2 + len(r.assigned[node])
		r.truth.operator("", true)
	}
	for _, node := range r.leavers[p] {
		for _, m := range r.assigned[node] {
			if err := r.do(ctx, p, node, commands.ReleaseModule{Module: m, Node: node}, true, st); err != nil {
				return err
			}
		}
		r.assigned[node] = nil
	}
	for k, f := range r.cfg.Faults {
		switch {
		case f.Kind == FaultBurst && f.Active(p, r.cfg.Passes):
			for _, node := range r.chosen[k] {
				if !r.active[node] || len(r.assigned[node]) >= len(r.modules) {
					continue
				}
				m := r.unassigned(node)
				if err := r.do(ctx, p, node, commands.AssignModule{Module: m, Node: node}, true, st); err != nil {
					return err
				}
				r.assigned[node] = append(r.assigned[node], m)
				if r.adopted[node] {
					if err := r.do(ctx, p, node, commands.TakeModule{Module: m, Node: node}, false, st); err != nil {
						return err
					}
				}
			}
		case f.Kind == FaultRollout && p == f.From:
			r.version++
			for _, m := range r.modules {
				if err := r.Mesh.Do(ctx, commands.DefineModule{Module: m, Spec: moduleSpec(m, false, r.cfg.Containers, r.version)}); err != nil {
					return err
				}
				st.Operator++
			}
			if r.cfg.Big > 0 {
				for i := 0; i < bigModules; i++ {
					if err := r.Mesh.Do(ctx, commands.DefineModule{Module: bigName(i), Spec: moduleSpec(bigName(i), true, 0, r.version)}); err != nil {
						return err
					}
					st.Operator++
				}
			}
			for _, node := range r.nodes {
				if len(r.assigned[node]) > 0 {
					r.operator(node, p, false)
				}
			}
		case f.Kind == FaultAdopt && f.To > 0 && p == f.To+1:
			for _, node := range r.chosen[k] {
				if !r.active[node] || len(r.assigned[node]) == 0 {
					continue
				}
				if err := r.do(ctx, p, node, commands.TakeModule{Module: r.assigned[node][0], Node: node}, false, st); err != nil {
					return err
				}
			}
		}
	}
	for range r.moves[p] {
		if err := r.move(ctx, p, st); err != nil {
			return err
		}
	}
	return nil
}

// unassigned is the first module not assigned to node.
func (r *Run) unassigned(node string) string {
	for _, m := range r.modules {
		if !slices.Contains(r.assigned[node], m) {
			return m
		}
	}
	return ""
}

// move moves a module, drawn from the seed, from an active node that has
// it to another that has not.
func (r *Run) move(ctx context.Context, p int, st *PassStats) error {
	m := r.modules[r.rng.IntN(len(r.modules))]
	var holders, others []string
	for _, n := range r.nodes {
		if !r.active[n] {
			continue
		}
		if slices.Contains(r.assigned[n], m) {
			holders = append(holders, n)
		} else {
			others = append(others, n)
		}
	}
	if len(holders) == 0 || len(others) == 0 {
		return nil
	}
	from, to := holders[r.rng.IntN(len(holders))], others[r.rng.IntN(len(others))]
	if err := r.do(ctx, p, from, commands.ReleaseModule{Module: m, Node: from}, true, st); err != nil {
		return err
	}
	r.assigned[from] = slices.DeleteFunc(r.assigned[from], func(s string) bool { return s == m })
	if err := r.do(ctx, p, to, commands.AssignModule{Module: m, Node: to}, true, st); err != nil {
		return err
	}
	r.assigned[to] = append(r.assigned[to], m)
	if r.adopted[to] {
		return r.do(ctx, p, to, commands.TakeModule{Module: m, Node: to}, false, st)
	}
	return nil
}

// endPass counts what the pass appended, catches the projections up, and
// reports progress. The pass's time, from start, includes the projections'
// catch-up (a controller's work) and the counting (the simulator's, small).
func (r *Run) endPass(ctx context.Context, st PassStats, start time.Time) error {
	for {
		page, err := r.Mesh.Store.ReadAll(ctx, r.read, 4096)
		if err != nil {
			return fmt.Errorf("sim: count pass %d: %w", st.Pass, err)
		}
		if len(page) == 0 {
			break
		}
		for _, ev := range page {
			st.Events++
			st.Bytes += RecordBytes(ev)
			switch ev.Type {
			case events.TypeDeclarationComposeFailed:
				st.ComposeFailed++
			case events.TypeDeclarationPushFailed:
				st.PushFailed++
			}
		}
		r.read = page[len(page)-1].Position
	}
	var from uint64 // the store's head before the pass
	if n := len(r.passEnd); n > 0 {
		from = r.passEnd[n-1]
	}
	r.passEnd = append(r.passEnd, r.read)
	if err := r.Mesh.CatchUp(ctx); err != nil {
		return fmt.Errorf("sim: pass %d: projections: %w", st.Pass, err)
	}
	// The pass's heavy applies, as the timeline weighed them (rule 7's one
	// function, events.Heavy).
	for _, en := range r.Mesh.Views.Timeline.Query(projections.Filter{Type: events.TypeApplyReported, After: from, Before: r.read + 1}) {
		if en.Heavy {
			st.Heavy++
		}
	}
	st.Took = r.cfg.Clock().Sub(start)
	r.wall += st.Took
	r.stats = append(r.stats, st)
	if r.cfg.Progress != nil {
		r.cfg.Progress(st)
	}
	return nil
}

// PassOf is the pass during which position was appended (0: the set-up).
func (r *Run) PassOf(position uint64) int {
	p, _ := slices.BinarySearch(r.passEnd, position)
	return p
}

// Stats returns every pass's stats, the set-up's first.
func (r *Run) Stats() []PassStats { return slices.Clone(r.stats) }

// Wall is the run's wall time so far, by Config.Clock.
func (r *Run) Wall() time.Duration { return r.wall }

// Truth returns the churn the run injected, by node then start.
func (r *Run) Truth() []TruthEpisode { return r.truth.all() }

// Legit returns, per node, the passes that had an operator command on it.
func (r *Run) Legit() map[string][]int { return r.legit }

// Nodes returns every node of the run, in order of joining.
func (r *Run) Nodes() []string { return slices.Clone(r.nodes) }

// Config is the run's configuration, defaults filled in.
func (r *Run) Config() Config { return r.cfg }
