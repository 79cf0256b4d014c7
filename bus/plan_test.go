package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/bus"
	"meshplane/bus/natstest"
	"meshplane/declaration"
)

// TestDryRun: the controller's dry-run request reaches the node's agent on
// the real server and comes back with its preview; an agent's failure comes
// back as an error; a node with no agent connected is ErrNoAgent, at once;
// and one that does not answer is the caller's deadline.
func TestDryRun(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	n := natstest.Node(t, s, "a")
	stop, err := n.ServeDryRuns(ctx, func(_ context.Context, d declaration.Declaration) (agent.Preview, error) {
		if d.ID == "a/9" {
			return agent.Preview{}, errors.New("observe: list containers: engine away")
		}
		return agent.Preview{Node: "a", Declaration: d.ID, Unchanged: len(d.Resources)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	cases := []struct {
		name string
		d    declaration.Declaration
		want string // the error names this; "" for an answer
	}{
		{"answered", decl("a", 1), ""},
		{"the agent could not plan", decl("a", 9), "engine away"},
		{"no agent of b", decl("b", 1), "no agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pv, err := ctl.DryRun(ctx, tc.d)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("DryRun = %+v, %v; want an error naming %q", pv, err, tc.want)
				}
				return
			}
			if err != nil || pv.Declaration != tc.d.ID || pv.Unchanged != 1 {
				t.Fatalf("DryRun = %+v, %v", pv, err)
			}
		})
	}
	if _, err := ctl.DryRun(ctx, decl("b", 1)); !errors.Is(err, bus.ErrNoAgent) {
		t.Fatalf("no agent: %v, want ErrNoAgent", err)
	}

	t.Run("no answer in time", func(t *testing.T) {
		slow := natstest.Node(t, s, "c")
		release := make(chan struct{})
		stop, err := slow.ServeDryRuns(ctx, func(ctx context.Context, d declaration.Declaration) (agent.Preview, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return agent.Preview{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		defer close(release)
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if _, err := ctl.DryRun(short, decl("c", 1)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a silent agent: %v, want the deadline", err)
		}
	})
}

// TestDryRunPermissions: a node may answer dry runs on its own plan subject
// only.
func TestDryRunPermissions(t *testing.T) {
	s := natstest.Start(t)
	nc, errs := rawNode(t, s, "a")
	if _, err := nc.SubscribeSync(bus.PlanSubject("a")); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{bus.PlanSubject("b"), bus.PlanSubject("a.b"), bus.PlanSubjectPrefix + ">"} {
		t.Run("cannot subscribe "+subj, func(t *testing.T) {
			if _, err := nc.SubscribeSync(subj); err != nil {
				t.Fatal(err)
			}
			violation(t, errs, subj)
		})
	}
	t.Run("cannot publish a request to another node", func(t *testing.T) {
		if err := nc.Publish(bus.PlanSubject("b"), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		violation(t, errs, bus.PlanSubject("b"))
	})
}
