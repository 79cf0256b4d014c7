package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/controller"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
	"meshplane/meshup"
)

// panicBinary builds the mesh binary with the panic hook once (panicBin).
func panicBinary(t testing.TB) string { return meshtest.PanicBin.Get(t) }

// alive reports whether process pid exists (a zombie counts: up waits for
// the agents it stops, so one of its own left a zombie only if it did not).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// TestProcessLoopPanicExits70: `mesh up` with its agents running, and a
// loop of the controller that panics: the process stops cleanly (the
// agents it started stopped and gone, controller.json removed) and exits
// 70 with the panic and its stack on stderr. Both ways a loop's panic
// stops it: the metrics follower through the root context's cause
// (safego.Go, Fatal), the API's server through its error (safego.Call).
func TestProcessLoopPanicExits70(t *testing.T) {
	bin := panicBinary(t)
	agentLine := regexp.MustCompile(`(?m)^agent (\S+)\s+pid (\d+),`)
	for _, where := range []string{"controller.metrics", "api.serve"} {
		t.Run(where, func(t *testing.T) {
			data := t.TempDir()
			trigger := filepath.Join(t.TempDir(), "panic-now")
			p := meshtest.StartBinary(t, bin, []string{"MESH_TEST_PANIC=" + where + "@" + trigger, "MESH_SERVER=", "MESH_TOKEN="},
				"up", "--data", data, "--listen", "127.0.0.1:0", "--bus-listen", "127.0.0.1:0",
				"--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
			pids := map[string]int{}
			t.Cleanup(func() { // a failed test leaves no orphan behind
				for _, pid := range pids {
					if alive(pid) {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			testwait.Eventually(t, 60*time.Second, func() error {
				select {
				case <-p.Done:
					t.Fatalf("mesh up exited before the panic: %v\n%s", p.Err, p.Out)
				default:
				}
				for _, m := range agentLine.FindAllStringSubmatch(p.Out.String(), -1) {
					pid, _ := strconv.Atoi(m[2])
					pids[m[1]] = pid
				}
				if len(pids) < 2 {
					return fmt.Errorf("agents started: %v", pids)
				}
				for n := range pids { // running: each has applied its declaration
					b, _ := os.ReadFile(filepath.Join(data, meshup.AgentsDir, n, meshup.LogFile))
					if !strings.Contains(string(b), `msg="agent: applied"`) {
						return fmt.Errorf("agent %s has not applied yet", n)
					}
				}
				return nil
			})
			for n, pid := range pids {
				if !alive(pid) {
					t.Fatalf("agent %s (pid %d) is not running before the panic\n%s", n, pid, p.Out)
				}
			}
			if _, err := controller.ReadInfo(data); err != nil {
				t.Fatalf("controller.json before the panic: %v", err)
			}

			if err := os.WriteFile(trigger, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done:
			case <-time.After(60 * time.Second):
				t.Fatalf("mesh up did not stop within 60 s of the panic\n%s", p.Out)
			}
			var xe *exec.ExitError
			if !errors.As(p.Err, &xe) || xe.ExitCode() != exitPanic {
				t.Fatalf("mesh up: %v, want exit %d\n%s", p.Err, exitPanic, p.Out)
			}
			out := p.Out.String()
			for _, want := range []string{
				"mesh up: " + where + ": panic: safego: panic injected at " + where,
				"goroutine ", "runtime/debug.Stack()", // the stack
				"This is a bug in mesh; it stopped cleanly; the exit code is 70.",
				`msg="panic recovered (a bug in meshplane)" where=` + where, // logged at the boundary
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for n, pid := range pids {
				if alive(pid) {
					t.Errorf("agent %s (pid %d) outlived mesh up", n, pid)
				}
				b, err := os.ReadFile(filepath.Join(data, meshup.AgentsDir, n, meshup.LogFile))
				if err != nil || !strings.Contains(string(b), `msg="agent: stopped"`) {
					t.Errorf("agent %s did not stop cleanly (%v):\n%s", n, err, b)
				}
			}
			if _, err := controller.ReadInfo(data); !errors.Is(err, controller.ErrNoController) {
				t.Errorf("controller.json after the stop: %v, want it removed", err)
			}
		})
	}
}
