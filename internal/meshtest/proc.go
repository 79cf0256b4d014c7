package meshtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/storeurl"
	"meshplane/internal/testwait"
	"meshplane/projections"
)

// BuiltBinary is a mesh binary the process tests run, built on first use
// with its build tags; TestMain removes its directory (removeBinary).
type BuiltBinary struct {
	Tags      string
	Once      sync.Once
	Dir, Path string
	Err       error
}

var (
	// MeshBinary is the binary as it ships.
	MeshBinary = &BuiltBinary{}
	// PanicBin is built with -tags meshplane_panictest, in which
	// MESH_TEST_PANIC=WHERE@FILE makes the goroutine boundary WHERE panic
	// once FILE exists (package safego's inject_panictest.go): the only
	// build that reads it.
	PanicBin = &BuiltBinary{Tags: "meshplane_panictest"}
)

// get builds b once and returns its path.
func (b *BuiltBinary) Get(t testing.TB) string {
	t.Helper()
	b.Once.Do(func() {
		dir, err := os.MkdirTemp("", "mesh-bin-")
		if err != nil {
			b.Err = err
			return
		}
		b.Dir = dir
		b.Path = filepath.Join(dir, "mesh")
		args := []string{"build", "-o", b.Path}
		if b.Tags != "" {
			args = append(args, "-tags", b.Tags)
		}
		out, err := exec.Command("go", append(args, "meshplane/cmd/mesh")...).CombinedOutput()
		if err != nil {
			b.Err = fmt.Errorf("go build (tags %q): %v\n%s", b.Tags, err, out)
		}
	})
	if b.Err != nil {
		t.Fatal(b.Err)
	}
	return b.Path
}

// Binary builds the mesh binary once.
func Binary(t testing.TB) string { return MeshBinary.Get(t) }

// RemoveBinary removes what binary and panicBinary built.
func RemoveBinary() {
	for _, b := range []*BuiltBinary{MeshBinary, PanicBin} {
		if b.Dir != "" {
			os.RemoveAll(b.Dir)
		}
	}
}

// LockedBuffer is a bytes.Buffer written by a child process and read by the
// test.
type LockedBuffer struct {
	Mu sync.Mutex
	B  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.B.Write(p)
}

func (l *LockedBuffer) String() string {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.B.String()
}

// Proc is a running mesh process.
type Proc struct {
	Cmd  *exec.Cmd
	Out  *LockedBuffer
	Done chan struct{}
	Err  error
}

func StartProc(t testing.TB, env []string, args ...string) *Proc {
	t.Helper()
	return StartBinary(t, Binary(t), env, args...)
}

// StartBinary is startProc of the binary at bin.
func StartBinary(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(bin, args...), Out: &LockedBuffer{}, Done: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.Err = p.Cmd.Wait(); close(p.Done) }()
	t.Cleanup(func() { p.Kill() })
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Done:
		if p.Err != nil {
			t.Fatalf("%v: %v\n%s", p.Cmd.Args, p.Err, p.Out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%v did not stop in 30 s\n%s", p.Cmd.Args, p.Out)
	}
}

// kill sends SIGKILL and waits.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.Done
}

// CtlProc is a controller process: mesh up --data DATA --listen API
// --bus-listen BUS.
type CtlProc struct {
	*Proc
	Data, URL, Token string
	Client           *httpapi.Client
}

