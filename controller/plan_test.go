package controller_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// planWorld is a simulated mesh the generated changes act on: nodes a
// (adopted) and b, modules web and proxy, their specs as last defined.
type planWorld struct {
	t     *testing.T
	ctx   context.Context
	m     *sim.Mesh
	specs map[string]events.ModuleSpec
	r     *rand.Rand
}

func (w *planWorld) do(c commands.Command) {
	w.t.Helper()
	if err := w.m.Do(w.ctx, c); err != nil {
		w.t.Fatalf("%T %+v: %v", c, c, err)
	}
}

func (w *planWorld) define(module string, edit func(*events.ModuleSpec)) string {
	s := w.specs[module]
	s.Containers = slices.Clone(s.Containers)
	for i := range s.Containers {
		s.Containers[i].Mounts = slices.Clone(s.Containers[i].Mounts)
	}
	s.Files = slices.Clone(s.Files)
	edit(&s)
	w.specs[module] = s
	w.do(commands.DefineModule{Module: module, Spec: s})
	return "define " + module
}

// change makes one generated change and says what it was.
func (w *planWorld) change() string {
	mod := []string{"web", "proxy"}[w.r.IntN(2)]
	node := []string{"a", "b"}[w.r.IntN(2)]
	n := w.r.IntN(1000)
	switch w.r.IntN(9) {
	case 0: // a data path moves on the host (seed 002)
		return w.define(mod, func(s *events.ModuleSpec) {
			c := &s.Containers[0]
			c.Mounts[0].Source = fmt.Sprintf("/srv/%s-%d", mod, n)
		}) + ": mount moved"
	case 1:
		return w.define(mod, func(s *events.ModuleSpec) { s.Containers[1].Image = fmt.Sprintf("registry.example/%s:%d", mod, n) }) + ": image"
	case 2:
		return w.define(mod, func(s *events.ModuleSpec) { s.Containers[1].Env = map[string]string{"N": fmt.Sprint(n)} }) + ": env"
	case 3:
		return w.define(mod, func(s *events.ModuleSpec) {
			s.Files = []events.FileSpec{{Path: fmt.Sprintf("/etc/%s.conf", mod), Content: fmt.Sprint(n)}}
		}) + ": file"
	case 4:
		return w.define(mod, func(s *events.ModuleSpec) {
			if len(s.Containers) > 2 {
				s.Containers = s.Containers[:2]
			} else {
				s.Containers = append(s.Containers, events.ContainerSpec{Name: mod + "-extra", Image: "registry.example/extra:1"})
			}
		}) + ": a container more or less"
	case 5:
		for _, c := range []commands.Command{commands.AssignModule{Module: mod, Node: node}, commands.ReleaseModule{Module: mod, Node: node}} {
			if err := w.m.Do(w.ctx, c); err == nil {
				return fmt.Sprintf("%T %s on %s", c, mod, node)
			}
		}
		return "nothing"
	case 6:
		if err := w.m.Do(w.ctx, commands.TakeModule{Module: mod, Node: "a"}); err != nil {
			return "take refused: " + err.Error()
		}
		return "take " + mod
	case 7: // data found on the adopted node, for a module perhaps not taken
		nd, err := w.m.Node("a")
		if err != nil {
			w.t.Fatal(err)
		}
		p := w.specs[mod].Containers[0].Mounts[0].Source
		if err := nd.Runtime.MakeDirectory(p, 0o700); err != nil {
			return "found " + p + ": " + err.Error()
		}
		return "found " + p + " on a"
	default: // the world outside removes containers
		nd, err := w.m.Node(node)
		if err != nil {
			w.t.Fatal(err)
		}
		return fmt.Sprintf("%d container(s) removed on %s", nd.Runtime.RemoveAllContainers(), node)
	}
}

