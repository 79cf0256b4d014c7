package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

// chanRosters is a RosterSource fed by the test.
type chanRosters struct{ ch chan declaration.Roster }

func (s *chanRosters) Rosters(context.Context) (<-chan declaration.Roster, error) { return s.ch, nil }

func rosterOf(rev uint64, names ...string) declaration.Roster {
	routes := make([]declaration.Route, len(names))
	for i, n := range names {
		routes[i] = declaration.Route{Name: n, Address: "10.1.0.3", Node: "g14"}
	}
	return declaration.NewRoster(rev, routes)
}

// onWire is d composed against r, as it travels: naming r, without it.
func onWire(d declaration.Declaration, r declaration.Roster) declaration.Declaration {
	d.Roster, d.Hosts, d.RosterRevision, d.RosterDigest = r.Routes, r.Hosts(), r.Revision, r.Digest
	d.Digest = d.SpecDigest()
	return d.Wire()
}

func hostsOn(t *testing.T, rt *simruntime.Runtime) string {
	t.Helper()
	b, _, ok := rt.File(declaration.HostsPath)
	if !ok {
		return ""
	}
	return string(b)
}

// runWithRosters starts an agent's run on a simulated runtime whose
// declarations and rosters the test sends, waiting up to wait for a
// roster a declaration names.
func runWithRosters(t *testing.T, wait time.Duration) (*chanSource, *chanRosters, *cutReporter, *simruntime.Runtime) {
	t.Helper()
	src := &chanSource{ch: make(chan declaration.Declaration, 1)}
	ros := &chanRosters{ch: make(chan declaration.Roster, 1)}
	rep := &cutReporter{}
	cfg := runConfig(src, rep, agent.NewMemOutbox())
	cfg.Rosters, cfg.RosterWait = ros, wait
	startRun(t, cfg)
	return src, ros, rep, cfg.Runtime.(*simruntime.Runtime)
}

// TestRunFillsFromTheRoster: a declaration that travels without its roster
// is filled from the roster the agent holds; a roster change alone rewrites
// the hosts file in place and recreates no container (rule 2); a
// declaration naming a revision not yet held waits for it.
func TestRunFillsFromTheRoster(t *testing.T) {
	src, ros, rep, rt := runWithRosters(t, time.Hour)

	r1 := rosterOf(1, "a.mesh.example", "b.mesh.example")
	ros.ch <- r1
	src.ch <- onWire(decl("novox/1", forge("/srv/forge")...), r1)
	waitFor(t, "the first report", func() bool { return len(rep.reports()) == 1 })
	if got := rep.reports()[0].Outcome; len(got.Created) != 3 || len(got.Failed) != 0 {
		t.Fatalf("first apply: %s", got.Summary())
	}
	if got := hostsOn(t, rt); got != r1.Hosts() {
		t.Fatalf("hosts file:\n%s\nwant:\n%s", got, r1.Hosts())
	}

	// The declaration of the next revision comes before its roster: it
	// waits, nothing is applied, then it is applied when the roster comes.
	r2 := rosterOf(2, "a.mesh.example", "added.mesh.example", "b.mesh.example")
	src.ch <- onWire(decl("novox/2", forge("/srv/forge")...), r2)
	time.Sleep(50 * time.Millisecond)
	if n := len(rep.reports()); n != 1 {
		t.Fatalf("%d reports before the roster came, want 1", n)
	}
	if got := hostsOn(t, rt); got != r1.Hosts() {
		t.Fatal("the hosts file moved before its roster came")
	}
	ros.ch <- r2
	waitFor(t, "the second report", func() bool { return len(rep.reports()) == 2 })
	got := rep.reports()[1].Outcome
	if got.Declaration != "novox/2" || len(got.Created)+len(got.Replaced)+len(got.Updated)+len(got.Removed) != 0 || len(got.Failed) != 0 {
		t.Fatalf("a roster change recreated or touched containers: %s", got.Summary())
	}
	if got := hostsOn(t, rt); got != r2.Hosts() || !strings.Contains(got, "added.mesh.example") {
		t.Fatalf("hosts file not rewritten from revision 2:\n%s", got)
	}
}

