package controller_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

// bus is a fake Publisher counting puts per node.
type bus struct {
	mu   sync.Mutex
	puts map[string]int
	last map[string]declaration.Declaration
	fail error
}

func newBus() *bus {
	return &bus{puts: map[string]int{}, last: map[string]declaration.Declaration{}}
}

func (b *bus) PutDeclaration(_ context.Context, d declaration.Declaration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail != nil {
		return b.fail
	}
	b.puts[d.Node]++
	b.last[d.Node] = d
	return nil
}

func (b *bus) latest(node string) declaration.Declaration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last[node]
}

func (b *bus) failWith(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fail = err
}

func (b *bus) counts() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.puts)
}

type harness struct {
	ctx   context.Context
	store *memstore.Store
	bus   *bus
	ctrl  *controller.Controller
	ticks chan time.Time
}

func start(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{ctx: ctx, store: memstore.New(), bus: newBus(), ticks: make(chan time.Time)}
	var err error
	h.ctrl, err = controller.New(controller.Config{Store: h.store, Publisher: h.bus, Ticks: h.ticks})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.ctrl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel: %v, want a clean stop", err)
		}
	})
	return h
}

// tick runs an interval pass: the second send is received only once the
// loop is back from the first pass.
func (h *harness) tick() {
	h.ticks <- time.Now()
	h.ticks <- time.Now()
}

func (h *harness) head(t *testing.T) uint64 {
	t.Helper()
	n, err := h.store.Head(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mod(name string) api.ModuleDefinition {
	return api.ModuleDefinition{Module: name, Spec: events.ModuleSpec{
		Routes:     []string{name + ".mesh.example"},
		Containers: []events.ContainerSpec{{Name: name + "-web", Image: "registry.example/" + name + ":1"}},
	}}
}

// TestPushesOnlyWhatChanged: a command pushes each declaration it changed
// exactly once, an idle interval pass pushes nothing and appends nothing,
// and push now pushes regardless.
func TestPushesOnlyWhatChanged(t *testing.T) {
	h := start(t)
	c := h.ctrl
	op := "tester"
	steps := []struct {
		name string
		do   func() error
		want map[string]int // puts per node in this step
		idle bool           // appends nothing
	}{
		{"register a and b", func() error {
			_, err := c.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"a", "b"}})
			return err
		}, map[string]int{"a": 1, "b": 1}, false},
		{"define a module nobody runs", func() error {
			_, err := c.DefineModules(h.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{mod("forge")}})
			return err
		}, nil, false},
		{"idle tick", func() error { h.tick(); return nil }, nil, true},
		{"assign forge to a: a's resources, b's roster", func() error {
			_, err := c.Assign(h.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"})
			return err
		}, map[string]int{"a": 1, "b": 1}, false},
		{"idle tick after a change", func() error { h.tick(); return nil }, nil, true},
		{"a's address: every roster", func() error {
			_, err := c.SetSetting(h.ctx, api.SetSettingRequest{Operator: op, Node: "a", Key: events.SettingPrivateAddress, Value: "10.0.0.1"})
			return err
		}, map[string]int{"a": 1, "b": 1}, false},
		{"redefine forge with another route: every roster", func() error {
			m := mod("forge")
			m.Spec.Routes = append(m.Spec.Routes, "git.mesh.example")
			_, err := c.DefineModules(h.ctx, api.DefineModulesRequest{Operator: op, Modules: []api.ModuleDefinition{m}})
			return err
		}, map[string]int{"a": 1, "b": 1}, false},
		{"a build of an artifact nobody runs", func() error {
			_, err := c.RecordArtifact(h.ctx, api.RecordArtifactRequest{Operator: op, Module: "forge", Name: "web", Digest: "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"})
			return err
		}, nil, false},
		{"a port no container reads", func() error {
			_, err := c.SetSetting(h.ctx, api.SetSettingRequest{Operator: op, Node: "b", Key: events.SettingPortPrefix + "unused", Value: "9"})
			return err
		}, nil, false},
		{"push now, all", func() error {
			_, err := c.Push(h.ctx, api.PushRequest{Operator: op})
			return err
		}, map[string]int{"a": 1, "b": 1}, false},
		{"push now, one", func() error {
			_, err := c.Push(h.ctx, api.PushRequest{Operator: op, Node: "b"})
			return err
		}, map[string]int{"b": 1}, false},
		{"adopt b: b alone", func() error {
			_, err := c.AdoptNode(h.ctx, api.NodeRequest{Operator: op, Node: "b"})
			return err
		}, map[string]int{"b": 1}, false},
		{"register c: c alone", func() error {
			_, err := c.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: op, Nodes: []string{"c"}})
			return err
		}, map[string]int{"c": 1}, false},
		{"release forge from a: every roster", func() error {
			_, err := c.Release(h.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"})
			return err
		}, map[string]int{"a": 1, "b": 1, "c": 1}, false},
		{"a refused command", func() error {
			_, err := c.Take(h.ctx, api.ModuleNodeRequest{Operator: op, Module: "forge", Node: "a"})
			if !errors.Is(err, commands.ErrRejected) {
				return errors.New("a take on a node that is not adopted was not refused")
			}
			return nil
		}, nil, true},
		{"idle tick at the end", func() error { h.tick(); return nil }, nil, true},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before, head := h.bus.counts(), h.head(t)
			if err := s.do(); err != nil {
				t.Fatal(err)
			}
			after := h.bus.counts()
			got := map[string]int{}
			for n, k := range after {
				if d := k - before[n]; d != 0 {
					got[n] = d
				}
			}
			if !maps.Equal(got, s.want) && !(len(got) == 0 && len(s.want) == 0) {
				t.Errorf("puts %v, want %v", got, s.want)
			}
			if s.idle && h.head(t) != head {
				t.Errorf("appended %d event(s), want none", h.head(t)-head)
			}
		})
	}
}

