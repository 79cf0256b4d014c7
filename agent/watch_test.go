package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// watchedSim is a simulated node whose changes the test tells (as the
// Docker runtime tells the engine's events).
type watchedSim struct {
	*simruntime.Runtime
	changes chan string
}

func (w watchedSim) Changes(context.Context) (<-chan string, error) { return w.changes, nil }

// TestRunPassesOnRuntimeChange: a running agent whose drift check is an
// hour away makes a pass as soon as its runtime says something changed
// behind its back (a burst of changes is one pass), and reports what it
// found.
func TestRunPassesOnRuntimeChange(t *testing.T) {
	src := &chanSource{ch: make(chan declaration.Declaration, 1)}
	rep := &cutReporter{}
	cfg := runConfig(src, rep, agent.NewMemOutbox())
	rt := watchedSim{Runtime: simruntime.New(), changes: make(chan string, 1)}
	cfg.Runtime = rt
	startRun(t, cfg)

	src.ch <- decl("d1", forge("/srv/forge")...)
	waitFor(t, "the first report", func() bool { return len(rep.reports()) == 1 })
	rt.RemoveAllContainers() // behind the agent's back
	for _, what := range []string{"container web: die", "container web: destroy"} {
		rt.changes <- what
	}
	waitFor(t, "a pass recreating web", func() bool { return len(rep.reports()) >= 2 })
	time.Sleep(500 * time.Millisecond) // a second pass for the burst would be here by now
	got := rep.reports()
	if len(got) != 2 || !slices.Equal(got[1].Outcome.Created, []string{"web"}) {
		t.Fatalf("reports %+v: want one pass after the burst, web created", got)
	}
}