// TestPlanIsWhatThePassDoes holds plan and pass together: for generated
// changes (mount moves, images, env, files, containers added and removed,
// assigns, releases, takes, data found on an adopted node, containers
// removed behind the mesh's back), what the plan of a node predicted is what
// the push and apply after it did, resource by resource.
func TestPlanIsWhatThePassDoes(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ctx := context.Background()
			w := &planWorld{t: t, ctx: ctx, m: sim.New(memstore.New()), specs: map[string]events.ModuleSpec{}, r: rand.New(rand.NewPCG(seed, 2))}
			for _, node := range []string{"a", "b"} {
				if _, err := w.m.AddNode(ctx, node); err != nil {
					t.Fatal(err)
				}
			}
			w.do(commands.AdoptNode{Node: "a"})
			for _, mod := range []string{"web", "proxy"} {
				w.define(mod, func(s *events.ModuleSpec) {
					s.Routes = []string{mod + ".mesh.example"}
					for c := 0; c < 2; c++ {
						cs := events.ContainerSpec{Name: fmt.Sprintf("%s-%d", mod, c), Image: "registry.example/" + mod + ":1"}
						if c == 0 {
							cs.Mounts = []events.Mount{{Source: "/var/lib/" + mod, Target: "/data"}}
						}
						s.Containers = append(s.Containers, cs)
					}
				})
			}
			w.do(commands.AssignModule{Module: "web", Node: "a"})
			w.do(commands.AssignModule{Module: "proxy", Node: "b"})
			var log []string
			ranBefore := map[string]bool{} // node → its last apply had resources
			for step := 0; step < 6; step++ {
				log = append(log, w.change())
				for _, node := range []string{"a", "b"} {
					if err := w.m.CatchUp(ctx); err != nil {
						t.Fatal(err)
					}
					np, err := controller.PlanNode(ctx, controller.Planning{
						Reader: w.m.Handler, Store: w.m.Store, Registry: w.m.Registry, DryRun: w.m, Status: w.m.Views.Status,
					}, node)
					if err != nil {
						t.Fatal(err)
					}
					if np.Source != api.PlanByAgent {
						t.Fatalf("%s planned by %s: %s", node, np.Source, np.NoAnswer+np.ComposeError)
					}
					rep, ok, err := w.m.Pass(ctx, node)
					if err != nil || !ok {
						t.Fatalf("pass on %s: %v (applied %v)", node, err, ok)
					}
					if d := controller.Diverges(np.Outcome, rep.Outcome); d != "" {
						t.Fatalf("step %d on %s: the pass did not do what the plan said: %s\nchanges: %s\nplan: %s", step, node, d, strings.Join(log, "; "), np.Headline)
					}
					if testing.Verbose() {
						t.Logf("%s: %s: %s", log[len(log)-1], node, np.Headline)
					}
					// The pass's heavy, as every surface weighs it (rule 7's one
					// function, events.Heavy): the timeline's entry for its apply.
					if err := w.m.CatchUp(ctx); err != nil {
						t.Fatal(err)
					}
					last := w.m.Views.Timeline.Query(projections.Filter{Node: node, Type: events.TypeApplyReported, Limit: 1})
					if len(last) != 1 {
						t.Fatalf("step %d on %s: no apply in the timeline", step, node)
					}
					// Except a first deploy (the node had no resource applied
					// before): churn is of a running node, and the plan says
					// it is not heavy.
					switch first := !ranBefore[node]; {
					case first && np.Heavy:
						t.Fatalf("step %d on %s: a first deploy planned heavy: %s", step, node, np.Headline)
					case !first && np.Heavy != last[0].Heavy:
						t.Fatalf("step %d on %s: the plan's heavy %v, the pass's %v", step, node, np.Heavy, !np.Heavy)
					}
					ranBefore[node] = rep.Outcome.Sent > 0
				}
			}
		})
	}
}

// TestPlanHeavyIsTheChurnRule: a plan is heavy by rule 7's one function
// (events.Heavy), as the churn detector and the timeline weigh the pass
// after it: every container of a node whose files outnumber them is heavy,
// and a container its last apply failed to create, created now, is a
// retry, not a heavy plan.
func TestPlanHeavyIsTheChurnRule(t *testing.T) {
	ctx := context.Background()
	m := sim.New(memstore.New())
	nd, err := m.AddNode(ctx, "novox")
	if err != nil {
		t.Fatal(err)
	}
	spec := func(image string) events.ModuleSpec {
		s := events.ModuleSpec{}
		for i := range 2 {
			s.Containers = append(s.Containers, events.ContainerSpec{Name: fmt.Sprintf("forge-%d", i), Image: image})
		}
		for i := range 6 {
			s.Files = append(s.Files, events.FileSpec{Path: fmt.Sprintf("/etc/forge/%d.conf", i), Content: "x"})
		}
		return s
	}
	do := func(c commands.Command) {
		t.Helper()
		if err := m.Do(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	plan := func() api.NodePlan {
		t.Helper()
		if err := m.CatchUp(ctx); err != nil {
			t.Fatal(err)
		}
		np, err := controller.PlanNode(ctx, controller.Planning{
			Reader: m.Handler, Store: m.Store, Registry: m.Registry, DryRun: m, Status: m.Views.Status,
		}, "novox")
		if err != nil {
			t.Fatal(err)
		}
		return np
	}
	pass := func() {
		t.Helper()
		if _, _, err := m.Pass(ctx, "novox"); err != nil {
			t.Fatal(err)
		}
	}
	do(commands.DefineModule{Module: "forge", Spec: spec("registry.example/forge:1")})
	do(commands.AssignModule{Module: "forge", Node: "novox"})
	// The first apply cannot create one container (no image yet).
	nd.Runtime.FailNext("create", 1, errors.New("image unavailable"))
	pass()
	if np := plan(); np.Heavy {
		t.Errorf("the retry of a container the last apply failed is heavy: %s", np.Headline)
	}
	pass()
	// A new image for both containers: 2 of 8 resources, 2 of 2 containers.
	do(commands.DefineModule{Module: "forge", Spec: spec("registry.example/forge:2")})
	np := plan()
	if !np.Heavy || !strings.Contains(np.Headline, "HEAVY") || !strings.Contains(np.Headline, "2 of the declaration's 2 container(s)") {
		t.Errorf("every container replaced, a quarter of the resources: heavy %v: %s", np.Heavy, np.Headline)
	}
}