// TestPushFailureRetriedOnTick: a send that fails is recorded and pushed
// again on the next pass.
func TestPushFailureRetriedOnTick(t *testing.T) {
	h := start(t)
	h.bus.failWith(errors.New("bus down"))
	if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	st, err := h.ctrl.Status(h.ctx, api.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes[0].PushFailed == nil {
		t.Fatalf("the failed push is not in a's status: %+v", st.Nodes[0])
	}
	h.bus.failWith(nil)
	h.tick()
	if got := h.bus.counts()["a"]; got != 1 {
		t.Errorf("after the bus returned, %d put(s) to a, want 1", got)
	}
	h.tick()
	if got := h.bus.counts()["a"]; got != 1 {
		t.Errorf("an idle tick pushed again: %d puts", got)
	}
}

// TestComposeFailureRecordedOnce: a node whose declaration does not compose
// has the failure recorded once, not on every pass.
func TestComposeFailureRecordedOnce(t *testing.T) {
	h := start(t)
	c := h.ctrl
	bad := mod("needs-build") // runs an artifact with no recorded build
	bad.Spec.Containers[0].Image, bad.Spec.Containers[0].Artifact = "", "needs-build/web"
	for _, err := range []error{
		func() error {
			_, err := c.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}})
			return err
		}(),
		func() error {
			_, err := c.DefineModules(h.ctx, api.DefineModulesRequest{Operator: "x", Modules: []api.ModuleDefinition{bad}})
			return err
		}(),
		func() error {
			_, err := c.Assign(h.ctx, api.ModuleNodeRequest{Operator: "x", Module: "needs-build", Node: "a"})
			return err
		}(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	failures := func() int {
		p, err := c.Timeline(h.ctx, api.TimelineRequest{Type: events.TypeDeclarationComposeFailed})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Entries)
	}
	if n := failures(); n != 1 {
		t.Fatalf("%d compose failures recorded after the assign, want 1", n)
	}
	head := h.head(t)
	h.tick()
	h.tick()
	if n := failures(); n != 1 || h.head(t) != head {
		t.Errorf("idle ticks recorded the same failure again: %d failures, %d new events", n, h.head(t)-head)
	}
	res, err := c.Push(h.ctx, api.PushRequest{Node: "a"})
	if err != nil || len(res.Pushes) != 1 || res.Pushes[0].Error == "" {
		t.Errorf("push now of a node that does not compose: %+v, %v; want its error in the result", res, err)
	}
}