// TestRunRosterNotHeld: a declaration whose roster revision does not come
// within RosterWait is reported not applied, with the reason, and nothing
// is written; when the roster comes, it is applied.
func TestRunRosterNotHeld(t *testing.T) {
	src, ros, rep, rt := runWithRosters(t, 30*time.Millisecond)

	r1, r2 := rosterOf(1, "a.mesh.example"), rosterOf(2, "b.mesh.example")
	ros.ch <- r1
	src.ch <- onWire(decl("novox/7", forge("/srv/forge")...), r2)
	waitFor(t, "the not-applied report", func() bool { return len(rep.reports()) == 1 })
	o := rep.reports()[0].Outcome
	if o.Declaration != "novox/7" || o.Applied != 0 || len(o.Created) != 0 || len(o.Failed) != 4 {
		t.Fatalf("not-applied report: %s, failed %v", o.Summary(), o.Failed)
	}
	for _, f := range o.Failed {
		if !strings.Contains(f.Error, "not applied") || !strings.Contains(f.Error, "roster revision 2") || !strings.Contains(f.Error, "revision 1") {
			t.Fatalf("%s failed with %q: does not say which roster it waits for and holds", f.Name, f.Error)
		}
	}
	if got := hostsOn(t, rt); got != "" {
		t.Fatalf("a hosts file was written with no roster: %q", got)
	}
	if cs, _ := rt.ListContainers(context.Background()); len(cs) != 0 {
		t.Fatalf("%d containers made from a declaration not applied", len(cs))
	}
	ros.ch <- r2
	waitFor(t, "the apply once the roster came", func() bool {
		rs := rep.reports()
		return len(rs) >= 2 && len(rs[len(rs)-1].Outcome.Created) == 3
	})
	if got := hostsOn(t, rt); got != r2.Hosts() {
		t.Fatalf("hosts file:\n%s\nwant:\n%s", got, r2.Hosts())
	}
}

// TestApplyRefusesAnUnfilledDeclaration: Apply itself never writes a hosts
// file from a declaration that travels without its roster.
func TestApplyRefusesAnUnfilledDeclaration(t *testing.T) {
	fx := newFixture(t)
	d := onWire(decl("novox/3", routeProxy()...), rosterOf(5, "x.mesh.example"))
	rep := fx.apply(t, d)
	if rep.Outcome.Applied != 0 || len(rep.Outcome.Failed) != len(d.Resources)+1 {
		t.Fatalf("an unfilled declaration was applied: %s", rep.Summary())
	}
	if _, _, ok := fx.rt.File(declaration.HostsPath); ok {
		t.Fatal("a hosts file was written from no roster")
	}
	// An older controller's declaration, carrying its roster, applies as before.
	full := decl("novox/4", routeProxy()...)
	if rep := fx.apply(t, full); len(rep.Outcome.Failed) != 0 {
		t.Fatalf("a declaration carrying its roster: %s", rep.Summary())
	}
	if b, _, _ := fx.rt.File(declaration.HostsPath); string(b) != full.Hosts {
		t.Fatalf("hosts file %q, want %q", b, full.Hosts)
	}
}

// bothSource is a Source that is a RosterSource too, as the bus's link is.
type bothSource struct {
	*chanSource
	*chanRosters
}

// TestRunTakesRostersFromItsSource: with no RunConfig.Rosters, a Source
// that is a RosterSource too gives the rosters.
func TestRunTakesRostersFromItsSource(t *testing.T) {
	src := bothSource{&chanSource{ch: make(chan declaration.Declaration, 1)}, &chanRosters{ch: make(chan declaration.Roster, 1)}}
	rep := &cutReporter{}
	cfg := runConfig(src, rep, agent.NewMemOutbox())
	rt := cfg.Runtime.(*simruntime.Runtime)
	cfg.RosterWait = time.Hour
	startRun(t, cfg)
	r1 := rosterOf(1, "a.mesh.example")
	src.chanRosters.ch <- r1
	src.chanSource.ch <- onWire(decl("novox/1", forge("/srv/forge")...), r1)
	waitFor(t, "the report", func() bool { return len(rep.reports()) == 1 })
	if got := hostsOn(t, rt); got != r1.Hosts() {
		t.Fatalf("hosts file %q, want %q", got, r1.Hosts())
	}
}
