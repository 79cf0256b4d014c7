package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

const op = "operator:test"

func setup(t *testing.T, opts ...memstore.Option) (*commands.Handler, events.Store) {
	t.Helper()
	store := memstore.New(opts...)
	t.Cleanup(func() { store.Close() })
	return commands.NewHandler(store, events.NewRegistry()), store
}

func must(t *testing.T, h *commands.Handler, cs ...commands.Command) {
	t.Helper()
	for _, c := range cs {
		if _, err := h.Execute(context.Background(), op, c); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
}

func mesh(t *testing.T, h *commands.Handler) {
	must(t, h,
		commands.RegisterNode{Node: "novox"}, commands.RegisterNode{Node: "g14"},
		commands.DefineModule{Module: "searxng", Spec: events.ModuleSpec{Routes: []string{"searxng.zurag.be"},
			Containers: []events.ContainerSpec{{Name: "searxng", Image: "searxng:1"}}}},
		commands.DefineModule{Module: "proxy", Spec: events.ModuleSpec{
			Containers: []events.ContainerSpec{{Name: "proxy", Image: "caddy:2"}}}},
		commands.AssignModule{Module: "searxng", Node: "g14"},
		commands.AssignModule{Module: "proxy", Node: "novox"},
	)
}

func TestExecuteAppendsAndRejects(t *testing.T) {
	h, store := setup(t)
	mesh(t, h)
	_, err := h.Execute(context.Background(), op, commands.AssignModule{Module: "ghost", Node: "novox"})
	var r *commands.Rejection
	if !errors.As(err, &r) || r.Code != commands.CodeModuleUnknown {
		t.Fatalf("assigning an undefined module: %v", err)
	}
	evs, err := store.ReadStream(context.Background(), "node-novox", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Type != events.TypeModuleAssigned || evs[1].Actor != op {
		t.Fatalf("node-novox = %v", evs)
	}
}

// Commands that race on one stream: every one lands exactly once, the
// losers re-read and re-decide.
func TestExecuteRetriesOnConflict(t *testing.T) {
	h, store := setup(t)
	must(t, h, commands.RegisterNode{Node: "novox"})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// A separate handler each: separate caches, real conflicts.
			h := commands.NewHandler(store, events.NewRegistry(), commands.WithRetries(20))
			_, err := h.Execute(context.Background(), op, commands.SetNodeSetting{Node: "novox", Key: "port.p" + string(rune('a'+i)), Value: "1000"})
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := h.Node(context.Background(), "novox")
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Settings) != 8 || n.Version != 9 {
		t.Fatalf("settings %v at version %d, want 8 at version 9", n.Settings, n.Version)
	}
}

func TestExecuteGivesUpNamingTheConflict(t *testing.T) {
	// A store whose stream always moves on between read and append.
	h0, store := setup(t)
	must(t, h0, commands.RegisterNode{Node: "novox"})
	racing := &racingStore{Store: store}
	h := commands.NewHandler(racing, events.NewRegistry(), commands.WithRetries(2))
	_, err := h.Execute(context.Background(), op, commands.AdoptNode{Node: "novox"})
	if !errors.Is(err, commands.ErrConflict) || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("Execute = %v, want a conflict after 3 attempts", err)
	}
}

type racingStore struct{ events.Store }

func (s *racingStore) Append(ctx context.Context, stream string, exp events.ExpectedVersion, evs ...events.Event) ([]events.Event, error) {
	other := events.Event{ID: events.NewID(), Type: "test.interloper", Schema: 1}
	if _, err := s.Store.Append(ctx, stream, events.Any, other); err != nil {
		return nil, err
	}
	return s.Store.Append(ctx, stream, exp, evs...)
}

