package controllerd_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/controllerd"
)

// These tests run controllerd.Run on a bolt store, its embedded bus and its API
// on free ports, with a fake Leadership in place of PostgreSQL's advisory
// lock: the test decides when the lock is granted and when it is lost.

// fakeLeadership is a Leadership whose lock the test hands out.
type fakeLeadership struct {
	free   bool  // TryLeader takes the lock
	tryErr error // TryLeader fails with it

	grant     chan error    // AcquireLeader returns: nil a lock, else the error
	acquiring chan struct{} // closed once AcquireLeader waits
	acquired  chan struct{} // closed when AcquireLeader returns, ctx's end included
	once      sync.Once
	ctxErr    error // AcquireLeader's ctx's error when it returned (after acquired)

	mu    sync.Mutex
	locks []*fakeLock
}

func newFakeLeadership(free bool) *fakeLeadership {
	return &fakeLeadership{free: free, grant: make(chan error, 1), acquiring: make(chan struct{}), acquired: make(chan struct{})}
}

func (f *fakeLeadership) TryLeader(ctx context.Context) (controllerd.LeaderLock, bool, error) {
	if f.tryErr != nil {
		return nil, false, f.tryErr
	}
	if !f.free {
		return nil, false, nil
	}
	return f.newLock(), true, nil
}

func (f *fakeLeadership) AcquireLeader(ctx context.Context) (controllerd.LeaderLock, error) {
	f.once.Do(func() { close(f.acquiring) })
	defer close(f.acquired)
	select {
	case err := <-f.grant:
		if err != nil {
			return nil, err
		}
		return f.newLock(), nil
	case <-ctx.Done():
		f.ctxErr = ctx.Err()
		return nil, ctx.Err()
	}
}

func (f *fakeLeadership) newLock() *fakeLock {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := &fakeLock{lost: make(chan struct{}), released: make(chan struct{})}
	f.locks = append(f.locks, l)
	return l
}

// held is the one lock handed out.
func (f *fakeLeadership) held(t *testing.T) *fakeLock {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.locks) != 1 {
		t.Fatalf("%d lock(s) handed out, want 1", len(f.locks))
	}
	return f.locks[0]
}

// fakeLock is a held fake lock.
type fakeLock struct {
	lost     chan struct{}
	err      error // set before lost is closed
	released chan struct{}
	once     sync.Once
}

func (l *fakeLock) Lost() <-chan struct{} { return l.lost }

func (l *fakeLock) Err() error {
	select {
	case <-l.lost:
		return l.err
	default:
		return nil
	}
}

func (l *fakeLock) Release() error {
	l.once.Do(func() { close(l.released) })
	return nil
}

// lose makes the lock lost, for err.
func (l *fakeLock) lose(err error) {
	l.err = err
	close(l.lost)
}

func (l *fakeLock) isReleased() bool {
	select {
	case <-l.released:
		return true
	default:
		return false
	}
}

// running is one controllerd.Run in a goroutine.
type running struct {
	data   string
	client *httpapi.Client
	cancel context.CancelFunc
	done   chan error
}

func testLogger() *slog.Logger {
	if os.Getenv("MESH_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// start runs a controller under lead and waits until it serves (or Run
// returns: then the client is nil and done holds its error).
func start(t *testing.T, lead controllerd.Leadership) *running {
	t.Helper()
	r := &running{data: t.TempDir(), done: make(chan error, 1)}
	ready := make(chan controllerd.Ready, 1)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	cfg := controllerd.Config{
		Data: r.data, Listen: "127.0.0.1:0", BusListen: "127.0.0.1:0", Interval: time.Hour,
		Logger: testLogger(), Leadership: lead, Ready: func(rd controllerd.Ready) { ready <- rd },
	}
	go func() { r.done <- controllerd.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(40 * time.Second):
			t.Error("controllerd.Run did not stop within 40s")
		}
	})
	select {
	case rd := <-ready:
		c, err := httpapi.NewClient(rd.APIURL, rd.Token)
		if err != nil {
			t.Fatal(err)
		}
		r.client = c
	case err := <-r.done:
		r.done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("controllerd.Run did not serve within 30s")
	}
	return r
}

// stopped waits for Run's error.
func (r *running) stopped(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(40 * time.Second):
		t.Fatal("controllerd.Run did not return within 40s")
		return nil
	}
}

func (r *running) role(t *testing.T) string {
	t.Helper()
	info, err := r.client.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.Role
}

func (r *running) register(node string) error {
	_, err := r.client.RegisterNodes(context.Background(), api.RegisterNodesRequest{Operator: "tester", Nodes: []string{node}})
	return err
}

