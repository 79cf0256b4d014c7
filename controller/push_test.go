package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

// flakyBus is a Publisher that refuses the nodes in fail, and notes whether
// two puts were ever in flight together: until they are, a put waits for
// company (at most overlapWait, once).
type flakyBus struct {
	mu         sync.Mutex
	fail       map[string]bool
	puts       map[string]int
	inFlight   int
	overlapped chan struct{} // closed when two puts were in flight at once
	gaveUp     bool
}

const overlapWait = 30 * time.Second

func newFlakyBus() *flakyBus {
	return &flakyBus{fail: map[string]bool{}, puts: map[string]int{}, overlapped: make(chan struct{})}
}

func (b *flakyBus) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	b.mu.Lock()
	b.inFlight++
	if b.inFlight == 2 {
		select {
		case <-b.overlapped:
		default:
			close(b.overlapped)
		}
	}
	wait := !b.gaveUp
	b.mu.Unlock()
	if wait {
		select {
		case <-b.overlapped:
		case <-time.After(overlapWait):
			b.mu.Lock()
			b.gaveUp = true
			b.mu.Unlock()
		case <-ctx.Done():
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	b.puts[d.Node]++
	if b.fail[d.Node] {
		return fmt.Errorf("bus down for %s", d.Node)
	}
	return nil
}

func (b *flakyBus) failing(fail func(i int) bool, nodes []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.fail)
	for i, n := range nodes {
		b.fail[n] = fail(i)
	}
}

// TestParallelPushRecordsEachOnce: a push of many nodes at once, some of
// whose sends fail, records every failure and every success exactly once on
// its node's stream, and answers once per node, in order.
func TestParallelPushRecordsEachOnce(t *testing.T) {
	// No Run: its passes would push the failed nodes again meanwhile (as
	// they should); here every push is the test's.
	ctx := context.Background()
	store, pub := memstore.New(), newFlakyBus()
	ctrl, err := controller.New(controller.Config{Store: store, Publisher: pub, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}

	nodes := make([]string, 150)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%03d", i)
	}
	// counts returns, per node, the events of each type appended after pos.
	counts := func(t *testing.T, after uint64) map[string]map[string]int {
		t.Helper()
		evs, err := store.ReadAll(ctx, after, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]int{}
		for _, ev := range evs {
			if out[ev.Stream] == nil {
				out[ev.Stream] = map[string]int{}
			}
			out[ev.Stream][ev.Type]++
		}
		return out
	}
	steps := []struct {
		name string
		fail func(i int) bool
		do   func() (api.PushResponse, error)
		// want is what node i's stream records, by type.
		want func(i int) map[string]int
	}{
		{"register: every third send fails", func(i int) bool { return i%3 == 0 },
			func() (api.PushResponse, error) {
				_, err := ctrl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "tester", Nodes: nodes})
				return api.PushResponse{}, err
			},
			func(i int) map[string]int {
				if i%3 == 0 {
					return map[string]int{events.TypeNodeRegistered: 1, events.TypeDeclarationComposed: 1, events.TypeDeclarationPushFailed: 1}
				}
				return map[string]int{events.TypeNodeRegistered: 1, events.TypeDeclarationComposed: 1, events.TypeDeclarationPushed: 1}
			}},
		{"push now: every fifth send fails", func(i int) bool { return i%5 == 0 },
			func() (api.PushResponse, error) { return ctrl.Push(ctx, api.PushRequest{Operator: "tester"}) },
			func(i int) map[string]int {
				switch {
				case i%5 == 0:
					return map[string]int{events.TypeDeclarationPushFailed: 1}
				case i%3 == 0: // failed last time: now pushed
					return map[string]int{events.TypeDeclarationPushed: 1}
				default: // the stream already says it was pushed
					return nil
				}
			}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			pub.failing(s.fail, nodes)
			head, err := store.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := s.do()
			if err != nil {
				t.Fatal(err)
			}
			if resp.Pushes != nil {
				if len(resp.Pushes) != len(nodes) {
					t.Fatalf("%d results, want one per node (%d)", len(resp.Pushes), len(nodes))
				}
				for i, r := range resp.Pushes {
					if r.Node != nodes[i] || (r.Error != "") != s.fail(i) {
						t.Errorf("result %d: %+v, want node %s failed=%v", i, r, nodes[i], s.fail(i))
					}
				}
			}
			got := counts(t, head)
			for i, n := range nodes {
				want := s.want(i)
				stream := events.NodeStream(n)
				if fmt.Sprint(got[stream]) != fmt.Sprint(want) && !(len(got[stream]) == 0 && len(want) == 0) {
					t.Errorf("%s recorded %v, want %v", n, got[stream], want)
				}
				delete(got, stream)
			}
			if len(got) != 0 {
				t.Errorf("appended to other streams: %v", got)
			}
		})
	}
	select {
	case <-pub.overlapped:
	default:
		t.Errorf("no two sends were ever in flight together: the push is not parallel")
	}
}