func TestPushRecordsComposePushAndFailure(t *testing.T) {
	var failG14 bool
	h, store := setup(t, memstore.WithFault(func(op memstore.Op, stream string) error {
		if failG14 && op == memstore.OpReadStream && stream == "node-g14" {
			return errors.New("FATAL: the database system is not yet accepting connections")
		}
		return nil
	}))
	mesh(t, h)
	var sent []declaration.Declaration
	send := func(ctx context.Context, d declaration.Declaration) error { sent = append(sent, d); return nil }

	d, err := pushNow(h, "novox", send)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || sent[0].Digest != d.Digest || d.ID != "novox/1" {
		t.Fatalf("sent %v", sent)
	}

	failG14 = true
	_, err = pushNow(h, "novox", send)
	if err == nil || !strings.Contains(err.Error(), "g14") {
		t.Fatalf("push with g14 unreadable = %v, want an error naming g14", err)
	}
	if len(sent) != 1 {
		t.Fatalf("a declaration was sent beside a compose failure")
	}

	failG14 = false
	_, err = pushNow(h, "novox", func(context.Context, declaration.Declaration) error { return errors.New("bus cut") })
	if err == nil || !strings.Contains(err.Error(), "bus cut") {
		t.Fatalf("push with the bus cut = %v", err)
	}

	evs, _ := store.ReadStream(context.Background(), "node-novox", 0, 0)
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	// The last push composed what novox/1 was, after a failed compose: it
	// is recorded anew (novox/2, the same digest), since only a compose
	// that succeeds ends the failure, and its push's failure shares its
	// correlation.
	want := "node.registered module.assigned declaration.composed declaration.pushed declaration.compose-failed declaration.composed declaration.push-failed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("node-novox:\n got %s\nwant %s", got, want)
	}
	if evs[2].Correlation == "" || evs[2].Correlation != evs[3].Correlation {
		t.Errorf("composed and pushed do not share a correlation")
	}
	if evs[5].Correlation == "" || evs[6].Correlation != evs[5].Correlation {
		t.Errorf("the compose after the failure and its push's failure do not share a correlation")
	}
	again, err := events.DecodeAs[events.DeclarationComposed](events.NewRegistry(), evs[5])
	if err != nil || again.Declaration != "novox/2" || again.Digest != d.Digest {
		t.Errorf("the compose after the failure: %+v (%v), want novox/2 with novox/1's digest %s", again, err, d.Digest)
	}
	if !strings.Contains(string(evs[4].Data), `"read":"node g14"`) {
		t.Errorf("compose-failed does not name the read: %s", evs[4].Data)
	}
}

