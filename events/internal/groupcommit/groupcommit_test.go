package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"meshplane/events"
)

// The bounds of boltstore, which TestGather was first written against.
var testCfg = Config{Queue: 1024, MaxRequests: 4096, MaxBytes: 32 << 20}

// TestGather checks how the writer forms a group from the queue: everything
// waiting, in order, without requests whose callers gave up, within bounds.
func TestGather(t *testing.T) {
	mk := func(state int32, size int) *Request {
		r := &Request{Size: size, done: make(chan Result, 1)}
		r.state.Store(state)
		return r
	}
	for _, tc := range []struct {
		name   string
		first  *Request
		queued []*Request
		want   []int // indexes into append([]*Request{first}, queued...)
		left   int   // requests left in the queue
	}{
		{"lone request", mk(pending, 1), nil, []int{0}, 0},
		{"all that waits", mk(pending, 1), []*Request{mk(pending, 1), mk(pending, 1)}, []int{0, 1, 2}, 0},
		{"abandoned skipped", mk(pending, 1), []*Request{mk(abandoned, 1), mk(pending, 1)}, []int{0, 2}, 0},
		{"abandoned first", mk(abandoned, 1), []*Request{mk(pending, 1)}, []int{1}, 0},
		{"byte bound", mk(pending, testCfg.MaxBytes), []*Request{mk(pending, 1)}, []int{0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Committer{cfg: testCfg, reqs: make(chan *Request, testCfg.Queue)}
			for _, r := range tc.queued {
				c.reqs <- r
			}
			all := append([]*Request{tc.first}, tc.queued...)
			group := c.gather(tc.first, 0, 0)
			if len(group) != len(tc.want) {
				t.Fatalf("group of %d, want %d", len(group), len(tc.want))
			}
			for i, idx := range tc.want {
				if group[i] != all[idx] {
					t.Errorf("group[%d] is not request %d", i, idx)
				}
				if group[i].state.Load() != taken {
					t.Errorf("group[%d] not marked taken", i)
				}
			}
			if len(c.reqs) != tc.left {
				t.Errorf("%d requests left queued, want %d", len(c.reqs), tc.left)
			}
		})
	}
}

// TestGatherWaits: a group smaller than the writers known to be active
// waits for them, up to its wait; the request bound holds; Close ends the
// wait.
func TestGatherWaits(t *testing.T) {
	mk := func() *Request { return &Request{Size: 1, done: make(chan Result, 1)} }
	t.Run("a late writer joins", func(t *testing.T) {
		c := &Committer{cfg: testCfg, reqs: make(chan *Request, 8), quit: make(chan struct{})}
		late := mk()
		go func() { time.Sleep(5 * time.Millisecond); c.reqs <- late }()
		group := c.gather(mk(), 2, time.Minute)
		if len(group) != 2 || group[1] != late {
			t.Fatalf("group of %d, want the first and the late request", len(group))
		}
	})
	t.Run("no wait past the expected writers", func(t *testing.T) {
		c := &Committer{cfg: testCfg, reqs: make(chan *Request, 8), quit: make(chan struct{})}
		c.reqs <- mk()
		start := time.Now()
		if group := c.gather(mk(), 2, time.Minute); len(group) != 2 {
			t.Fatalf("group of %d, want 2", len(group))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("gather waited %v with its group complete", d)
		}
	})
	t.Run("the wait ends", func(t *testing.T) {
		c := &Committer{cfg: testCfg, reqs: make(chan *Request, 8), quit: make(chan struct{})}
		start := time.Now()
		if group := c.gather(mk(), 8, 20*time.Millisecond); len(group) != 1 {
			t.Fatalf("group of %d, want 1", len(group))
		}
		if d := time.Since(start); d < 20*time.Millisecond {
			t.Errorf("gather returned after %v, before its wait of 20ms", d)
		}
	})
	t.Run("request bound", func(t *testing.T) {
		cfg := testCfg
		cfg.MaxRequests = 2
		c := &Committer{cfg: cfg, reqs: make(chan *Request, 8), quit: make(chan struct{})}
		for range 3 {
			c.reqs <- mk()
		}
		if group := c.gather(mk(), 8, time.Minute); len(group) != 2 {
			t.Fatalf("group of %d, want the bound of 2", len(group))
		}
		if len(c.reqs) != 2 {
			t.Errorf("%d requests left queued, want 2", len(c.reqs))
		}
	})
	t.Run("close ends the wait", func(t *testing.T) {
		c := &Committer{cfg: testCfg, reqs: make(chan *Request, 8), quit: make(chan struct{})}
		go func() { time.Sleep(5 * time.Millisecond); close(c.quit) }()
		if group := c.gather(mk(), 8, time.Minute); len(group) != 1 {
			t.Fatalf("group of %d, want 1", len(group))
		}
	})
}