// StartCtl starts a controller on data and waits until it serves (its
// controller.json names it).
func StartCtl(t testing.TB, data, apiAt, busAt string, extra ...string) *CtlProc {
	t.Helper()
	p := StartProc(t, nil, append([]string{"up", "--data", data, "--listen", apiAt, "--bus-listen", busAt}, extra...)...)
	c := &CtlProc{Proc: p, Data: data}
	testwait.Eventually(t, 30*time.Second, func() error {
		select {
		case <-p.Done:
			t.Fatalf("the controller exited: %v\n%s", p.Err, p.Out)
		default:
		}
		info, err := controller.ReadInfo(data)
		if err != nil {
			return err
		}
		if info.PID != p.Cmd.Process.Pid {
			return errors.New("controller.json is another process's")
		}
		c.URL = info.URL
		return nil
	})
	tok, err := httpapi.ReadToken(filepath.Join(data, httpapi.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	c.Token = tok
	if c.Client, err = httpapi.NewClient(c.URL, tok); err != nil {
		t.Fatal(err)
	}
	return c
}

// env is the CLI's environment against c: MESH_SERVER, MESH_TOKEN, and
// MESH_DATA (where node register --creds finds the bus's trust root).
func (c *CtlProc) Env() []string {
	return []string{"MESH_SERVER=" + c.URL, "MESH_TOKEN=" + c.Token, "MESH_DATA=" + c.Data}
}

// CLI runs the mesh binary to the end.
func CLI(t testing.TB, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		code = xe.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, o.String(), e.String()
}

// MustCLI runs the CLI and fails the test unless it exits 0.
func MustCLI(t testing.TB, env []string, args ...string) string {
	t.Helper()
	code, out, errOut := CLI(t, env, args...)
	if code != ExitOK {
		t.Fatalf("mesh %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// StatusJSON is `mesh status -o json NODE` through the controller.
func StatusJSON(t testing.TB, env []string, node string) api.NodeStatus {
	t.Helper()
	var st []api.NodeStatus
	if err := json.Unmarshal([]byte(MustCLI(t, env, "status", "-o", "json", node)), &st); err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Node != node {
		t.Fatalf("status -o json %s: %+v", node, st)
	}
	return st[0]
}

// ProcSetUp registers and adopts nodes (with their credentials), defines searxng, and
// assigns and takes it on each, all through the CLI against c; it returns
// each node's credentials file.
func ProcSetUp(t testing.TB, c *CtlProc, nodes ...string) map[string]string {
	t.Helper()
	env := c.Env()
	creds := map[string]string{}
	dir := t.TempDir()
	for _, n := range nodes {
		creds[n] = filepath.Join(dir, n+".creds")
		MustCLI(t, env, "node", "register", n, "--creds", creds[n])
		MustCLI(t, env, "node", "adopt", n)
		if st, err := os.Stat(creds[n]); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("credentials %s: %v, mode %v; want mode 0600", creds[n], err, st.Mode())
		}
	}
	MustCLI(t, env, "module", "define", RepoPath(t, "examples/modules/searxng.yaml"))
	for _, n := range nodes {
		MustCLI(t, env, "assign", "searxng", n)
		MustCLI(t, env, "take", "searxng", n)
	}
	return creds
}

// StartAgentProc runs `mesh agent --creds FILE --data DIR --runtime sim`.
func StartAgentProc(t testing.TB, creds, data string, extra ...string) *Proc {
	t.Helper()
	return StartProc(t, []string{"MESH_SERVER=", "MESH_TOKEN="},
		append([]string{"agent", "--creds", creds, "--data", data, "--runtime", "sim"}, extra...)...)
}

// ProcInSync waits until `mesh status -o json NODE` says in sync.
func ProcInSync(t testing.TB, env []string, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		testwait.Eventually(t, 30*time.Second, func() error {
			if st := StatusJSON(t, env, n); st.Sync != projections.SyncInSync {
				return fmt.Errorf("%s: sync %q", n, st.Sync)
			}
			return nil
		})
	}
}

// StoreEvents reads every event of a stopped controller's store.
func StoreEvents(t testing.TB, data string) []events.Event {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(data, storeurl.File), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.ReadAll(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// ExitOK and ExitFailed are cmd/mesh's exit codes: success, a command that ran and failed.
const (
	ExitOK     = 0
	ExitFailed = 1
)

// RepoPath is rel in the repository, from the directory of whichever
// package's test runs (cmd/mesh, test, controllerd): the nearest directory
// up holding go.mod.
func RepoPath(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, rel)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatalf("no go.mod above the test's directory for %s", rel)
		}
		dir = up
	}
}