// batchBus is a BatchPublisher that, at each batch, notes the store's head
// and whether every declaration's declaration.composed is already stored,
// and refuses the nodes in fail.
type batchBus struct {
	store events.Store
	fail  map[string]bool

	mu      sync.Mutex
	batches [][]declaration.Declaration
	heads   []uint64 // the store's head at each batch
	unseen  []string // declarations put before their declaration.composed was stored
}

func (b *batchBus) PutDeclaration(ctx context.Context, d declaration.Declaration) error {
	if errs := b.PutDeclarations(ctx, []declaration.Declaration{d}); errs != nil {
		return errs[0]
	}
	return nil
}

func (b *batchBus) PutDeclarations(ctx context.Context, ds []declaration.Declaration) []error {
	head, err := b.store.Head(ctx)
	if err != nil {
		panic(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches, b.heads = append(b.batches, ds), append(b.heads, head)
	var errs []error
	for i, d := range ds {
		evs, err := b.store.ReadStream(ctx, events.NodeStream(d.Node), 0, 0)
		if err != nil {
			panic(err)
		}
		composed := false
		for _, ev := range evs {
			composed = composed || (ev.Type == events.TypeDeclarationComposed && strings.Contains(string(ev.Data), d.ID))
		}
		if !composed {
			b.unseen = append(b.unseen, d.ID)
		}
		if b.fail[d.Node] {
			if errs == nil {
				errs = make([]error, len(ds))
			}
			errs[i] = fmt.Errorf("bus down for %s", d.Node)
		}
	}
	return errs
}

// TestBatchPushRecordsAroundThePut: with a BatchPublisher, a push of every
// node hands every declaration to the bus in one batch, each after its
// declaration.composed is stored and before its outcome is: pushed for the
// puts that succeeded, push-failed for those that did not, each recorded
// once on its node's stream, and each node's result says which.
func TestBatchPushRecordsAroundThePut(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	nodes := make([]string, 50)
	fail := map[string]bool{}
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%03d", i)
		fail[nodes[i]] = i%7 == 0
	}
	pub := &batchBus{store: store, fail: fail}
	ctrl, err := controller.New(controller.Config{Store: store, Publisher: pub, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "tester", Nodes: nodes}); err != nil {
		t.Fatal(err)
	}
	if len(pub.batches) != 1 || len(pub.batches[0]) != len(nodes) {
		t.Fatalf("%d batches (%v), want one of every node", len(pub.batches), len(pub.batches))
	}
	if len(pub.unseen) != 0 {
		t.Errorf("put before their declaration.composed was stored: %v", pub.unseen)
	}
	evs, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	outcome := map[string][]string{} // node stream → its push events' types
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeDeclarationComposed:
			if ev.Position > pub.heads[0] {
				t.Errorf("%s: declaration.composed at %d, after the put (head %d)", ev.Stream, ev.Position, pub.heads[0])
			}
			outcome[ev.Stream] = append(outcome[ev.Stream], ev.Type)
		case events.TypeDeclarationPushed, events.TypeDeclarationPushFailed:
			if ev.Position <= pub.heads[0] {
				t.Errorf("%s: %s at %d, before the put (head %d)", ev.Stream, ev.Type, ev.Position, pub.heads[0])
			}
			outcome[ev.Stream] = append(outcome[ev.Stream], ev.Type)
		}
	}
	for _, n := range nodes {
		want := []string{events.TypeDeclarationComposed, events.TypeDeclarationPushed}
		if fail[n] {
			want[1] = events.TypeDeclarationPushFailed
		}
		if got := outcome[events.NodeStream(n)]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s recorded %v, want %v", n, got, want)
		}
	}

	// A push now: every node's unchanged declaration in one batch again;
	// the results say which failed.
	resp, err := ctrl.Push(ctx, api.PushRequest{Operator: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.batches) != 2 || len(pub.batches[1]) != len(nodes) {
		t.Fatalf("push now: %d batches, the last of %d, want a second of every node", len(pub.batches), len(pub.batches[len(pub.batches)-1]))
	}
	if len(resp.Pushes) != len(nodes) {
		t.Fatalf("%d results, want %d", len(resp.Pushes), len(nodes))
	}
	for i, r := range resp.Pushes {
		if r.Node != nodes[i] || (r.Error != "") != fail[nodes[i]] || r.Declaration == "" {
			t.Errorf("result %d: %+v, want node %s with its declaration, failed=%v", i, r, nodes[i], fail[nodes[i]])
		}
	}
}
