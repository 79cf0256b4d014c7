package projections

import (
	"testing"
	"time"

	"meshplane/events"
)

func (g *gen) container(node, container, state string, restarts int, log string) *gen {
	g.tb.Helper()
	at := t0.Add(time.Duration(len(g.evs)+1) * time.Minute)
	c := events.ContainerChange{Node: node, Module: "route-proxy", Container: container, Declaration: node + "/1", State: state,
		At: at, Restarts: restarts, Log: log}
	if state == events.WorkloadCrashLooping {
		c.ExitCode, c.Since = 1, at.Add(-30*time.Second)
	}
	return g.add(events.NodeStream(node), "agent:"+node, "", events.ContainerPayload(c))
}

// TestStatusWorkloadAxis: a node is never converged while a declared
// container of its applied declaration is not running, restarts, or is
// unhealthy, and says which, per module and per container; a node whose
// agent says nothing of its containers (older history) reads as before,
// with its workload unknown.
func TestStatusWorkloadAxis(t *testing.T) {
	res := append(resources("route-proxy", 2, "A"), resources("photos", 1, "A")...)
	applied := func(g *gen) *gen {
		return g.assign("route-proxy", "novox").assign("photos", "novox").composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 3).
			applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 3, Applied: 3, Unchanged: 3})
	}
	tests := []struct {
		name      string
		build     func(g *gen)
		health    string
		workload  string
		module    string // route-proxy's state
		converged bool
	}{
		{"history from before: as it was, workload unknown", func(g *gen) { applied(g) }, HealthConverged, WorkloadUnknown, HealthConverged, true},
		{"every container running: converged", func(g *gen) {
			applied(g).container("novox", "route-proxy-0", "running", 0, "").container("novox", "route-proxy-1", "running", 0, "")
		}, HealthConverged, "running", HealthConverged, true},
		{"one starting: starting, not converged", func(g *gen) {
			applied(g).container("novox", "route-proxy-0", "running", 0, "").container("novox", "route-proxy-1", "starting", 0, "")
		}, HealthStarting, "starting", HealthStarting, false},
		{"one crash-looping: never converged", func(g *gen) {
			applied(g).container("novox", "route-proxy-0", "crash-looping", 14, "cat: /no/such/file: No such file or directory\n")
		}, HealthCrashLooping, "crash-looping", HealthCrashLooping, false},
		{"unhealthy", func(g *gen) { applied(g).container("novox", "route-proxy-1", "unhealthy", 0, "") }, HealthUnhealthy, "unhealthy", HealthUnhealthy, false},
		{"exited", func(g *gen) { applied(g).container("novox", "route-proxy-1", "exited", 0, "bye\n") }, HealthStopped, "exited", HealthStopped, false},
		{"crash loop over unhealthy", func(g *gen) {
			applied(g).container("novox", "route-proxy-1", "unhealthy", 0, "").container("novox", "route-proxy-0", "crash-looping", 3, "")
		}, HealthCrashLooping, "crash-looping", HealthCrashLooping, false},
		{"recovered: converged again", func(g *gen) {
			applied(g).container("novox", "route-proxy-0", "crash-looping", 3, "").container("novox", "route-proxy-0", "running", 40, "")
		}, HealthConverged, "running", HealthConverged, true},
		{"a container no longer declared does not count", func(g *gen) {
			applied(g).container("novox", "gone", "crash-looping", 3, "")
		}, HealthConverged, "running", HealthConverged, true},
		{"a failed apply still wins", func(g *gen) {
			g.assign("route-proxy", "novox").composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 3).
				applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 3, Applied: 2, Unchanged: 2, Failed: []events.Failed{{Name: "route-proxy-0", Error: "boom"}}}).
				container("novox", "route-proxy-1", "crash-looping", 3, "")
		}, HealthFailing, "crash-looping", HealthFailing, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(t)
			tc.build(g)
			f := g.folded()
			st, err := f.Status.Of("novox")
			if err != nil {
				t.Fatal(err)
			}
			if st.Health != tc.health || st.Workload != tc.workload {
				t.Errorf("health %s workload %s, want %s %s", st.Health, st.Workload, tc.health, tc.workload)
			}
			if ms := st.Modules["route-proxy"]; ms.State != tc.module {
				t.Errorf("route-proxy: %+v, want %s", ms, tc.module)
			}
			if ms := st.Modules["photos"]; ms.Assigned && ms.State != HealthConverged && tc.health != HealthFailing {
				t.Errorf("photos, all running: %+v", ms)
			}
			if conv, _ := f.Status.Converged("novox"); conv != tc.converged {
				t.Errorf("Converged = %v, want %v", conv, tc.converged)
			}
			if _, ok := st.Containers["gone"]; ok {
				t.Errorf("an undeclared container listed: %+v", st.Containers)
			}
		})
	}
	g := newGen(t)
	applied(g).container("novox", "route-proxy-0", "crash-looping", 14, "first\ncat: /no/such/file: No such file or directory\n\n")
	st, _ := g.folded().Status.Of("novox")
	if c := st.Containers["route-proxy-0"]; c.Restarts != 14 || c.ExitCode != 1 || c.LogLine != "cat: /no/such/file: No such file or directory" || c.Since.IsZero() {
		t.Errorf("the crash loop as status keeps it: %+v", c)
	}
}

// TestResourcesStateIsTheEngines: a container's state in the node's
// resources is the engine's once the agent says it, with why.
func TestResourcesStateIsTheEngines(t *testing.T) {
	g := newGen(t)
	res := resources("route-proxy", 2, "A")
	g.assign("route-proxy", "novox").composed("novox", "novox/1", "A", nil, res).pushed("novox", "novox/1", "A", 2).
		applied("novox", events.ApplyReported{Declaration: "novox/1", Sent: 2, Applied: 2, Unchanged: 2})
	at := time.Date(2026, 12, 7, 19, 0, 2, 0, time.UTC)
	c := events.ContainerChange{Node: "novox", Module: "route-proxy", Container: "route-proxy-0", Declaration: "novox/1",
		State: events.WorkloadCrashLooping, At: at, ExitCode: 1, Restarts: 14, Since: at.Add(-32 * time.Second),
		Log: "cat: /no/such/file: No such file or directory\n"}
	g.add(events.NodeStream("novox"), "agent:novox", "", events.ContainerPayload(c))
	nr, err := g.folded().Status.Resources("novox")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ResourceState{}
	for _, r := range nr.Resources {
		got[r.Name] = r
	}
	if r := got["route-proxy-0"]; r.State != "crash-looping" || r.Reason != "exit code 1 at 19:00:02, the 14th restart since 18:59:30: cat: /no/such/file: No such file or directory" {
		t.Errorf("crash-looping container: %+v", r)
	}
	if r := got["route-proxy-1"]; r.State != ResourceRunning {
		t.Errorf("a container the agent said nothing of: %+v, want the apply's running", r)
	}
}
