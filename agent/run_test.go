package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// chanSource is a Source fed by the test.
type chanSource struct {
	ch  chan declaration.Declaration
	err error
}

func (s *chanSource) Declarations(context.Context) (<-chan declaration.Declaration, error) {
	return s.ch, s.err
}

// cutReporter is a Reporter that can be cut; it keeps what it took, by
// apply id, as the bus's stream (deduplicating) would.
type cutReporter struct {
	mu    sync.Mutex
	cut   bool
	taken []agent.Report
	seen  map[string]bool
	tries int
}

func (r *cutReporter) Report(_ context.Context, rep agent.Report) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	if r.cut {
		return false, errors.New("no server")
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if r.seen[rep.Outcome.ApplyID] {
		return true, nil
	}
	r.seen[rep.Outcome.ApplyID] = true
	r.taken = append(r.taken, rep)
	return false, nil
}

func (r *cutReporter) setCut(cut bool) { r.mu.Lock(); r.cut = cut; r.mu.Unlock() }

func (r *cutReporter) reports() []agent.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.taken)
}

// runLoop is one Run in a goroutine.
type runLoop struct {
	cancel context.CancelFunc
	done   chan error
}

func startRun(t *testing.T, cfg agent.RunConfig) *runLoop {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runLoop{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- agent.Run(ctx, cfg) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runLoop) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
		r.done <- nil // a second stop returns at once
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop within 10s")
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runConfig(src agent.Source, rep agent.Reporter, box *agent.Outbox) agent.RunConfig {
	return agent.RunConfig{
		Node: "novox", Runtime: simruntime.New(), Outbox: box, Source: src, Reporter: rep,
		Interval: time.Hour, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		NewID: ids(), Logger: slog.New(slog.DiscardHandler),
	}
}

func TestRunAppliesEachDeclarationAndReports(t *testing.T) {
	src := &chanSource{ch: make(chan declaration.Declaration, 1)}
	rep := &cutReporter{}
	startRun(t, runConfig(src, rep, agent.NewMemOutbox()))

	src.ch <- decl("d1", forge("/srv/forge")...)
	waitFor(t, "the first report", func() bool { return len(rep.reports()) == 1 })
	src.ch <- decl("d1", forge("/srv/forge")...) // pushed again: applied again
	src.ch <- decl("d2", routeProxy()...)
	waitFor(t, "three reports", func() bool { return len(rep.reports()) == 3 })

	got := rep.reports()
	for i, want := range []struct {
		decl    string
		created int
	}{{"d1", 3}, {"d1", 0}, {"d2", 4}} {
		o := got[i].Outcome
		if o.Declaration != want.decl || len(o.Created) != want.created || got[i].Attempts != 0 {
			t.Errorf("report %d: declaration %s, created %v, attempts %d; want %s, %d created, 0 attempts",
				i, o.Declaration, o.Created, got[i].Attempts, want.decl, want.created)
		}
	}
}

func TestRunDriftCheckAppliesTheLatestAgain(t *testing.T) {
	src := &chanSource{ch: make(chan declaration.Declaration, 1)}
	rep := &cutReporter{}
	cfg := runConfig(src, rep, agent.NewMemOutbox())
	rt := simruntime.New()
	cfg.Runtime, cfg.Interval = rt, 20*time.Millisecond
	startRun(t, cfg)

	src.ch <- decl("d1", forge("/srv/forge")...)
	waitFor(t, "the first report", func() bool { return len(rep.reports()) >= 1 })
	rt.RemoveAllContainers() // drift: something outside the mesh
	waitFor(t, "the drift check recreating web", func() bool {
		for _, r := range rep.reports()[1:] {
			if slices.Contains(r.Outcome.Created, "web") {
				return true
			}
		}
		return false
	})
	for _, r := range rep.reports() {
		if r.Outcome.Declaration != "d1" {
			t.Errorf("report of %s; only d1 was declared", r.Outcome.Declaration)
		}
	}
}

// TestRunDeliversLateReportsOnceInOrder: while the mesh takes nothing, the
// reports are kept; once it is back they arrive once each, in apply order,
// carrying their failed attempts (rule 8).
func TestRunDeliversLateReportsOnceInOrder(t *testing.T) {
	src := &chanSource{ch: make(chan declaration.Declaration, 1)}
	rep := &cutReporter{cut: true}
	box := agent.NewMemOutbox()
	var mu sync.Mutex
	var applied []agent.Report
	cfg := runConfig(src, rep, box)
	cfg.Applied = func(r agent.Report) { mu.Lock(); applied = append(applied, r); mu.Unlock() }
	startRun(t, cfg)

	for _, id := range []string{"d1", "d2", "d3"} {
		src.ch <- decl(id, forge("/srv/"+id)...)
	}
	waitFor(t, "three applies", func() bool { mu.Lock(); defer mu.Unlock(); return len(applied) == 3 })
	waitFor(t, "a few failed rounds", func() bool { rep.mu.Lock(); defer rep.mu.Unlock(); return rep.tries >= 6 })
	for _, r := range applied {
		if !r.Kept {
			t.Errorf("apply %s: not kept while the mesh is away", r.Outcome.Declaration)
		}
	}
	rep.setCut(false)
	waitFor(t, "the kept reports", func() bool { return len(rep.reports()) == 3 })
	waitFor(t, "an empty outbox", func() bool { p, err := box.Pending(); return err == nil && len(p) == 0 })

	got := rep.reports()
	for i, want := range []string{"d1", "d2", "d3"} {
		if got[i].Outcome.Declaration != want {
			t.Errorf("report %d is %s's, want %s's (apply order)", i, got[i].Outcome.Declaration, want)
		}
		if got[i].Attempts < 1 || got[i].LastError == "" {
			t.Errorf("report %d: attempts %d, last error %q; want a late delivery", i, got[i].Attempts, got[i].LastError)
		}
		if got[i].Outcome.ApplyID != applied[i].Outcome.ApplyID {
			t.Errorf("report %d: apply %s, applied %s", i, got[i].Outcome.ApplyID, applied[i].Outcome.ApplyID)
		}
	}
}

// TestRunDeliversWhatAnEarlierRunKept: an agent restarted over its outbox
// delivers the reports the last run could not, before anything else.
func TestRunDeliversWhatAnEarlierRunKept(t *testing.T) {
	box := agent.NewMemOutbox()
	src := &chanSource{ch: make(chan declaration.Declaration, 1)}
	rep := &cutReporter{cut: true}
	first := startRun(t, runConfig(src, rep, box))
	src.ch <- decl("d1", forge("/srv/forge")...)
	waitFor(t, "a kept report", func() bool { p, err := box.Pending(); return err == nil && len(p) == 1 })
	first.stop(t)

	again, err := box.Reopen()
	if err != nil {
		t.Fatal(err)
	}
	rep.setCut(false)
	startRun(t, runConfig(&chanSource{ch: make(chan declaration.Declaration)}, rep, again))
	waitFor(t, "the kept report", func() bool { return len(rep.reports()) == 1 })
	if r := rep.reports()[0]; r.Outcome.Declaration != "d1" || r.Attempts < 1 {
		t.Errorf("delivered %s with %d attempts; want d1, late", r.Outcome.Declaration, r.Attempts)
	}
}

func TestRunEnds(t *testing.T) {
	box := agent.NewMemOutbox()
	rep := &cutReporter{}
	closed := make(chan declaration.Declaration)
	close(closed)
	tests := []struct {
		name string
		cfg  agent.RunConfig
		want error // nil: any error
	}{
		{"the source ends", runConfig(&chanSource{ch: closed}, rep, box), agent.ErrSourceEnded},
		{"the source cannot watch", runConfig(&chanSource{err: errors.New("denied")}, rep, box), nil},
		{"no source", runConfig(nil, rep, box), nil},
		{"no reporter", runConfig(&chanSource{ch: closed}, nil, box), nil},
		{"no outbox", runConfig(&chanSource{ch: closed}, rep, nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := agent.Run(context.Background(), tt.cfg)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("Run: %v, want an error (%v)", err, tt.want)
			}
		})
	}
}

