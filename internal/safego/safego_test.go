package safego

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func logTo(b *lockedBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

//lint:ignore SA5000 the panic is the point: a runtime error
func deepPanic() error { var m map[string]int; m["x"]++; return nil }

func TestDo(t *testing.T) {
	sentinel := errors.New("plain")
	for _, tc := range []struct {
		name    string
		fn      func() error
		want    error // nil: no error
		panicky bool
		value   string
	}{
		{name: "ok", fn: func() error { return nil }},
		{name: "error", fn: func() error { return sentinel }, want: sentinel},
		{name: "panic string", fn: func() error { panic("boom") }, panicky: true, value: "boom"},
		{name: "runtime error", fn: deepPanic, panicky: true, value: "assignment to entry in nil map"},
		{name: "panic nil", fn: func() error { panic(nil) }, panicky: true, value: "panic called with nil argument"},
		// A panic whose value is an error is still a panic, never that error.
		{name: "panic of an error", fn: func() error { panic(sentinel) }, panicky: true, value: "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := Panics()["test.do"]
			err := Do("test.do", tc.fn)
			pe, ok := As(err)
			switch {
			case tc.panicky:
				if !ok || !errors.Is(err, ErrPanic) {
					t.Fatalf("Do = %v, want a *PanicError", err)
				}
				if pe.Where != "test.do" || !strings.Contains(pe.Error(), tc.value) {
					t.Errorf("PanicError = %q (where %q), want test.do and %q", pe, pe.Where, tc.value)
				}
				if !bytes.Contains(pe.Stack, []byte("safego_test.go")) {
					t.Errorf("stack does not show the panicking code:\n%s", pe.Stack)
				}
				if errors.Is(err, sentinel) {
					t.Errorf("a panic of an error unwraps to it: callers would take it for that error")
				}
			case tc.want != nil:
				if !errors.Is(err, tc.want) || ok {
					t.Errorf("Do = %v, want %v", err, tc.want)
				}
			default:
				if err != nil {
					t.Errorf("Do = %v, want nil", err)
				}
			}
			if got := Panics()["test.do"]; got != before {
				t.Errorf("Do counted a panic (%d -> %d): only the boundary that reports it counts", before, got)
			}
		})
	}
}

func TestCallReportsOnce(t *testing.T) {
	var logs lockedBuffer
	log := logTo(&logs)
	if n, ok := Panics()["test.call"]; ok {
		t.Fatalf("test.call already counted %d", n)
	}
	if err := Call("test.call", log, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n, ok := Panics()["test.call"]; !ok || n != 0 {
		t.Errorf("a boundary used is counted from 0: got %d, listed %v", n, ok)
	}
	err := Call("test.call", log, func() error { panic("handler bug") })
	if !errors.Is(err, ErrPanic) {
		t.Fatalf("Call = %v, want the panic", err)
	}
	// The panic of a core goroutine (Do), returned up to a boundary that
	// reports it, and then to one more: counted once, under its own where.
	inner := Do("test.core", func() error { panic("core bug") })
	outer := Call("test.call", log, func() error { return inner })
	Report(log, outer)
	if got := Panics(); got["test.call"] != 1 || got["test.core"] != 1 {
		t.Errorf("counts = call %d, core %d; want 1 and 1", got["test.call"], got["test.core"])
	}
	out := logs.String()
	if strings.Count(out, "panic recovered") != 2 {
		t.Errorf("want two panics logged, once each:\n%s", out)
	}
	for _, want := range []string{"where=test.call", `panic="handler bug"`, "where=test.core", "safego_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestGoStopsTheProcess(t *testing.T) {
	var logs lockedBuffer
	got := make(chan error, 1)
	prev := SetFatal(func(err error) { got <- err })
	defer func() { SetFatal(prev) }()

	ended := Go("test.loop", logTo(&logs), func() error { panic("loop bug") })
	select {
	case err := <-got:
		pe, ok := As(err)
		if !ok || pe.Where != "test.loop" {
			t.Fatalf("Fatal got %v, want the loop's panic", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a loop that panicked did not stop the process")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop's done channel was not closed")
	}
	if n := Panics()["test.loop"]; n != 1 {
		t.Errorf("counted %d, want 1", n)
	}
	if !strings.Contains(logs.String(), "loop bug") {
		t.Errorf("not logged:\n%s", logs.String())
	}

	// A loop that ends with an error of its own, or none, stops nothing.
	Go("test.loop", logTo(&logs), func() error { return errors.New("store gone") })
	Go("test.loop", logTo(&logs), func() error { return nil })
	select {
	case err := <-got:
		t.Fatalf("Fatal called for %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestFatalWithoutHookPanics(t *testing.T) {
	prev := SetFatal(nil)
	defer func() { SetFatal(prev) }()
	err := Do("test.fatal", func() error { panic("x") })
	defer func() {
		if r := recover(); r != err {
			t.Errorf("Fatal without a hook: recovered %v, want the error panicked again", r)
		}
	}()
	Fatal(err)
	t.Error("Fatal returned without a hook")
}

func TestOrigin(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func() error
		want string
	}{
		{"panic", func() error { panic("x") }, "meshplane/internal/safego.TestOrigin.func1 safego_test.go:"},
		// A runtime error: the runtime's frames are passed over.
		{"nil map", deepPanic, "meshplane/internal/safego.deepPanic safego_test.go:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe, _ := As(Do("test.origin", tc.fn))
			if got := pe.Origin(); !strings.HasPrefix(got, tc.want) {
				t.Errorf("Origin = %q, want %q...\n%s", got, tc.want, pe.Stack)
			}
			if !strings.Contains(pe.Error(), "(in "+pe.Origin()+")") {
				t.Errorf("Error = %q, lacks the origin", pe.Error())
			}
		})
	}
	if got := (&PanicError{Where: "w", Value: 1, Stack: []byte("no frames")}).Error(); got != "w: panic: 1" {
		t.Errorf("without a stack: %q", got)
	}
}

// TestCatchStopsBeforeTheLoopsDefers: a loop with Catch deferred last has
// the process stopping before its own deferred calls say it ended.
func TestCatchStopsBeforeTheLoopsDefers(t *testing.T) {
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	stopped := make(chan struct{})
	prev := SetFatal(func(error) { note("fatal") })
	defer func() { SetFatal(prev) }()
	go func() {
		defer close(stopped)
		defer note("the loop's output closed")
		defer Catch("test.catch", slog.New(slog.DiscardHandler))
		panic("loop bug")
	}()
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, ", ") != "fatal, the loop's output closed" {
		t.Errorf("order: %v", order)
	}
	if n := Panics()["test.catch"]; n != 1 {
		t.Errorf("counted %d", n)
	}
}

// TestStopOnFatal: Fatal cancels the context with the panic as its cause
// at once, and calls onLate with it after the grace.
func TestStopOnFatal(t *testing.T) {
	late := make(chan error, 1)
	ctx := StopOnFatal(context.Background(), 20*time.Millisecond, func(err error) { late <- err })
	defer SetFatal(nil)
	pe := Recovered("test.loop", "boom")
	Fatal(pe)
	if !errors.Is(context.Cause(ctx), ErrPanic) || ctx.Err() == nil {
		t.Fatalf("cause %v, err %v: want the panic, cancelled", context.Cause(ctx), ctx.Err())
	}
	select {
	case err := <-late:
		if !errors.Is(err, ErrPanic) {
			t.Errorf("onLate got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("onLate not called after the grace")
	}
}
