package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/events"
	"meshplane/internal/freeport"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// livenessCounts counts n1's node.went-silent and node.came-back in the
// running controller's timeline.
func livenessCounts(t *testing.T, c *meshtest.CtlProc, node string) (silent, back int) {
	t.Helper()
	for _, typ := range []string{events.TypeNodeWentSilent, events.TypeNodeCameBack} {
		page, err := c.Client.Timeline(context.Background(), api.TimelineRequest{Node: node, Type: typ, Limit: api.MaxTimelineLimit})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range page.Entries {
			if e.Type == typ {
				n++
			}
		}
		if typ == events.TypeNodeWentSilent {
			silent = n
		} else {
			back = n
		}
	}
	return silent, back
}

// TestProcessAgentSilentAndBack: a controller process (--silent-after 2s)
// and an agent process (--heartbeat 300ms): while the agent runs, status shows it seen; the
// agent stopped, status says unreachable within seconds and history gains
// one node.went-silent however long it stays away; started again, it is
// back at once with one node.came-back; `mesh status` shows LAST SEEN.
func TestProcessAgentSilentAndBack(t *testing.T) {
	c := meshtest.StartCtl(t, t.TempDir(), freeport.Addr(t), freeport.Addr(t), "--silent-after", "2s")
	creds := meshtest.ProcSetUp(t, c, "n1")
	data := t.TempDir()
	a := meshtest.StartAgentProc(t, creds["n1"], data, "--heartbeat", "300ms")
	meshtest.MustCLI(t, c.Env(), "push", "n1")
	meshtest.ProcInSync(t, c.Env(), "n1")
	testwait.Eventually(t, 30*time.Second, func() error {
		if st := meshtest.StatusJSON(t, c.Env(), "n1"); st.LastSeen == nil || st.Sync == api.SyncUnreachable {
			return fmt.Errorf("n1: sync %s, last seen %v", st.Sync, st.LastSeen)
		}
		return nil
	})
	if out := meshtest.MustCLI(t, c.Env(), "status", "n1"); !strings.Contains(out, "LAST SEEN") {
		t.Fatalf("status lacks LAST SEEN:\n%s", out)
	}
	// Before the agent's first heartbeat (the set-up took a while) n1 may
	// have gone silent once already, and come back.
	silent0, back0 := livenessCounts(t, c, "n1")

	a.Stop(t)
	stopped := time.Now()
	testwait.Eventually(t, 20*time.Second, func() error {
		if st := meshtest.StatusJSON(t, c.Env(), "n1"); st.Sync != api.SyncUnreachable {
			return fmt.Errorf("n1: sync %s", st.Sync)
		}
		return nil
	})
	t.Logf("unreachable %s after the agent stopped", time.Since(stopped).Round(100*time.Millisecond))
	time.Sleep(5 * time.Second) // more than two bounds more: still one went-silent
	if s, b := livenessCounts(t, c, "n1"); s != silent0+1 || b != back0 {
		t.Fatalf("after the stop: %d went-silent, %d came-back; want %d and %d", s, b, silent0+1, back0)
	}
	if out := meshtest.MustCLI(t, c.Env(), "node", "show", "n1"); !strings.Contains(out, "sync     unreachable") || !strings.Contains(out, "seen     ") {
		t.Fatalf("node show:\n%s", out)
	}

	meshtest.StartAgentProc(t, creds["n1"], data, "--heartbeat", "300ms")
	testwait.Eventually(t, 30*time.Second, func() error {
		if st := meshtest.StatusJSON(t, c.Env(), "n1"); st.Sync == api.SyncUnreachable {
			return fmt.Errorf("n1: sync %s", st.Sync)
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	if s, b := livenessCounts(t, c, "n1"); s != silent0+1 || b != back0+1 {
		t.Fatalf("back: %d went-silent, %d came-back; want %d and %d", s, b, silent0+1, back0+1)
	}
	c.Stop(t)
}
