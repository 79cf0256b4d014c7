package meshup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/agent/agentd"
)

// TestMain runs the test binary as a helper agent when lockingAgent
// starts it (MESHUP_HELPER_AGENT=1), else the tests.
func TestMain(m *testing.M) {
	if os.Getenv("MESHUP_HELPER_AGENT") == "1" {
		helperAgent(os.Args[1:])
	}
	os.Exit(m.Run())
}

// helperAgent, run as `TEST agent --data DIR` (or `holder --data DIR`,
// which is no agent), holds DIR's agent lock, as an agent does, until it
// is signalled.
func helperAgent(args []string) {
	if len(args) != 3 || (args[0] != "agent" && args[0] != "holder") || args[1] != "--data" {
		fmt.Fprintf(os.Stderr, "helper agent: args %q\n", args)
		os.Exit(2)
	}
	f, err := os.OpenFile(filepath.Join(args[2], agentd.LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper agent: %v\n", err)
		os.Exit(2)
	}
	time.Sleep(time.Minute)
	os.Exit(0)
}

// lockingAgent starts a process holding dir's agent lock, named as an agent
// on dir (as what, "agent"; "holder" is no agent), and returns it once it
// holds the lock.
func lockingAgent(t *testing.T, dir, as string) *exec.Cmd {
	t.Helper()
	c := exec.Command(os.Args[0], as, "--data", dir)
	c.Env = append(os.Environ(), "MESHUP_HELPER_AGENT=1")
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if held, err := agentHeld(dir); err == nil && held {
			return c
		}
		if time.Now().After(end) {
			t.Fatalf("the helper agent did not take the lock: %s", out.String())
		}
	}
}

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// TestStopOrphan: before up starts a node's agent, an agent an earlier up
// left on the node's directory (its up gone) is stopped and said; an
// agent whose up still runs, or a lock held by a process up did not
// record, is not touched and is an error naming it; no agent, nothing.
func TestStopOrphan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		as      string                       // the lock holder's first argument
		pidFile func(agent, dead int) string // nil writes none
		stopped bool
		err     string
	}{
		{name: "orphan: its up is gone", pidFile: func(a, d int) string { return fmt.Sprintf("%d %d\n", a, d) }, stopped: true},
		{name: "its up still runs", pidFile: func(a, _ int) string { return fmt.Sprintf("%d %d\n", a, os.Getpid()) }, err: "which still runs"},
		{name: "an older build's orphan: no pid recorded", stopped: true},
		{name: "another process recorded", pidFile: func(_, d int) string { return fmt.Sprintf("%d %d\n", os.Getpid(), d) }, stopped: true},
		{name: "held by no agent", as: "holder", err: "not an agent on it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			as := tc.as
			if as == "" {
				as = "agent"
			}
			c := lockingAgent(t, dir, as)
			if tc.pidFile != nil {
				if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(tc.pidFile(c.Process.Pid, deadPID(t))), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			err := stopOrphan(dir, "n1", &out)
			held, herr := agentHeld(dir)
			if herr != nil {
				t.Fatal(herr)
			}
			if tc.stopped {
				want := fmt.Sprintf("stopped orphan agent pid %d of node n1 left by an earlier mesh up\n", c.Process.Pid)
				if err != nil || out.String() != want || held {
					t.Fatalf("stopOrphan: %v, said %q, lock held %v; want nil, %q, free", err, out.String(), held, want)
				}
				return
			}
			if !errors.Is(err, ErrAgentRuns) || !strings.Contains(err.Error(), tc.err) || out.Len() != 0 || !held {
				t.Fatalf("stopOrphan: %v, said %q, lock held %v; want ErrAgentRuns saying %q, the agent untouched", err, out.String(), held, tc.err)
			}
		})
	}
	var out bytes.Buffer
	if err := stopOrphan(t.TempDir(), "n1", &out); err != nil || out.Len() != 0 {
		t.Fatalf("no agent: %v, said %q", err, out.String())
	}
}