// TestRunSaysAStartingContainerRunsWithoutADriftCheck: a container with no
// health check is starting for MinHealthy after its start; the agent makes
// a pass when that time is up, so the mesh hears it runs then, not at the
// drift check an hour later.
func TestRunSaysAStartingContainerRunsWithoutADriftCheck(t *testing.T) {
	src := &chanSource{ch: make(chan declaration.Declaration, 1)}
	rep := &cutReporter{}
	cfg := runConfig(src, rep, agent.NewMemOutbox())
	cfg.FollowContainers, cfg.MinHealthy = true, 300*time.Millisecond
	startRun(t, cfg)
	src.ch <- decl("d1", forge("/srv/forge")...)
	states := func() map[string]string {
		out := map[string]string{}
		for _, r := range rep.reports() {
			if r.Workload == nil {
				continue
			}
			for _, c := range r.Workload.Changes {
				out[c.Container] = c.State
			}
		}
		return out
	}
	waitFor(t, "the container said running", func() bool {
		st := states()
		return len(st) > 0 && !slices.ContainsFunc(slices.Collect(maps.Values(st)), func(s string) bool { return s != "running" })
	})
	if n := len(rep.reports()); n < 2 {
		t.Errorf("%d report(s); want the first apply's and the check's", n)
	}
}
