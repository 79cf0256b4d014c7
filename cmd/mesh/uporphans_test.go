package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// agentPIDs are the agent pids an up's output names ("agent NODE pid N,"),
// by node.
func agentPIDs(out string) map[string]int {
	pids := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^agent (\S+)\s+pid (\d+),`).FindAllStringSubmatch(out, -1) {
		pids[m[1]], _ = strconv.Atoi(m[2])
	}
	return pids
}

// running says whether pid is a live process (not gone, not a zombie
// its parent has not reaped).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// TestProcessUpKilledLeavesNoOrphans: `mesh up` with its agents, killed
// by SIGKILL: its agents stop with it (their parent-death signal), and
// the next `mesh up` on the data directory starts agents that run (they
// used to exit at once, "another agent runs on this data directory",
// beside the first up's agents running on as orphans).
func TestProcessUpKilledLeavesNoOrphans(t *testing.T) {
	data := t.TempDir()
	env := []string{"DOCKER_HOST=unix://" + t.TempDir() + "/no-docker.sock"}
	upArgs := []string{"up", "--data", data, "--listen", "127.0.0.1:0", "--bus-listen", "127.0.0.1:0",
		"--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"}
	started := func(p *meshtest.Proc) map[string]int {
		t.Helper()
		var pids map[string]int
		testwait.Eventually(t, 60*time.Second, func() error {
			select {
			case <-p.Done:
				t.Fatalf("mesh up exited: %v\n%s", p.Err, p.Out)
			default:
			}
			if pids = agentPIDs(p.Out.String()); len(pids) < 2 {
				return fmt.Errorf("agents started: %v", pids)
			}
			return nil
		})
		t.Cleanup(func() { // a failed test leaves no agent behind
			for _, pid := range pids {
				if running(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
		return pids
	}

	first := meshtest.StartProc(t, env, upArgs...)
	old := started(first)
	first.Kill() // SIGKILL: no clean stop of its agents
	testwait.Eventually(t, 20*time.Second, func() error {
		for n, pid := range old {
			if running(pid) {
				return fmt.Errorf("agent %s pid %d of the killed up still runs", n, pid)
			}
		}
		return nil
	})

	second := meshtest.StartProc(t, env, upArgs...)
	pids := started(second)
	time.Sleep(3 * time.Second) // an agent refused its directory exits at once
	for n, pid := range pids {
		if !running(pid) {
			t.Errorf("agent %s pid %d of the second up is not running\n%s", n, pid, second.Out)
		}
	}
	if s := second.Out.String(); strings.Contains(s, "another agent runs") {
		t.Errorf("the second up met another agent:\n%s", s)
	}
	_ = second.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-second.Done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the second up did not stop\n%s", second.Out)
	}
	for n, pid := range pids {
		if running(pid) {
			t.Errorf("agent %s pid %d runs after its up stopped", n, pid)
		}
	}
}
