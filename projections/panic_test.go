package projections

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/internal/safego"
)

// panicky is a projection whose fold panics on every apply report, as a
// Prometheus counter does when an agent reports a negative count.
type panicky struct{ folded, applies atomic.Int64 }

func (p *panicky) Name() string                 { return "panicky" }
func (p *panicky) Reset()                       { p.folded.Store(0); p.applies.Store(0) }
func (p *panicky) MarshalJSON() ([]byte, error) { return []byte("{}"), nil }
func (p *panicky) Fold(_ events.Event, pl events.Payload) error {
	p.folded.Add(1)
	if _, ok := pl.(events.ApplyReported); ok {
		p.applies.Add(1)
		panic("counter cannot decrease in value")
	}
	return nil
}

// badPayload is an event type whose decoder panics on what it reads.
type badPayload struct{}

func (badPayload) EventType() string           { return "test.bad-decoder" }
func (*badPayload) UnmarshalJSON([]byte) error { panic("decoder bug") }

// TestRunnerFoldPanicIsARefusal: a projection (or a decoder) that panics
// on an event is that event's refusal, counted as any other with the
// panic's origin: the other projections fold it, the position moves on,
// the process lives; on a catch-up of many events (the paged, parallel
// fold), on a rebuild, and live (Run).
func TestRunnerFoldPanicIsARefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := history(t, 7, 30)
	g.raw("elsewhere", "test.bad-decoder", `{}`)
	store := stored(t, g)
	head, _ := store.Head(ctx)
	applies := 0
	for _, ev := range g.evs {
		if ev.Type == events.TypeApplyReported {
			applies++
		}
	}
	if head < 64 || applies == 0 {
		t.Fatalf("history of %d events, %d applies: too small for the paged fold", head, applies)
	}
	reg := events.NewRegistry()
	reg.Register(badPayload{}, 1)

	// Reference: the same history without the panicking projection.
	ref := New()
	rr := NewRunner(store, reg, ref.All()...)
	if err := rr.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	_, refFailed := rr.Failures()

	check := func(t *testing.T, r *Runner, set *Set, p *panicky) {
		t.Helper()
		if r.Position() != head {
			t.Fatalf("position %d, want %d", r.Position(), head)
		}
		if got := p.folded.Load(); got != int64(head-1) { // every event that decodes
			t.Errorf("the panicking projection was handed %d events, want %d", got, head-1)
		}
		kept, total := r.Failures()
		if want := refFailed + applies; total != want {
			t.Errorf("failures %d, want %d (%d of the history, one per apply)", total, want, refFailed)
		}
		var folds, decodes int
		for _, f := range kept {
			switch {
			case f.Projection == "panicky":
				folds++
				if !strings.Contains(f.Err, "projections.fold: panic: counter cannot decrease in value (in meshplane/projections.(*panicky).Fold panic_test.go:") {
					t.Errorf("fold refusal %q does not say the panic and where", f.Err)
				}
			case f.Type == "test.bad-decoder":
				decodes++
				if !strings.Contains(f.Err, "projections.decode: panic: decoder bug") {
					t.Errorf("decode failure %q", f.Err)
				}
			}
		}
		if folds == 0 || decodes != 1 {
			t.Errorf("kept %d fold refusals and %d decode failures, want some and 1", folds, decodes)
		}
		if got, want := snapshot(t, set), snapshot(t, ref); string(got) != string(want) {
			t.Errorf("the other projections differ from a fold without the panicking one")
		}
	}

	t.Run("catch up", func(t *testing.T) {
		set, p := New(), &panicky{}
		r := NewRunner(store, reg, append(set.All(), p)...)
		var heard atomic.Int64 // the adapter's hook: every panic, as a PanicError
		r.OnPanic(func(err error) {
			if _, ok := safego.As(err); ok {
				heard.Add(1)
			}
		})
		if err := r.CatchUp(ctx); err != nil {
			t.Fatalf("catch up: %v", err)
		}
		check(t, r, set, p)
		if got, want := heard.Load(), int64(applies+1); got != want {
			t.Errorf("OnPanic heard %d panics, want %d (each apply's fold, the decode)", got, want)
		}
		if err := r.Rebuild(ctx); err != nil {
			t.Fatalf("rebuild: %v", err)
		}
		check(t, r, set, p)
		if got, want := heard.Load(), int64(2*(applies+1)); got != want {
			t.Errorf("after the rebuild OnPanic heard %d panics, want %d", got, want)
		}
	})
	t.Run("run", func(t *testing.T) {
		// Live, one event at a time: a store with its events appended
		// while the runner runs.
		live := memstore.New()
		defer live.Close()
		set, p := New(), &panicky{}
		r := NewRunner(live, reg, append(set.All(), p)...)
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- r.Run(rctx) }()
		for _, ev := range g.evs {
			ev.Position = 0
			if _, err := live.Append(ctx, ev.Stream, events.Any, ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.WaitFor(ctx, head); err != nil {
			t.Fatal(err)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
		check(t, r, set, p)
	})
}

// panickingStore is a store whose reads panic.
type panickingStore struct{ events.Store }

func (panickingStore) ReadAll(context.Context, uint64, int) ([]events.Event, error) {
	panic("store bug")
}

// TestRunnerReadPanicIsAnError: a read that panics on a decode worker
// fails the catch-up with the panic, as a read that fails does.
func TestRunnerReadPanicIsAnError(t *testing.T) {
	ctx := context.Background()
	store := stored(t, history(t, 3, 20))
	r := NewRunner(panickingStore{store}, events.NewRegistry(), New().All()...)
	err := r.CatchUp(ctx)
	pe, ok := safego.As(err)
	if !ok || pe.Where != "projections.read" || !errors.Is(err, safego.ErrPanic) {
		t.Fatalf("catch up = %v, want the read's panic", err)
	}
	if r.Position() != 0 {
		t.Errorf("position %d after a read that panicked", r.Position())
	}
}
