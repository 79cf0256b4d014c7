package hosttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"meshplane/internal/forker"
	"meshplane/internal/safego"
)

// Proc is a long-running process on a host, started by Start: its stdout
// and stderr go to one file in the test's temporary directory.
type Proc struct {
	// Cmd is the process's command (its Process once started).
	Cmd  *exec.Cmd
	host *Host
	log  string
	done chan struct{}
	err  error // Cmd.Wait's, once done is closed
}

// procs numbers the processes Start starts, for their log files' names.
var procs atomic.Uint64

// tailOnFailure is how much of a process's output a failed test logs.
const tailOnFailure = 4 << 10

// Start runs name with args on the host until it exits or the test ends
// (t.Cleanup: SIGKILL to its process group, then wait; if t failed, the
// end of its output is logged). env is added to the test's environment
// ("NAME=VALUE"; later entries win). Its stdout and stderr go to
// LogFile, in t.TempDir(). It fails t if the process cannot start.
func (h *Host) Start(t testing.TB, env []string, name string, args ...string) *Proc {
	t.Helper()
	log := filepath.Join(t.TempDir(), fmt.Sprintf("h%d-%s-%d.log", h.index, filepath.Base(name), procs.Add(1)))
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("hosttest: %s on %s: %v", name, h, err)
	}
	defer f.Close() // the child has its own copy
	p := &Proc{Cmd: h.Command(context.Background(), name, args...), host: h, log: log, done: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = f, f
	// Setpgid: Kill takes its children too. Pdeathsig: the process dies
	// with the test's, even one killed without its cleanups, because it is
	// started on the forker's thread, which lives as long as the process.
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := forker.Do(p.Cmd.Start); err != nil {
		t.Fatalf("hosttest: start %s on %s: %v", name, h, err)
	}
	safego.Go("hosttest.wait", nil, func() error {
		p.err = p.Cmd.Wait()
		close(p.done)
		return nil
	})
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("hosttest: %s on %s (%s), the end of its output:\n%s", strings.Join(p.Cmd.Args[4:], " "), h, p.log, p.tail(tailOnFailure))
		}
	})
	return p
}

// Pid is the process's id (the program's: ip netns exec execs it).
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// LogFile is the file holding the process's stdout and stderr.
func (p *Proc) LogFile() string { return p.log }

// Output is what the process has written so far, stdout and stderr
// interleaved.
func (p *Proc) Output() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(hosttest: read %s: %v)", p.log, err)
	}
	return string(b)
}

// tail is the last n bytes of Output.
func (p *Proc) tail(n int) string {
	s := p.Output()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited says whether the process has exited, and if so Cmd.Wait's error
// (nil for exit 0).
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Signal sends sig to the process (not its children).
func (p *Proc) Signal(sig os.Signal) error {
	if err := p.Cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("hosttest: signal %s: %w", p.host, err)
	}
	return nil
}

// Stop sends SIGTERM and waits up to timeout for the process to exit:
// Cmd.Wait's error (nil for exit 0), or an error if it did not exit in
// time (it is then killed).
func (p *Proc) Stop(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("hosttest: %s on %s did not stop within %s of SIGTERM; killed", p.Cmd.Args[4], p.host, timeout)
	}
}

// Kill sends SIGKILL to the process and its process group (what it
// started), and waits for it to exit. Killing an exited process does
// nothing.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	_ = p.Cmd.Process.Kill()
	<-p.done
}