func TestRecordApplyIsIdempotent(t *testing.T) {
	h, store := setup(t)
	mesh(t, h)
	id := events.NewID()
	d := commands.Delivery{
		Report:  events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 2, Unchanged: 2},
		ApplyID: id, AppliedAt: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC), Correlation: "c1",
	}
	first, err := h.RecordApply(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	// Delivered again, after a lost acknowledgement, as a late delivery.
	d.Attempts, d.LastError = 2, "nats: connection closed"
	again, err := h.RecordApply(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Position != first[0].Position {
		t.Fatalf("re-delivery appended again: %v then %v", first, again)
	}
	n := 0
	evs, _ := store.ReadStream(context.Background(), "node-novox", 0, 0)
	for _, ev := range evs {
		if ev.Type == events.TypeApplyReported {
			n++
			if ev.ID != id || ev.Actor != "agent:novox" {
				t.Errorf("apply.reported %v", ev)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d apply.reported events, want 1", n)
	}

	// A report first delivered late carries a note beside it.
	d2 := d
	d2.ApplyID = events.NewID()
	stored, err := h.RecordApply(context.Background(), d2)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || stored[1].Type != events.TypeReportDeliveredLate {
		t.Fatalf("late delivery stored %v", stored)
	}
	if _, err := h.RecordApply(context.Background(), commands.Delivery{Report: events.ApplyReported{Node: "ghost"}, ApplyID: uuid.New()}); !errors.Is(err, commands.ErrRejected) {
		t.Fatalf("report from an unknown node: %v", err)
	}
}

// Every spec stands once in a node's stream: a push that changes nothing
// carries none, a changed container carries only its own.
func TestComposedCarriesOnlyNewSpecs(t *testing.T) {
	h, store := setup(t)
	mesh(t, h)
	send := func(context.Context, declaration.Declaration) error { return nil }
	specs := func() map[string]json.RawMessage {
		t.Helper()
		if _, err := pushNow(h, "novox", send); err != nil {
			t.Fatal(err)
		}
		evs, _ := store.ReadStream(context.Background(), "node-novox", 0, 0)
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Type == events.TypeDeclarationComposed {
				p, err := events.DecodeAs[events.DeclarationComposed](events.NewRegistry(), evs[i])
				if err != nil {
					t.Fatal(err)
				}
				return p.Specs
			}
		}
		t.Fatal("no composed event")
		return nil
	}
	if got := specs(); len(got) != 1 {
		t.Fatalf("first declaration carries %d specs, want 1", len(got))
	}
	before, _ := store.Head(context.Background())
	if _, err := pushNow(h, "novox", send); err != nil {
		t.Fatal(err)
	}
	if after, _ := store.Head(context.Background()); after != before {
		t.Fatalf("an unchanged declaration appended %d event(s)", after-before)
	}
	must(t, h, commands.DefineModule{Module: "proxy", Spec: events.ModuleSpec{
		Containers: []events.ContainerSpec{{Name: "proxy", Image: "caddy:2.8"}}}})
	got := specs()
	if len(got) != 1 {
		t.Fatalf("a changed container: %d specs", len(got))
	}
	for _, spec := range got {
		if !strings.Contains(string(spec), `"image":"caddy:2.8"`) {
			t.Fatalf("spec %s", spec)
		}
	}
}

func TestPushToAnUnknownNodeIsRefusedAndRecordsNothing(t *testing.T) {
	h, store := setup(t)
	mesh(t, h)
	before, _ := store.Head(context.Background())
	_, err := pushNow(h, "ghost", func(context.Context, declaration.Declaration) error {
		t.Fatal("sent a declaration for an unknown node")
		return nil
	})
	var r *commands.Rejection
	if !errors.As(err, &r) || r.Code != commands.CodeNodeUnknown {
		t.Fatalf("push to ghost: %v, want a node-unknown rejection", err)
	}
	if after, _ := store.Head(context.Background()); after != before {
		t.Fatalf("a refused push appended %d event(s)", after-before)
	}
}

// A command whose work is already done appends nothing and is no error,
// through the handler as in Decide: re-running an operator's script is safe.
func TestExecuteAlreadyDoneAppendsNothing(t *testing.T) {
	h, store := setup(t)
	mesh(t, h)
	must(t, h, commands.AdoptNode{Node: "novox"}, commands.TakeModule{Module: "proxy", Node: "novox"},
		commands.SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"})
	for _, c := range []commands.Command{
		commands.RegisterNode{Node: "novox"},
		commands.AdoptNode{Node: "novox"},
		commands.SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"},
		commands.DefineModule{Module: "proxy", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "proxy", Image: "caddy:2"}}}},
		commands.AssignModule{Module: "proxy", Node: "novox"},
		commands.TakeModule{Module: "proxy", Node: "novox"},
		commands.ReleaseModule{Module: "searxng", Node: "novox"},
	} {
		t.Run(fmt.Sprintf("%T", c), func(t *testing.T) {
			before, _ := store.Head(context.Background())
			evs, err := h.Execute(context.Background(), op, c)
			if err != nil || len(evs) != 0 {
				t.Fatalf("Execute = %v, %v; want no events and no error", evs, err)
			}
			if after, _ := store.Head(context.Background()); after != before {
				t.Fatalf("appended %d event(s)", after-before)
			}
		})
	}
}