// TestRecordReport: a report is recorded once, however often delivered.
func TestRecordReport(t *testing.T) {
	h := start(t)
	if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	d := h.bus.latest("a")
	del := commands.Delivery{
		Report: events.ApplyReported{Node: "a", Declaration: d.ID, Digest: d.Digest},
		// Applied after its push, by the controller's (wall) clock: the door
		// refuses a report dated before its declaration was composed.
		ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Now(), Correlation: d.Correlation,
	}
	first, err := h.ctrl.RecordReport(h.ctx, del)
	if err != nil || len(first) != 1 {
		t.Fatalf("first delivery: %v, %v", first, err)
	}
	head := h.head(t)
	again, err := h.ctrl.RecordReport(h.ctx, del)
	if err != nil || len(again) != 1 || again[0].Position != first[0].Position || h.head(t) != head {
		t.Errorf("second delivery: %v, %v (head %d → %d); want the same event, nothing appended", again, err, head, h.head(t))
	}
	st, err := h.ctrl.NodeShow(h.ctx, "a")
	if err != nil || st.Status.Applied == nil {
		t.Errorf("a's status after the report: %+v, %v", st.Status, err)
	}
	del.Report.Node, del.ApplyID = "ghost", uuid.Must(uuid.NewV7())
	var rej *commands.Rejection
	if _, err := h.ctrl.RecordReport(h.ctx, del); !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
		t.Errorf("a report from an unregistered node: %v", err)
	}
}

// TestRecordReportRefused: a report the door refuses is recorded as
// report.refused on its node's stream, once, and the node's status then
// says so (failing, the refusal shown); a good report after it is recorded.
func TestRecordReportRefused(t *testing.T) {
	h := start(t)
	if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	d := h.bus.latest("a")
	bad := commands.Delivery{
		Report:  events.ApplyReported{Node: "a", Declaration: "b/1", Unchanged: 0},
		ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Now(), Size: 80, Digest: "sha256:bad1",
	}
	head := h.head(t)
	_, err := h.ctrl.RecordReport(h.ctx, bad)
	var ref *commands.Refusal
	if !errors.As(err, &ref) || ref.Reason != events.RefusedDecl || !errors.Is(err, commands.ErrRejected) {
		t.Fatalf("a report of b's declaration from a: %v, want refused as %s", err, events.RefusedDecl)
	}
	if _, err := h.ctrl.RecordReport(h.ctx, bad); !errors.As(err, &ref) {
		t.Fatalf("the same report again: %v", err)
	}
	evs, err := h.store.ReadAll(h.ctx, head, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != events.TypeReportRefused || evs[0].Stream != "node-a" || evs[0].ID != commands.RefusalID("a", "sha256:bad1") {
		t.Fatalf("appended %v, want one report.refused on node-a", evs)
	}
	st, err := h.ctrl.NodeShow(h.ctx, "a")
	if err != nil || st.Status.Health != "failing" || st.Status.ReportRefused == nil || st.Status.ReportRefused.Reason != events.RefusedDecl {
		t.Fatalf("a's status after the refusal: %+v, %v", st.Status, err)
	}

	good := commands.Delivery{
		Report:  events.ApplyReported{Node: "a", Declaration: d.ID, Digest: d.Digest},
		ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: time.Now(), Correlation: d.Correlation,
	}
	if _, err := h.ctrl.RecordReport(h.ctx, good); err != nil {
		t.Fatalf("a good report after the refusal: %v", err)
	}
	st, err = h.ctrl.NodeShow(h.ctx, "a")
	if err != nil || st.Status.ReportRefused != nil || st.Status.Applied == nil {
		t.Fatalf("a's status after a good report: %+v, %v", st.Status, err)
	}

	ghost := bad
	ghost.Report.Node = "ghost"
	var rej *commands.Rejection
	if _, err := h.ctrl.RecordReport(h.ctx, ghost); !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
		t.Fatalf("a report from an unregistered node: %v", err)
	}
}

