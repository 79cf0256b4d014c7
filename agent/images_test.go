package agent_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// puller is the simulated runtime with an engine's image store: images it
// holds, images its registry has, the rest cannot be had. It records every
// call in order, so a test sees a pull come before a removal.
type puller struct {
	*simruntime.Runtime
	mu       sync.Mutex
	held     map[string]bool
	registry map[string]bool
	calls    []string
}

func newPuller(held, registry []string) *puller {
	p := &puller{Runtime: simruntime.New(), held: map[string]bool{}, registry: map[string]bool{}}
	for _, h := range held {
		p.held[h] = true
	}
	for _, r := range registry {
		p.registry[r] = true
	}
	return p
}

func (p *puller) log(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
}

func (p *puller) PullImage(_ context.Context, ref string) error {
	p.log("pull " + ref)
	return p.pull(ref)
}

func (p *puller) pull(ref string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[ref] {
		return nil
	}
	if !p.registry[ref] {
		return fmt.Errorf("manifest unknown: %s", ref)
	}
	p.held[ref] = true
	return nil
}

func (p *puller) CheckImage(_ context.Context, ref string) (agent.ImageCheck, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.held[ref]:
		return agent.ImageCheck{State: agent.ImagePresent}, nil
	case p.registry[ref]:
		return agent.ImageCheck{State: agent.ImagePullable}, nil
	}
	return agent.ImageCheck{State: agent.ImageUnavailable, Detail: "manifest unknown"}, nil
}

func (p *puller) RemoveContainer(ctx context.Context, name string) error {
	p.log("remove " + name)
	return p.Runtime.RemoveContainer(ctx, name)
}

func (p *puller) CreateContainer(ctx context.Context, c agent.Container) error {
	p.log("create " + c.Name)
	if err := p.pull(c.Spec.Image); err != nil { // as the engine: a create pulls what it lacks
		return fmt.Errorf("create %s: %w", c.Name, err)
	}
	return p.Runtime.CreateContainer(ctx, c)
}

func fixedNow() time.Time { return epoch }

// TestPullBeforeStop (issue 34, section 4): a roll-out whose new image
// cannot be pulled stops nothing: the container it would replace keeps
// running with its old spec, the resource fails naming the image, a
// removal of the same module is held back, and another module rolls out.
func TestPullBeforeStop(t *testing.T) {
	const old, good, bad = "forge/web:1", "forge/web:2", "forge/web:broken"
	tests := []struct {
		name        string
		next        []declaration.Resource
		wantFailed  []string
		running     map[string]string // container → the image it runs after
		gone        []string
		wantCreated []string
	}{
		{name: "new image pulls", next: []declaration.Resource{ctr("web", "forge", image(good)), ctr("worker", "forge", image(old)), ctr("proxy", "edge", image("caddy:2"))},
			running: map[string]string{"web": good, "worker": old, "proxy": "caddy:2"}},
		{name: "new image missing", next: []declaration.Resource{ctr("web", "forge", image(bad)), ctr("worker", "forge", image(old)), ctr("proxy", "edge", image("caddy:3"))},
			wantFailed: []string{"web"}, running: map[string]string{"web": old, "worker": old, "proxy": "caddy:3"}},
		{name: "renamed container, missing image", next: []declaration.Resource{ctr("web2", "forge", image(bad)), ctr("worker", "forge", image(old)), ctr("proxy", "edge", image("caddy:2"))},
			wantFailed: []string{"web", "web2"}, running: map[string]string{"web": old, "worker": old, "proxy": "caddy:2"}},
		{name: "another module's removal goes on", next: []declaration.Resource{ctr("web", "forge", image(bad)), ctr("worker", "forge", image(old))},
			wantFailed: []string{"web"}, running: map[string]string{"web": old, "worker": old}, gone: []string{"proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPuller([]string{old, "caddy:2"}, []string{good, "caddy:3"})
			fx := &fixture{rt: p.Runtime, box: agent.NewMemOutbox(), sink: &sink{}}
			ag, err := agent.New(agent.Config{Node: "novox", Runtime: p, Outbox: fx.box, Deliver: fx.sink.deliver, Now: fixedNow, NewID: ids()})
			if err != nil {
				t.Fatal(err)
			}
			first := decl("novox/1", ctr("web", "forge", image(old)), ctr("worker", "forge", image(old)), ctr("proxy", "edge", image("caddy:2")))
			if rep, err := ag.Apply(context.Background(), first); err != nil || len(rep.Outcome.Failed) > 0 {
				t.Fatalf("first apply: %v %+v", err, rep.Outcome.Failed)
			}
			p.calls = nil
			rep, err := ag.Apply(context.Background(), decl("novox/2", tt.next...))
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, f := range rep.Outcome.Failed {
				failed = append(failed, f.Name)
				if !strings.Contains(f.Error, bad) || !strings.Contains(f.Error, agent.ErrImageUnavailable.Error()) {
					t.Errorf("%s failed with %q: want it to name the image %s", f.Name, f.Error, bad)
				}
			}
			if !slices.Equal(failed, tt.wantFailed) {
				t.Errorf("failed %v, want %v (%+v)", failed, tt.wantFailed, rep.Outcome.Failed)
			}
			for name, img := range tt.running {
				c, ok := p.Container(name)
				if !ok || !p.Running(name) || c.Image != img {
					t.Errorf("%s: running %v with %q, want running %q", name, p.Running(name), c.Image, img)
				}
			}
			for _, name := range tt.gone {
				if _, ok := p.Container(name); ok {
					t.Errorf("%s still there", name)
				}
			}
			// Every pull comes before the first removal or create.
			lastPull, firstStop := -1, len(p.calls)
			for i, c := range p.calls {
				if strings.HasPrefix(c, "pull ") {
					lastPull = i
				} else if firstStop == len(p.calls) {
					firstStop = i
				}
			}
			if lastPull > firstStop {
				t.Errorf("a pull after a removal or create: %v", p.calls)
			}
		})
	}
}