// waitRole waits up to 10s for role.
func (r *running) waitRole(t *testing.T, role string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := r.role(t); got != role; got = r.role(t) {
		if time.Now().After(deadline) {
			t.Fatalf("role %q after 10s, want %q", got, role)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantStandbyRefusal(t *testing.T, err error) {
	t.Helper()
	var rej *commands.Rejection
	if !errors.As(err, &rej) || rej.Code != api.CodeStandby {
		t.Fatalf("a write to the standby: %v, want a rejection with code %s", err, api.CodeStandby)
	}
}

func wantInfoRemoved(t *testing.T, data string) {
	t.Helper()
	if _, err := controller.ReadInfo(data); !errors.Is(err, controller.ErrNoController) {
		t.Errorf("controller.json after Run returned: %v, want it removed", err)
	}
}

// TestStandbyUntilGranted: a lock held elsewhere leaves the controller a
// standby that serves (reads answered, writes refused) and waits; granted,
// it leads and takes writes; stopped, Run returns nil and the lock is
// released.
func TestStandbyUntilGranted(t *testing.T) {
	lead := newFakeLeadership(false)
	r := start(t, lead)
	if r.client == nil {
		t.Fatalf("controllerd.Run: %v", r.stopped(t))
	}
	if got := r.role(t); got != api.RoleStandby {
		t.Fatalf("role before the lock is granted: %q, want %q", got, api.RoleStandby)
	}
	wantStandbyRefusal(t, r.register("a"))
	select {
	case <-lead.acquiring:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby is not waiting for the lock")
	}
	if got := r.role(t); got != api.RoleStandby { // still: waiting is not leading
		t.Fatalf("role while waiting: %q, want %q", got, api.RoleStandby)
	}

	lead.grant <- nil
	r.waitRole(t, api.RoleLeader)
	if err := r.register("a"); err != nil {
		t.Fatalf("a write once leading: %v", err)
	}
	l := lead.held(t)
	if l.isReleased() {
		t.Fatal("the lock was released while leading")
	}

	r.cancel()
	if err := r.stopped(t); err != nil {
		t.Fatalf("controllerd.Run after a stop: %v, want nil", err)
	}
	if !l.isReleased() {
		t.Error("the lock was not released by a clean stop")
	}
	wantInfoRemoved(t, r.data)
}

// TestLeaderLostExits: a free lock is taken before the controller serves,
// so it leads from its first answer; lost, Run stops at once and returns
// an error wrapping the lock's, everything stopped.
func TestLeaderLostExits(t *testing.T) {
	lead := newFakeLeadership(true)
	r := start(t, lead)
	if r.client == nil {
		t.Fatalf("controllerd.Run: %v", r.stopped(t))
	}
	if got := r.role(t); got != api.RoleLeader {
		t.Fatalf("role of a controller that took a free lock, as soon as it serves: %q, want %q", got, api.RoleLeader)
	}
	if err := r.register("a"); err != nil {
		t.Fatalf("a write to the leader: %v", err)
	}
	select {
	case <-lead.acquiring:
		t.Fatal("a controller holding the lock waits for it again")
	default:
	}

	errGone := errors.New("fake: the lock's session ended")
	l := lead.held(t)
	l.lose(errGone)
	err := r.stopped(t)
	if !errors.Is(err, errGone) || !strings.Contains(err.Error(), "lost the store's leader lock") {
		t.Fatalf("controllerd.Run after the lock was lost: %v, want an error wrapping %q", err, errGone)
	}
	if !l.isReleased() {
		t.Error("the lost lock was not released")
	}
	wantInfoRemoved(t, r.data)
}

// TestStandbyStoppedWhileWaiting: stopped before it is granted the lock, a
// standby ends its wait and Run returns nil.
func TestStandbyStoppedWhileWaiting(t *testing.T) {
	lead := newFakeLeadership(false)
	r := start(t, lead)
	if r.client == nil {
		t.Fatalf("controllerd.Run: %v", r.stopped(t))
	}
	select {
	case <-lead.acquiring:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby is not waiting for the lock")
	}
	r.cancel()
	if err := r.stopped(t); err != nil {
		t.Fatalf("controllerd.Run stopped as a standby: %v, want nil", err)
	}
	<-lead.acquired
	if !errors.Is(lead.ctxErr, context.Canceled) {
		t.Errorf("the wait for the lock ended with ctx %v, want it cancelled", lead.ctxErr)
	}
	wantInfoRemoved(t, r.data)
}

// TestLeadershipFails: an election that fails is Run's error: before it
// serves when the lock cannot even be tried, while a standby when the
// wait fails.
func TestLeadershipFails(t *testing.T) {
	errDown := errors.New("fake: the database is down")
	t.Run("try", func(t *testing.T) {
		lead := newFakeLeadership(false)
		lead.tryErr = errDown
		r := start(t, lead)
		if r.client != nil {
			t.Fatal("the controller serves although its lock could not be tried")
		}
		err := r.stopped(t)
		if !errors.Is(err, errDown) || !strings.Contains(err.Error(), "controller: leader lock: ") {
			t.Fatalf("controllerd.Run: %v, want controller: leader lock: %v", err, errDown)
		}
		wantInfoRemoved(t, r.data)
	})
	t.Run("acquire", func(t *testing.T) {
		lead := newFakeLeadership(false)
		r := start(t, lead)
		if r.client == nil {
			t.Fatalf("controllerd.Run: %v", r.stopped(t))
		}
		lead.grant <- errDown
		err := r.stopped(t)
		if !errors.Is(err, errDown) || !strings.Contains(err.Error(), "leader lock: ") {
			t.Fatalf("controllerd.Run: %v, want an error wrapping %v", err, errDown)
		}
		lead.mu.Lock()
		n := len(lead.locks)
		lead.mu.Unlock()
		if n != 0 {
			t.Errorf("%d lock(s) handed out, want none", n)
		}
		wantInfoRemoved(t, r.data)
	})
}
