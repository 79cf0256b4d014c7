package agent_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"meshplane/agent"
	"meshplane/declaration"
	"meshplane/internal/safego"
)

// panickyRuntime is a runtime whose observation panics while boom is set.
type panickyRuntime struct {
	agent.Runtime
	boom atomic.Bool
}

func (r *panickyRuntime) ListContainers(ctx context.Context) ([]agent.Container, error) {
	if r.boom.Load() {
		panic("runtime bug")
	}
	return r.Runtime.ListContainers(ctx)
}

// panickyReporter panics on its first delivery, then takes reports.
type panickyReporter struct {
	cutReporter
	once sync.Once
}

func (r *panickyReporter) Report(ctx context.Context, rep agent.Report) (bool, error) {
	r.once.Do(func() { panic("bus client bug") })
	return r.cutReporter.Report(ctx, rep)
}

// TestRunCarriesOnAfterAPanic: an apply that panics (in the runtime) is
// counted and skipped, and the next declaration is applied and reported;
// a delivery that panics leaves its report kept, and it is delivered
// once, later. Run goes on and stops cleanly.
func TestRunCarriesOnAfterAPanic(t *testing.T) {
	t.Run("apply", func(t *testing.T) {
		src := &chanSource{ch: make(chan declaration.Declaration, 1)}
		rep := &cutReporter{}
		cfg := runConfig(src, rep, agent.NewMemOutbox())
		rt := &panickyRuntime{Runtime: cfg.Runtime}
		cfg.Runtime = rt
		before := safego.Panics()["agent.apply"]
		startRun(t, cfg)

		rt.boom.Store(true)
		src.ch <- decl("d1", forge("/srv/forge")...)
		waitFor(t, "the panic counted", func() bool { return safego.Panics()["agent.apply"] == before+1 })
		rt.boom.Store(false)
		src.ch <- decl("d2", routeProxy()...)
		waitFor(t, "d2's report", func() bool { return len(rep.reports()) == 1 })
		if got := rep.reports()[0].Outcome.Declaration; got != "d2" {
			t.Errorf("reported %s, want d2 (d1's apply panicked before it applied anything)", got)
		}
	})
	t.Run("delivery", func(t *testing.T) {
		src := &chanSource{ch: make(chan declaration.Declaration, 1)}
		rep := &panickyReporter{}
		before := safego.Panics()["agent.apply"]
		startRun(t, runConfig(src, rep, agent.NewMemOutbox()))

		src.ch <- decl("d1", forge("/srv/forge")...)
		waitFor(t, "d1's report, after the panic", func() bool { return len(rep.reports()) == 1 })
		if d := safego.Panics()["agent.apply"] - before; d != 1 {
			t.Errorf("agent.apply panics counted %d, want 1", d)
		}
		if got := rep.reports()[0]; got.Outcome.Declaration != "d1" {
			t.Errorf("reported %+v", got.Outcome)
		}
	})
}