// TestDryRunChecksImages: a dry run on a runtime that pulls says, for each
// image a create or replace needs, whether it is present, pullable or
// unavailable, and pulls nothing.
func TestDryRunChecksImages(t *testing.T) {
	p := newPuller([]string{"forge/web:1"}, []string{"forge/web:2"})
	ag, err := agent.New(agent.Config{Node: "novox", Runtime: p, Outbox: agent.NewMemOutbox(), Deliver: (&sink{}).deliver, Now: fixedNow, NewID: ids()})
	if err != nil {
		t.Fatal(err)
	}
	d := decl("novox/1",
		ctr("web", "forge", image("forge/web:1")), ctr("api", "forge", image("forge/web:2")),
		ctr("worker", "forge", image("forge/web:2")), ctr("ghost", "forge", image("forge/ghost:1")))
	pv, err := ag.DryRun(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.ImageCheck{
		{Image: "forge/web:2", State: agent.ImagePullable, Containers: []string{"api", "worker"}},
		{Image: "forge/ghost:1", State: agent.ImageUnavailable, Detail: "manifest unknown", Containers: []string{"ghost"}},
		{Image: "forge/web:1", State: agent.ImagePresent, Containers: []string{"web"}},
	}
	if !reflect.DeepEqual(pv.Images, want) {
		t.Errorf("images %+v\nwant %+v", pv.Images, want)
	}
	if len(p.calls) != 0 {
		t.Errorf("the dry run pulled or changed: %v", p.calls)
	}
	// The simulated runtime alone pulls nothing and says nothing of images.
	fx := newFixture(t)
	if pv, err := fx.ag.DryRun(context.Background(), d); err != nil || pv.Images != nil {
		t.Errorf("simulated runtime: images %+v, %v; want none", pv.Images, err)
	}
}

// slowPuller is a puller whose registry answers for one image only after
// the dry run's budget, and panics for another.
type slowPuller struct{ *puller }

func (p slowPuller) CheckImage(ctx context.Context, ref string) (agent.ImageCheck, error) {
	switch ref {
	case "forge/slow:1":
		<-ctx.Done()
		return agent.ImageCheck{}, ctx.Err()
	case "forge/bug:1":
		panic("a checker's bug")
	}
	return p.puller.CheckImage(ctx, ref)
}

// TestDryRunImagesWithinABudget: a registry that does not answer makes its
// image unknown within agent.ImageCheckBudget, not the whole dry run late,
// a checker's panic makes its image unknown, and the others are answered.
func TestDryRunImagesWithinABudget(t *testing.T) {
	p := slowPuller{newPuller([]string{"forge/web:1"}, nil)}
	ag, err := agent.New(agent.Config{Node: "novox", Runtime: p, Outbox: agent.NewMemOutbox(), Deliver: (&sink{}).deliver, Now: fixedNow, NewID: ids()})
	if err != nil {
		t.Fatal(err)
	}
	d := decl("novox/1", ctr("web", "forge", image("forge/web:1")), ctr("slow", "forge", image("forge/slow:1")), ctr("bug", "forge", image("forge/bug:1")))
	start := time.Now()
	pv, err := ag.DryRun(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > agent.ImageCheckBudget+time.Second {
		t.Errorf("the dry run took %v, over the budget %v", el, agent.ImageCheckBudget)
	}
	got := map[string]string{}
	for _, ic := range pv.Images {
		got[ic.Image] = ic.State
	}
	want := map[string]string{"forge/web:1": agent.ImagePresent, "forge/slow:1": agent.ImageUnknown, "forge/bug:1": agent.ImageUnknown}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v (%+v)", got, want, pv.Images)
	}
}
