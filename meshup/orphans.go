package meshup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"meshplane/agent/agentd"
)

// The agents `mesh up` starts never outlive it, and the ones an earlier up
// left running are stopped, never joined by a second agent that exits at
// once ("another agent runs on this data directory"):
//
//   - each agent is started with Linux's parent-death signal (Pdeathsig,
//     SIGTERM): when up dies, even by SIGKILL, each of its agents is told
//     to stop, and stops cleanly (its outbox is on disk);
//   - up records each agent's pid and its own in DATA/agents/NODE/agent.pid
//     (PIDFile). Before it starts an agent, up looks at the agent's data
//     directory: when an agent still holds its lock (agentd.LockFile) (the
//     one recorded there, else, left by an older build that recorded none,
//     the `mesh agent --data DIR` process on it) and the up that started
//     it is gone (an orphan: from a build without the parent-death signal,
//     or one that outlived its parent by a race), up stops it (SIGTERM,
//     then SIGKILL after StopTimeout) and starts a fresh one, saying
//     "stopped orphan agent pid N of node X left by an earlier mesh up".
//     Orphans are stopped, not adopted: up supervises only the processes
//     it started. An agent whose up still runs, or a lock held by a
//     process that is no agent on the directory, is not touched: up stops
//     with an error naming it.

// PIDFile, in an agent's data directory, records the agent process up
// started and up's own pid: "AGENT UP\n".
const PIDFile = "agent.pid"

// ErrAgentRuns is StartAgents' error when a node's agent directory is held
// by an agent up may not stop: its up still runs, or up did not start it.
var ErrAgentRuns = errors.New("an agent runs on this node's directory")

// stopOrphan stops the orphan agent holding dir, the directory of node's
// agent, if there is one, and says so on out. No agent: nothing. An agent
// that is not an orphan: ErrAgentRuns, naming it.
func stopOrphan(dir, node string, out io.Writer) error {
	held, err := agentHeld(dir)
	if err != nil || !held {
		return err
	}
	// The agent: the one recorded, else (an up of an older build recorded
	// none) the agent process on dir.
	agentPID, upPID, err := readPIDFile(dir)
	if err != nil || !isAgentOn(agentPID, dir) {
		agentPID, upPID = agentOn(dir), 0
	}
	if agentPID == 0 {
		return fmt.Errorf("agent %s: %s is held by a process that is not an agent on it: stop it first: %w", node, dir, ErrAgentRuns)
	}
	if ppid, err := parentOf(agentPID); err == nil && alive(ppid) && (ppid == upPID || isUp(ppid)) {
		return fmt.Errorf("agent %s: its agent pid %d runs under mesh up pid %d, which still runs: %w", node, agentPID, ppid, ErrAgentRuns)
	}
	if err := stopPID(dir, agentPID); err != nil {
		return fmt.Errorf("agent %s: stop orphan agent pid %d: %w", node, agentPID, err)
	}
	fmt.Fprintf(out, "stopped orphan agent pid %d of node %s left by an earlier mesh up\n", agentPID, node)
	return nil
}

// agentHeld says whether an agent holds dir's lock now.
func agentHeld(dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, agentd.LockFile), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("look at %s: %w", dir, err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("look at %s: lock: %w", dir, err)
	}
	return false, nil // closing releases it
}

func readPIDFile(dir string) (agentPID, upPID int, err error) {
	b, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("%s: %q is not AGENT UP", PIDFile, b)
	}
	if agentPID, err = strconv.Atoi(f[0]); err == nil {
		upPID, err = strconv.Atoi(f[1])
	}
	if err != nil || agentPID <= 1 || upPID <= 1 {
		return 0, 0, fmt.Errorf("%s: %q is not AGENT UP", PIDFile, b)
	}
	return agentPID, upPID, nil
}

func writePIDFile(dir string, agentPID int) error {
	return os.WriteFile(filepath.Join(dir, PIDFile), fmt.Appendf(nil, "%d %d\n", agentPID, os.Getpid()), 0o600)
}

// isAgentOn says whether pid is a `mesh agent` on dir (its command line
// says agent and --data dir): a pid reused since is not.
func isAgentOn(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	want, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	same := func(d string) bool { // d as the process named it, from its directory
		if !filepath.IsAbs(d) {
			d = filepath.Join(cwd, d)
		}
		return filepath.Clean(d) == want
	}
	args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
	var agent, data bool
	for i, a := range args {
		agent = agent || a == "agent"
		if a == "--data" && i+1 < len(args) {
			data = data || same(args[i+1])
		} else if d, ok := strings.CutPrefix(a, "--data="); ok {
			data = data || same(d)
		}
	}
	return agent && data
}

// agentOn is the pid of a `mesh agent` on dir (isAgentOn), 0 if none.
func agentOn(dir string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() && isAgentOn(pid, dir) {
			return pid
		}
	}
	return 0
}

// isUp says whether pid is a `mesh up` (its command line says up).
func isUp(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, a := range strings.Split(string(b), "\x00") {
		if a == "up" {
			return true
		}
	}
	return false
}

// parentOf is pid's parent's pid (/proc/PID/stat's fourth field).
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: no parent", pid)
	}
	return strconv.Atoi(f[1])
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// stopPID stops the agent pid holding dir: SIGTERM, then SIGKILL after
// StopTimeout; it returns once dir's lock is free.
func stopPID(dir string, pid int) error {
	free := func(d time.Duration) bool {
		for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
			if held, err := agentHeld(dir); err == nil && !held {
				return true
			}
			if time.Now().After(end) {
				return false
			}
		}
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if free(StopTimeout) {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if free(5 * time.Second) {
		return nil
	}
	return fmt.Errorf("its lock on %s is still held after SIGKILL", dir)
}