// fake is a commit function that records its groups, answers each request
// with its events numbered in commit order (or refuses the streams named
// in refuse), and can be held at the start of a commit.
type fake struct {
	mu      sync.Mutex
	groups  [][]string // the streams of each group
	head    uint64
	fail    error           // fails the next commit as a whole
	refuse  map[string]bool // streams whose requests it refuses
	hold    chan struct{}   // if not nil, each commit waits for a receive
	entered chan struct{}   // if not nil, told when a commit starts
}

var errRefused = errors.New("refused")

func (f *fake) commit(group []*Request) ([]Result, error) {
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.hold != nil {
		<-f.hold
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var streams []string
	for _, r := range group {
		streams = append(streams, r.Stream)
	}
	f.groups = append(f.groups, streams)
	if err := f.fail; err != nil {
		f.fail = nil
		return nil, err
	}
	out := make([]Result, len(group))
	for i, r := range group {
		if f.refuse[r.Stream] {
			out[i].Err = errRefused
			continue
		}
		evs := slices.Clone(r.Events)
		for j := range evs {
			f.head++
			evs[j].Position = f.head
		}
		out[i].Events = evs
	}
	return out, nil
}

func (f *fake) groupsSeen() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.groups)
}

func start(t *testing.T, f *fake, cfg Config) *Committer {
	t.Helper()
	c, err := Start(f.commit, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func req(stream string) *Request {
	return &Request{Stream: stream, Expected: events.Any, Events: []events.Event{{ID: events.NewID(), Stream: stream}}, Size: 1}
}

type answer struct {
	stream string
	evs    []events.Event
	err    error
}

// submitAll submits one request per stream, in order, each once the one
// before it is queued, and returns the channel their answers come on.
func submitAll(ctx context.Context, c *Committer, streams ...string) <-chan answer {
	out := make(chan answer, len(streams))
	for _, s := range streams {
		queued := len(c.reqs)
		r := req(s)
		go func() {
			evs, err := c.Submit(ctx, r)
			out <- answer{s, evs, err}
		}()
		// Queued (or already taken by an idle committer), in this order.
		for len(c.reqs) == queued && r.state.Load() != taken {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return out
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestOrderAndGroups: what queues during a commit forms the next group, in
// queue order, and each request gets its own answer, refusals included.
func TestOrderAndGroups(t *testing.T) {
	f := &fake{hold: make(chan struct{}), entered: make(chan struct{}, 8), refuse: map[string]bool{"c": true}}
	c := start(t, f, testCfg)
	ctx := ctxFor(t)
	first := submitAll(ctx, c, "first")
	<-f.entered // the first commit holds, alone
	rest := submitAll(ctx, c, "a", "b", "c", "d")
	f.hold <- struct{}{}
	<-f.entered
	f.hold <- struct{}{}
	if a := <-first; a.err != nil || a.evs[0].Position != 1 {
		t.Errorf("first: %v, %v; want position 1", a.evs, a.err)
	}
	want := map[string]uint64{"a": 2, "b": 3, "d": 4}
	for range 4 {
		a := <-rest
		switch {
		case a.stream == "c":
			if !errors.Is(a.err, errRefused) {
				t.Errorf("c: %v, want its own refusal", a.err)
			}
		case a.err != nil || len(a.evs) != 1 || a.evs[0].Position != want[a.stream] || a.evs[0].Stream != a.stream:
			t.Errorf("%s: %v, %v; want its own event at position %d", a.stream, a.evs, a.err, want[a.stream])
		}
	}
	if g := f.groupsSeen(); fmt.Sprint(g) != "[[first] [a b c d]]" {
		t.Errorf("groups %v, want [[first] [a b c d]]", g)
	}
}

// TestFailedCommitFailsItsGroupOnly: a commit that fails as a whole fails
// every request of its group with its error; what queued behind it commits.
func TestFailedCommitFailsItsGroupOnly(t *testing.T) {
	boom := errors.New("disk on fire")
	f := &fake{hold: make(chan struct{}), entered: make(chan struct{}, 8), fail: boom}
	c := start(t, f, testCfg)
	ctx := ctxFor(t)
	failing := submitAll(ctx, c, "x")
	<-f.entered
	later := submitAll(ctx, c, "y", "z")
	f.hold <- struct{}{}
	<-f.entered
	f.hold <- struct{}{}
	if a := <-failing; !errors.Is(a.err, boom) || a.evs != nil {
		t.Errorf("x: %v, %v; want the commit's error", a.evs, a.err)
	}
	for range 2 {
		if a := <-later; a.err != nil {
			t.Errorf("%s, queued behind the failed commit: %v", a.stream, a.err)
		}
	}
}

// TestClose: the commit in progress completes and is answered; what is
// queued fails with ErrClosed, and so does every Submit after Close.
func TestClose(t *testing.T) {
	f := &fake{hold: make(chan struct{}), entered: make(chan struct{}, 8)}
	c := start(t, f, testCfg)
	ctx := ctxFor(t)
	committing := submitAll(ctx, c, "in-commit")
	<-f.entered
	queued := submitAll(ctx, c, "q1", "q2")
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	time.Sleep(10 * time.Millisecond) // Close waits for the commit in progress
	select {
	case <-closed:
		t.Fatal("Close returned during a commit")
	default:
	}
	f.hold <- struct{}{}
	<-closed
	if a := <-committing; a.err != nil || len(a.evs) != 1 {
		t.Errorf("the request being committed: %v, %v; want its events", a.evs, a.err)
	}
	for range 2 {
		if a := <-queued; !errors.Is(a.err, events.ErrClosed) {
			t.Errorf("%s, queued at Close: %v, want ErrClosed", a.stream, a.err)
		}
	}
	if _, err := c.Submit(ctx, req("after")); !errors.Is(err, events.ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
	if g := f.groupsSeen(); fmt.Sprint(g) != "[[in-commit]]" {
		t.Errorf("groups %v, want only [[in-commit]]", g)
	}
	c.Close() // harmless again
}

// TestAbandoned: a request whose ctx ends while it is queued is never
// committed, and its Submit returns the ctx's error.
func TestAbandoned(t *testing.T) {
	f := &fake{hold: make(chan struct{}), entered: make(chan struct{}, 8)}
	c := start(t, f, testCfg)
	ctx := ctxFor(t)
	first := submitAll(ctx, c, "first")
	<-f.entered
	gone, cancel := context.WithCancel(ctx)
	abandoned := submitAll(gone, c, "abandoned")
	kept := submitAll(ctx, c, "kept")
	cancel()
	if a := <-abandoned; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("abandoned: %v, want context.Canceled", a.err)
	}
	f.hold <- struct{}{}
	<-f.entered
	f.hold <- struct{}{}
	for _, ch := range []<-chan answer{first, kept} {
		if a := <-ch; a.err != nil {
			t.Errorf("%s: %v", a.stream, a.err)
		}
	}
	if g := f.groupsSeen(); fmt.Sprint(g) != "[[first] [kept]]" {
		t.Errorf("groups %v, want [[first] [kept]]: the abandoned request skipped", g)
	}
}

// TestBackPressure: with the queue full, Submit waits, and gives up with its
// ctx, having queued nothing.
func TestBackPressure(t *testing.T) {
	f := &fake{hold: make(chan struct{}), entered: make(chan struct{}, 8)}
	c := start(t, f, Config{Queue: 1, MaxRequests: 8, MaxBytes: 1 << 20})
	ctx := ctxFor(t)
	first := submitAll(ctx, c, "first")
	<-f.entered
	queued := submitAll(ctx, c, "queued") // the queue is full
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.Submit(short, req("no-room")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Submit to a full queue: %v, want its ctx's deadline", err)
	}
	f.hold <- struct{}{}
	<-f.entered
	f.hold <- struct{}{}
	for _, ch := range []<-chan answer{first, queued} {
		if a := <-ch; a.err != nil {
			t.Errorf("%s: %v", a.stream, a.err)
		}
	}
	if g := f.groupsSeen(); fmt.Sprint(g) != "[[first] [queued]]" {
		t.Errorf("groups %v, want [[first] [queued]]", g)
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	f := &fake{}
	for _, cfg := range []Config{
		{Queue: 0, MaxRequests: 1, MaxBytes: 1},
		{Queue: 1, MaxRequests: 0, MaxBytes: 1},
		{Queue: 1, MaxRequests: 1, MaxBytes: 0},
		{Queue: 1, MaxRequests: 1, MaxBytes: 1, MaxWait: -time.Second},
	} {
		if c, err := Start(f.commit, cfg); err == nil {
			c.Close()
			t.Errorf("Start(%+v): no error", cfg)
		}
	}
	if _, err := Start(nil, testCfg); err == nil {
		t.Error("Start without a commit function: no error")
	}
}
