package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/wire"
)

// TestFollowerSaysTransitionsOnly: pass after pass, the follower says a
// container's state only when it changes; a crash loop of forty restarts
// is one episode said at 1, 2, 4, 8, 16, 32 restarts and closed once, with
// its count.
func TestFollowerSaysTransitionsOnly(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 18, 59, 30, 0, time.UTC)
	decl := map[string]string{"web": "forge", "db": "forge"}
	running := func(start time.Time, restarts int) agent.ContainerState {
		return agent.ContainerState{Status: "running", StartedAt: start, Restarts: restarts}
	}
	type pass struct {
		at     time.Duration
		states map[string]agent.ContainerState
		want   string // the changes said, "container state/restarts", one a line
	}
	healthy := agent.ContainerState{Status: "running", StartedAt: t0, Health: "healthy"}
	var passes []pass
	passes = append(passes,
		pass{0, map[string]agent.ContainerState{"web": running(t0, 0), "db": healthy}, "db running/0 log=false\nweb starting/0 log=false"},
		pass{5 * time.Second, map[string]agent.ContainerState{"web": running(t0, 0), "db": healthy}, ""},
		pass{11 * time.Second, map[string]agent.ContainerState{"web": running(t0, 0), "db": healthy}, "web running/0 log=false"},
		pass{12 * time.Second, map[string]agent.ContainerState{"web": running(t0, 0), "db": healthy}, ""},
	)
	// Forty restarts, a pass at each, between two crashes half the time.
	want := map[int]string{1: "web crash-looping/1 log=true", 2: "web crash-looping/2 log=true", 4: "web crash-looping/4 log=true",
		8: "web crash-looping/8 log=true", 16: "web crash-looping/16 log=true", 32: "web crash-looping/32 log=true"}
	for k := 1; k <= 40; k++ {
		at := 20*time.Second + time.Duration(k)*time.Second
		st := agent.ContainerState{Status: "restarting", Restarts: k, ExitCode: 1, StartedAt: t0.Add(at - 500*time.Millisecond), FinishedAt: t0.Add(at - 400*time.Millisecond)}
		if k%2 == 0 {
			st.Status, st.ExitCode = "running", 0
		}
		passes = append(passes, pass{at, map[string]agent.ContainerState{"web": st, "db": healthy}, want[k]})
	}
	passes = append(passes,
		pass{70 * time.Second, map[string]agent.ContainerState{"web": running(t0.Add(65*time.Second), 40), "db": healthy}, ""},
		pass{80 * time.Second, map[string]agent.ContainerState{"web": running(t0.Add(65*time.Second), 40), "db": healthy}, "web running/40 log=false"},
		pass{90 * time.Second, map[string]agent.ContainerState{"web": running(t0.Add(65*time.Second), 40), "db": {Status: "running", StartedAt: t0, Health: "unhealthy", HealthLog: "refused"}}, "db unhealthy/0 log=false"},
		pass{95 * time.Second, map[string]agent.ContainerState{"web": {Status: "exited", ExitCode: 137, OOMKilled: true, FinishedAt: t0.Add(94 * time.Second)}, "db": healthy}, "db running/0 log=false\nweb oom-killed/0 log=true"},
		pass{96 * time.Second, map[string]agent.ContainerState{"db": healthy}, "web vanished/0 log=false"},
		pass{97 * time.Second, map[string]agent.ContainerState{"db": healthy}, ""},
	)
	var f agent.Follower
	total := 0
	for i, p := range passes {
		got := f.Step(t0.Add(p.at), decl, p.states)
		var lines []string
		for _, c := range got {
			lines = append(lines, fmt.Sprintf("%s %s/%d log=%v", c.Container, c.State, c.Restarts, c.NeedLog))
			if err := (func() error { c.Node = "novox"; return c.Check() })(); err != nil {
				t.Errorf("pass %d: %s: %v", i, c.Container, err)
			}
			if c.State == "unhealthy" && c.Output != "refused" {
				t.Errorf("pass %d: unhealthy without the probe's output: %+v", i, c)
			}
			if c.State == "crash-looping" && (c.ExitCode != 1 || !c.Since.Equal(t0.Add(20600*time.Millisecond))) {
				t.Errorf("pass %d: crash loop %+v: want exit code 1 since the first crash", i, c.ContainerChange)
			}
		}
		total += len(got)
		if g := strings.Join(lines, "\n"); g != p.want {
			t.Errorf("pass %d (+%s):\n got %q\nwant %q", i, p.at, g, p.want)
		}
	}
	if total > 14 {
		t.Errorf("%d changes in %d passes, forty restarts: want few", total, len(passes))
	}
}

// TestApplyReportsWorkloadChanges: an agent that follows its containers
// puts what changed in the pass's report, the log of a crash with it, and
// nothing in a quiet pass's; one that does not follow says nothing.
func TestApplyReportsWorkloadChanges(t *testing.T) {
	for _, follow := range []bool{true, false} {
		t.Run(fmt.Sprintf("follow=%v", follow), func(t *testing.T) {
			rt := simruntime.New()
			now := time.Date(2026, 12, 7, 18, 59, 30, 0, time.UTC)
			rt.SetClock(func() time.Time { return now })
			ag, err := agent.New(agent.Config{
				Node: "novox", Runtime: rt, Outbox: agent.NewMemOutbox(), Deliver: (&sink{}).deliver,
				Now: func() time.Time { return now }, NewID: ids(), FollowContainers: follow,
			})
			if err != nil {
				t.Fatal(err)
			}
			d := decl("novox/1", ctr("web", "forge", image("web:1")))
			pass := func(after time.Duration) *wire.Workload {
				t.Helper()
				now = now.Add(after)
				r, err := ag.Apply(context.Background(), d)
				if err != nil {
					t.Fatal(err)
				}
				return r.Workload
			}
			states := func(w *wire.Workload) string {
				if w == nil {
					return ""
				}
				var out []string
				for _, c := range w.Changes {
					out = append(out, c.Container+" "+c.State)
				}
				return strings.Join(out, ", ")
			}
			want := []string{"web starting", "", "web running", "", "web crash-looping"}
			if !follow {
				want = []string{"", "", "", "", ""}
			}
			got := []string{states(pass(0)), states(pass(time.Second)), states(pass(10 * time.Second)), states(pass(time.Minute))}
			if err := rt.ExitAtStart("web", 1, "cat: /no/such/file: No such file or directory"); err != nil {
				t.Fatal(err)
			}
			w := pass(5 * time.Second)
			got = append(got, states(w))
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("passes said %q, want %q", got, want)
			}
			if follow {
				c := w.Changes[0]
				if c.Node != "novox" || c.Declaration != "novox/1" || c.ExitCode != 1 || c.Restarts < 1 || !strings.Contains(c.Log, "No such file") {
					t.Errorf("crash loop change %+v", c)
				}
				if err := w.Check("novox"); err != nil {
					t.Errorf("the door's check: %v", err)
				}
			}
		})
	}
}