// ExecuteAll checks every command before it appends any: one refused item
// writes nothing; items may rely on the ones before them.
func TestExecuteAllIsAllOrNothing(t *testing.T) {
	web := func(routes ...string) events.ModuleSpec {
		return events.ModuleSpec{Routes: routes, Containers: []events.ContainerSpec{{Name: "web", Image: "nginx:1"}}}
	}
	tests := []struct {
		name  string
		given []commands.Command
		when  []commands.Command
		code  string // the refusal, "" when the batch is accepted
		msg   string
		wrote int // events appended when accepted
	}{
		{name: "every node valid", when: []commands.Command{commands.RegisterNode{Node: "a"}, commands.RegisterNode{Node: "b"}, commands.RegisterNode{Node: "c"}}, wrote: 3},
		{name: "one node invalid writes none", when: []commands.Command{commands.RegisterNode{Node: "a"}, commands.RegisterNode{Node: "B"}, commands.RegisterNode{Node: "c"}},
			code: commands.CodeInvalid, msg: `node name "B"`},
		{name: "a name listed twice is registered once", when: []commands.Command{commands.RegisterNode{Node: "a"}, commands.RegisterNode{Node: "a"}}, wrote: 1},
		{name: "later items see earlier ones", when: []commands.Command{
			commands.RegisterNode{Node: "a"}, commands.AdoptNode{Node: "a"},
			commands.DefineModule{Module: "web", Spec: web("web.example.org")},
			commands.AssignModule{Module: "web", Node: "a"}, commands.TakeModule{Module: "web", Node: "a"}}, wrote: 5},
		{name: "a later refusal writes none of the earlier", when: []commands.Command{
			commands.RegisterNode{Node: "a"}, commands.DefineModule{Module: "web", Spec: web()},
			commands.TakeModule{Module: "web", Node: "a"}}, code: commands.CodeNotAdopted},
		{name: "two modules of one batch routing one name", when: []commands.Command{
			commands.DefineModule{Module: "web", Spec: web("www.example.org")},
			commands.DefineModule{Module: "www", Spec: web("www.example.org")}},
			code: commands.CodeRouteClaimed, msg: "module www routes www.example.org, which module web already routes"},
		{name: "a module routing a name a stored module routes", given: []commands.Command{commands.DefineModule{Module: "web", Spec: web("www.example.org")}},
			when: []commands.Command{commands.DefineModule{Module: "www", Spec: web("www.example.org")}}, code: commands.CodeRouteClaimed, msg: "module web already routes"},
		{name: "a short digest", given: []commands.Command{commands.DefineModule{Module: "web", Spec: web()}},
			when: []commands.Command{commands.RegisterNode{Node: "a"}, commands.RecordArtifact{Module: "web", Name: "web", Digest: "sha256:ab12"}},
			code: commands.CodeInvalid, msg: `"sha256:ab12"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, store := setup(t)
			must(t, h, tt.given...)
			before, _ := store.Head(context.Background())
			_, err := h.ExecuteAll(context.Background(), op, tt.when)
			after, _ := store.Head(context.Background())
			if tt.code == "" {
				if err != nil || after-before != uint64(tt.wrote) {
					t.Fatalf("ExecuteAll = %v, wrote %d; want no error and %d", err, after-before, tt.wrote)
				}
				return
			}
			var r *commands.Rejection
			if !errors.As(err, &r) || r.Code != tt.code || !strings.Contains(r.Msg, tt.msg) {
				t.Fatalf("ExecuteAll = %v; want a %s rejection containing %q", err, tt.code, tt.msg)
			}
			if after != before {
				t.Fatalf("a refused batch appended %d event(s)", after-before)
			}
		})
	}
}

// A compose that changes nothing appends no declaration.composed, and the
// push re-sends the stored declaration; it records a push only when the
// stream does not already say so, and every failure.
func TestUnchangedPushRecordsOnlyWhatTheStreamDoesNotSay(t *testing.T) {
	h, store := setup(t)
	mesh(t, h)
	ok := func(context.Context, declaration.Declaration) error { return nil }
	cut := func(context.Context, declaration.Declaration) error { return errors.New("bus cut") }
	steps := []struct {
		name   string
		change bool // define a changed module first
		send   SendFn
		want   string // the types the push appends
		id     string
	}{
		{"first push", false, ok, "roster.changed declaration.composed declaration.pushed", "novox/1"},
		{"idle pass", false, ok, "", "novox/1"},
		{"idle pass again", false, ok, "", "novox/1"},
		{"bus cut", false, cut, "declaration.push-failed", "novox/1"},
		{"bus still cut", false, cut, "declaration.push-failed", "novox/1"},
		{"bus restored", false, ok, "declaration.pushed", "novox/1"},
		{"idle after restore", false, ok, "", "novox/1"},
		{"a change", true, ok, "declaration.composed declaration.pushed", "novox/2"},
		{"idle after the change", false, ok, "", "novox/2"},
	}
	var corr string
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.change {
				must(t, h, commands.DefineModule{Module: "proxy", Spec: events.ModuleSpec{
					Containers: []events.ContainerSpec{{Name: "proxy", Image: "caddy:2.9"}}}})
			}
			before, _ := store.Head(context.Background())
			var sent declaration.Declaration
			_, err := pushNow(h, "novox", func(ctx context.Context, d declaration.Declaration) error {
				sent = d
				return st.send(ctx, d)
			})
			if (err != nil) != (st.want == "declaration.push-failed") {
				t.Fatalf("push: %v", err)
			}
			evs, _ := store.ReadAll(context.Background(), before, 0)
			var types []string
			for _, ev := range evs {
				types = append(types, ev.Type)
				if ev.Type == events.TypeDeclarationComposed || ev.Type == events.TypeRosterChanged {
					corr = ev.Correlation
				}
				if ev.Correlation != corr {
					t.Errorf("%s has correlation %s, its declaration's compose %s", ev.Type, ev.Correlation, corr)
				}
			}
			if got := strings.Join(types, " "); got != st.want {
				t.Fatalf("appended %q, want %q", got, st.want)
			}
			if sent.ID != st.id || sent.Correlation != corr {
				t.Fatalf("sent %s (correlation %s), want %s (correlation %s)", sent.ID, sent.Correlation, st.id, corr)
			}
		})
	}
}

// A routed name claimed by two modules, in a history written before define
// checked it, is refused when the second is assigned, naming both.
func TestAssignRefusesARouteAnAssignedModuleRoutes(t *testing.T) {
	h, store := setup(t)
	must(t, h, commands.RegisterNode{Node: "a"}, commands.RegisterNode{Node: "b"})
	reg := events.NewRegistry()
	for _, m := range []string{"web", "www"} {
		ev, err := reg.New(events.ModuleStream(m), events.ModuleDefined{Module: m, Spec: events.ModuleSpec{
			Routes: []string{"www.example.org"}, Containers: []events.ContainerSpec{{Name: m, Image: "nginx:1"}}}},
			events.Meta{ID: events.NewID(), At: time.Now(), Actor: op})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Append(context.Background(), ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	must(t, h, commands.AssignModule{Module: "web", Node: "a"})
	_, err := h.Execute(context.Background(), op, commands.AssignModule{Module: "www", Node: "b"})
	var r *commands.Rejection
	if !errors.As(err, &r) || r.Code != commands.CodeRouteClaimed || !strings.Contains(r.Msg, "module www to b") || !strings.Contains(r.Msg, "module web") {
		t.Fatalf("assigning www: %v; want a route-claimed rejection naming www and web", err)
	}
	// The module already routing it may go on elsewhere.
	must(t, h, commands.AssignModule{Module: "web", Node: "b"})

	// Once web is released everywhere, www may have the name: in one batch
	// whose first items release it (the batch's own view of the
	// assignments), or after.
	rel := []commands.Command{commands.ReleaseModule{Module: "web", Node: "a"}, commands.ReleaseModule{Module: "web", Node: "b"}}
	if _, err := h.ExecuteAll(context.Background(), op, append(rel[:1:1], commands.AssignModule{Module: "www", Node: "b"})); !errors.As(err, &r) || r.Code != commands.CodeRouteClaimed {
		t.Fatalf("releasing web from a alone, then assigning www: %v; want route-claimed (web is still on b)", err)
	}
	if _, err := h.ExecuteAll(context.Background(), op, append(slices.Clone(rel), commands.AssignModule{Module: "www", Node: "b"})); err != nil {
		t.Fatalf("releasing web everywhere, then assigning www, in one batch: %v", err)
	}
	must(t, h, commands.ReleaseModule{Module: "www", Node: "b"})
	must(t, h, commands.AssignModule{Module: "www", Node: "a"})
}

// A digest is checked where an operator records a build, never where the
// stream is read: a short one already in history is folded as it is, and
// recording it again is refused rather than taken for work already done.
func TestHistoryWithAShortDigestIsRead(t *testing.T) {
	h, store := setup(t)
	must(t, h, commands.DefineModule{Module: "forge", Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Artifact: "forge/web"}}}})
	ev, err := events.NewRegistry().New("module-forge", events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"},
		events.Meta{ID: events.NewID(), At: time.Now(), Actor: op})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(context.Background(), "module-forge", events.Any, ev); err != nil {
		t.Fatal(err)
	}
	m, err := h.Module(context.Background(), "forge")
	if err != nil || m.Artifacts["forge/web"] != "sha256:ab12" {
		t.Fatalf("Module(forge) = %+v, %v; want the short digest history holds", m.Artifacts, err)
	}
	_, err = h.Execute(context.Background(), op, commands.RecordArtifact{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"})
	var r *commands.Rejection
	if !errors.As(err, &r) || r.Code != commands.CodeInvalid {
		t.Fatalf("recording the short digest again: %v, want an invalid rejection", err)
	}
}

// SendFn is commands.SendFunc, for the table above.
type SendFn = commands.SendFunc

// A composed declaration this build cannot decode (appended by hand) leaves
// the node without a known current declaration: the next push composes and
// appends afresh rather than take its compose for unchanged.
func TestUndecodableComposedIsNoCurrentDeclaration(t *testing.T) {
	h, store := setup(t)
	mesh(t, h)
	send := func(context.Context, declaration.Declaration) error { return nil }
	if _, err := pushNow(h, "novox", send); err != nil {
		t.Fatal(err)
	}
	bad := events.Event{ID: events.NewID(), Stream: "node-novox", Type: events.TypeDeclarationComposed, Schema: 1,
		At: time.Date(2026, 9, 29, 23, 0, 0, 0, time.UTC), Data: []byte(`{"resources":"not a list"}`)}
	if _, err := store.Append(context.Background(), "node-novox", events.Any, bad); err != nil {
		t.Fatal(err)
	}
	d, err := pushNow(h, "novox", send)
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := store.ReadStream(context.Background(), "node-novox", 0, 0)
	if last := evs[len(evs)-1]; d.ID != "novox/3" || last.Type != events.TypeDeclarationPushed || evs[len(evs)-2].Type != events.TypeDeclarationComposed {
		t.Fatalf("pushed %s; stream ends %s, %s", d.ID, evs[len(evs)-2].Type, last.Type)
	}
}

// TestHypotheticalAppendsNothing: a plan's --after composes as if the
// commands had run, and the store does not grow.
func TestHypotheticalAppendsNothing(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	h := commands.NewHandler(store, events.NewRegistry())
	spec := events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1"}}}
	for _, c := range []commands.Command{commands.RegisterNode{Node: "novox"}, commands.DefineModule{Module: "forge", Spec: spec}} {
		if _, err := h.Execute(ctx, "operator:t", c); err != nil {
			t.Fatal(err)
		}
	}
	head := func() uint64 {
		evs, err := store.ReadAll(ctx, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(len(evs))
	}
	before := head()
	r, err := h.Hypothetical(ctx, []commands.Command{commands.AssignModule{Module: "forge", Node: "novox"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := commands.Compose(ctx, r, "novox", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Declaration.Resource("web"); !ok {
		t.Fatalf("composed after assign: %+v, want web", c.Declaration.Resources)
	}
	if head() != before {
		t.Fatal("Hypothetical appended")
	}
	if _, err := h.Hypothetical(ctx, []commands.Command{commands.TakeModule{Module: "forge", Node: "novox"}}); !errors.Is(err, commands.ErrRejected) {
		t.Fatalf("a refused command: %v, want a rejection", err)
	}
}

// pushNow is a push now of node (changed or not), as mesh push makes it:
// Handler.PushNode knowing no last push.
func pushNow(h *commands.Handler, node string, send commands.SendFunc) (declaration.Declaration, error) {
	_, d, err := h.PushNode(context.Background(), node, nil, commands.LastPush{}, send)
	return d, err
}