// TestLocal: a controller that does not run and has no bus answers from
// the store (catching up on each query) and pushes nothing.
func TestLocal(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	c, err := controller.New(controller.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx, api.StatusRequest{})
	if err != nil || len(st.Nodes) != 1 || st.Nodes[0].Pushed != nil {
		t.Errorf("status: %+v, %v", st, err)
	}
	if _, err := c.Push(ctx, api.PushRequest{}); err == nil {
		t.Error("push without a bus succeeded")
	}
	info, err := c.Info(ctx)
	if err != nil || info.Role != api.RoleLocal || info.Publishing || info.StoreHead != 1 || info.ProjectionPosition != 1 {
		t.Errorf("info %+v, %v", info, err)
	}
	// Events appended behind its back are seen by the next query.
	other, err := controller.New(controller.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(ctx, api.StatusRequest{}); err != nil || len(st.Nodes) != 2 {
		t.Errorf("status after another writer: %+v, %v", st, err)
	}
}

func TestRunTwice(t *testing.T) {
	h := start(t)
	if _, err := h.ctrl.Info(h.ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && func() bool { i, _ := h.ctrl.Info(h.ctx); return i.Role != api.RoleLeader }(); i++ {
		time.Sleep(time.Millisecond)
	}
	if err := h.ctrl.Run(h.ctx); err == nil {
		t.Error("a second Run started")
	}
}

func TestInfoFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := controller.ReadInfo(dir); !errors.Is(err, controller.ErrNoController) {
		t.Errorf("no file: %v", err)
	}
	remove, err := controller.WriteInfo(dir, controller.Info{Listen: "127.0.0.1:7480"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := controller.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Listen != "127.0.0.1:7480" || info.URL != "http://127.0.0.1:7480" || info.PID != os.Getpid() || info.Started.IsZero() {
		t.Errorf("info %+v", info)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.ReadInfo(dir); !errors.Is(err, controller.ErrNoController) {
		t.Errorf("after the clean stop: %v", err)
	}

	// A file left by a process that is gone (killed, not stopped).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("cannot run true to get a dead pid: %v", err)
	}
	if _, err := controller.WriteInfo(dir, controller.Info{Listen: "127.0.0.1:7480", PID: gone.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.ReadInfo(dir); !errors.Is(err, controller.ErrNoController) {
		t.Errorf("a dead controller's file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, controller.InfoFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.ReadInfo(dir); err == nil || errors.Is(err, controller.ErrNoController) {
		t.Errorf("a torn file: %v", err)
	}
}

// TestConcurrentCommands: commands and queries from many clients at once
// (run with -race); each registered node is pushed exactly once.
func TestConcurrentCommands(t *testing.T) {
	h := start(t)
	const workers, each = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				node := "w" + string(rune('a'+w)) + "-" + string(rune('0'+i))
				if _, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{node}}); err != nil {
					errs <- err
				}
				st, err := h.ctrl.Status(h.ctx, api.StatusRequest{Nodes: []string{node}})
				if err != nil || len(st.Nodes) != 1 {
					errs <- fmt.Errorf("status of %s right after registering it: %+v, %v", node, st, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	h.tick()
	counts := h.bus.counts()
	if len(counts) != workers*each {
		t.Errorf("%d nodes pushed to, want %d", len(counts), workers*each)
	}
	for n, k := range counts {
		if k != 1 {
			t.Errorf("%s pushed %d times, want once", n, k)
		}
	}
}

// TestBatchAllOrNothing: a batch is decided as commands.Handler.ExecuteAll
// decides it, each command against the state the ones before it leave, so
// two modules of one request routing one name are refused together and
// neither is written; a request naming one stream twice is refused.
func TestBatchAllOrNothing(t *testing.T) {
	h := start(t)
	web, www := mod("web"), mod("www")
	www.Spec.Routes = web.Spec.Routes
	for _, tc := range []struct {
		name string
		call func() error
		code string
	}{
		{"two modules routing one name", func() error {
			_, err := h.ctrl.DefineModules(h.ctx, api.DefineModulesRequest{Operator: "x", Modules: []api.ModuleDefinition{web, www}})
			return err
		}, commands.CodeRouteClaimed},
		{"one node twice", func() error {
			_, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a", "a"}})
			return err
		}, commands.CodeInvalid},
		{"one bad name of three", func() error {
			_, err := h.ctrl.RegisterNodes(h.ctx, api.RegisterNodesRequest{Operator: "x", Nodes: []string{"a", "B", "c"}})
			return err
		}, commands.CodeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.head(t)
			var rej *commands.Rejection
			if err := tc.call(); !errors.As(err, &rej) || rej.Code != tc.code {
				t.Fatalf("got %v, want a rejection with code %s", err, tc.code)
			}
			if after := h.head(t); after != before {
				t.Errorf("a refused batch appended %d event(s)", after-before)
			}
		})
	}
}
