// Package safego puts a recover at the boundary of every goroutine the
// controller, an agent and the API run, so that none dies of a panic
// unseen: the panic is caught where the goroutine's work begins, its stack
// logged, counted (Panics, which package metrics serves as
// meshplane_panics_total{where}), and turned into a *PanicError.
//
// What happens next depends on what the goroutine is:
//
//   - A handler (one report off the bus, one HTTP request, one apply, one
//     node's push) carries on: Call returns the panic as an error, which
//     the caller treats as that item's failure, and the next item is
//     handled as if nothing happened. safehttp.Handler does it for an
//     http.Handler: a request that panics is a logged, counted 500.
//   - A loop that cannot carry on (the projections, the interval passes,
//     the API's server, the declaration watch) stops the process: Go
//     recovers, logs, counts and calls Fatal, whose hook (SetFatal, set
//     once by the program's main) cancels the process's root context, so
//     that every part stops in order, the children too, and the program
//     exits with its code for a bug (mesh: 70, the stack on stderr). A loop
//     whose owner waits for its error can use Call instead: the
//     *PanicError is its error, and the owner stops the same way.
//   - A goroutine of the pure core (package projections) uses Do: the
//     panic becomes the *PanicError it returns, nothing logged, nothing
//     counted; its caller is the boundary that reports it.
//
// Every *PanicError is logged and counted once (Report), by the first
// boundary that sees it. A boundary is named by where ("bus.report",
// "api.request"): the label of its count and a field of its log line.
//
// http.ErrAbortHandler, the panic net/http documents for aborting a
// response, is not a bug: safehttp.Handler lets it through, uncounted.
//
// # The boundaries
//
// The where of each, as meshplane_panics_total labels it, and what its
// panic does:
//
//	controller.pass        an interval pass                    logged, counted; the next tick comes
//	controller.liveness    a liveness check                    logged, counted; the next tick comes
//	controller.push        one node's push                     that node's push fails, the others go
//	bus.report             one report off the bus              redelivered with the handler's backoff
//	bus.heartbeat          one heartbeat off the bus           that heartbeat is lost
//	api.request            one HTTP request (API, page, /metrics) 500, code internal
//	web.feed               one page's event stream             that stream ends
//	projections.fold       one event in one projection         a refusal (Failures), the fold goes on
//	projections.decode     one event's payload                 a decode failure, the fold goes on
//	projections.plan/read  a catch-up's goroutines             the catch-up's error
//	controller.run         the core's loop                     mesh up stops, exit 70
//	controller.projections the projections' loop               mesh up stops, exit 70
//	controller.lead        a standby's wait to lead            mesh up stops, exit 70
//	controller.metrics     the metrics follower                mesh up stops, exit 70 (Fatal)
//	daemon.chain           the chain head's periodic log       mesh up stops, exit 70 (Fatal)
//	api.serve              the API's server                    mesh up stops, exit 70
//	up.controller          mesh up's controller                mesh up stops, exit 70
//	boltstore.write        the bolt store's writer             the process stops, exit 70 (Fatal)
//	pgstore.write/listen/poll/notify/leader  PostgreSQL's loops the process stops, exit 70 (Fatal)
//	agent.apply            one apply (or drift check)          logged, counted; kept reports sent later
//	agent.flush            one round of kept reports           sent again after the backoff
//	agent.dryrun           one dry run (mesh plan)             answered with the panic
//	agent.metrics          one scrape of an agent              500
//	agent.artifacts        one request to the artifact store   500
//	bus.watch              an agent's declaration watch        the agent stops, exit 70 (Fatal)
package safego

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrPanic is what a *PanicError is (errors.Is): a goroutine panicked and
// the panic was recovered at its boundary.
var ErrPanic = errors.New("panic")

// PanicError is a panic recovered at a goroutine's boundary.
type PanicError struct {
	Where string // the boundary that recovered it
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack, taken as it was recovered

	reported atomic.Bool // logged and counted (Report)
}

func (e *PanicError) Error() string {
	if at := e.Origin(); at != "" {
		return fmt.Sprintf("%s: panic: %v (in %s)", e.Where, e.Value, at)
	}
	return fmt.Sprintf("%s: panic: %v", e.Where, e.Value)
}

// Origin is where the panic was raised, from the stack: the first function
// below the runtime's panic that is not the runtime's own, with its file's
// base name and line ("meshplane/projections.(*Status).fold status.go:212");
// "" when the stack does not say.
func (e *PanicError) Origin() string {
	lines := strings.Split(string(e.Stack), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "panic(") })
	if i < 0 {
		return ""
	}
	for i += 2; i+1 < len(lines); i += 2 {
		fn := lines[i]
		if strings.HasPrefix(fn, "runtime.") {
			continue
		}
		if k := strings.LastIndexByte(fn, '('); k > 0 {
			fn = fn[:k]
		}
		file := strings.TrimSpace(lines[i+1])
		if k := strings.LastIndexByte(file, ' '); k > 0 {
			file = file[:k]
		}
		return fn + " " + path.Base(file)
	}
	return ""
}

// Is reports whether target is ErrPanic. The panic's value is not
// unwrapped: a panic of context.Canceled is a bug, not a cancellation.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// As returns err's *PanicError, if it wraps one.
func As(err error) (*PanicError, bool) {
	var pe *PanicError
	ok := errors.As(err, &pe)
	return pe, ok
}

// Recovered is the *PanicError of v, what recover returned, with the
// stack as it is now: call it in the deferred function that recovered, for
// a boundary in a hot loop that cannot afford Do's closure.
func Recovered(where string, v any) *PanicError {
	return &PanicError{Where: where, Value: v, Stack: debug.Stack()}
}

// Do runs fn and returns what it returns, or, if it panics, the panic as a
// *PanicError, neither logged nor counted: for the pure core, whose caller
// reports it. where names the boundary.
func Do(where string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Recovered(where, r)
		}
	}()
	inject(where)
	return fn()
}

// Call runs fn and returns what it returns, or, if it panics, the panic as
// a *PanicError, logged with its stack to log (nil: slog.Default) and
// counted under where. A *PanicError fn returns (from a Do below it) is
// reported the same way, once.
func Call(where string, log *slog.Logger, fn func() error) error {
	site(where)
	err := Do(where, fn)
	if err != nil {
		Report(log, err)
	}
	return err
}

// Go runs fn on a goroutine of its own, as a loop that cannot carry on:
// if it panics (or returns a *PanicError), the panic is reported (Report)
// and the process is stopped (Fatal). An error fn returns that is not a
// panic is logged to log; Go does not stop the process for it. The channel
// returned is closed when the goroutine ends (after Fatal, for a panic):
// what a caller stopping the loop waits on.
func Go(where string, log *slog.Logger, fn func() error) <-chan struct{} {
	site(where)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := Do(where, fn)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrPanic) {
			logger(log).Error("goroutine stopped", "where", where, "err", err)
			return
		}
		Report(log, err)
		Fatal(err)
	}()
	return done
}

// Catch is Go's recover for a loop started with a plain go statement. It
// is deferred in the loop's function after the function's other defers,
// so that it runs first of them: a panic is reported and the process set
// stopping (Fatal) before the loop's own deferred calls (closing its
// output, say) tell anyone the loop ended, and they see a process stopping
// for a panic rather than a loop that ended on its own. It must be
// deferred directly (defer safego.Catch("bus.watch", log)): recover works
// only there.
func Catch(where string, log *slog.Logger) {
	if r := recover(); r != nil {
		err := Recovered(where, r)
		Report(log, err)
		Fatal(err)
	}
}

// Report logs err's panic with its stack to log (nil: slog.Default) and
// counts it under its Where, if err wraps a *PanicError not yet reported;
// attrs are added to the log line. It returns err.
func Report(log *slog.Logger, err error, attrs ...any) error {
	pe, ok := As(err)
	if !ok || !pe.reported.CompareAndSwap(false, true) {
		return err
	}
	site(pe.Where).Add(1)
	args := append([]any{"where", pe.Where, "panic", fmt.Sprint(pe.Value)}, attrs...)
	args = append(args, "stack", string(pe.Stack))
	logger(log).Error("panic recovered (a bug in meshplane)", args...)
	return err
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// sites counts the panics per boundary: where → *atomic.Uint64. A boundary
// is listed from its first use, so its count is served as 0 before any
// panic.
var sites sync.Map

// Register lists the boundary where (its count served as 0 before any
// panic): for a boundary whose recover is not in this package
// (safehttp.Handler's).
func Register(where string) { site(where) }

func site(where string) *atomic.Uint64 {
	if c, ok := sites.Load(where); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := sites.LoadOrStore(where, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

// Panics returns the panics reported in this process so far, by where
// (every boundary used so far, 0 when none panicked).
func Panics() map[string]uint64 {
	out := map[string]uint64{}
	sites.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// fatal is the hook Fatal calls (SetFatal); nil: crash.
var fatal atomic.Pointer[func(error)]

// SetFatal makes fn what Fatal calls, and returns the hook it replaces
// (nil for none). A program's main sets it once, to cancel its root
// context with err as the cause; fn must not block. nil removes the hook.
func SetFatal(fn func(err error)) (previous func(error)) {
	var p *func(error)
	if fn != nil {
		p = &fn
	}
	if old := fatal.Swap(p); old != nil {
		return *old
	}
	return nil
}

// StopOnFatal is the hook a program's main sets (SetFatal): a loop that
// panicked stops the process as a signal would, parent's context
// cancelled with the panic as its cause, so every part stops in order.
// One that does not stop within grace is ended: onLate is called with the
// panic (to say so and exit).
func StopOnFatal(parent context.Context, grace time.Duration, onLate func(error)) context.Context {
	ctx, crash := context.WithCancelCause(parent)
	SetFatal(func(err error) {
		crash(err)
		time.AfterFunc(grace, func() { onLate(err) })
	})
	return ctx
}

// Fatal stops the process for err, a loop's panic: through the hook
// SetFatal set; without one (a library's tests), it writes err's stack to
// stderr and panics again, which crashes the process as the panic would
// have.
func Fatal(err error) {
	if fn := fatal.Load(); fn != nil {
		(*fn)(err)
		return
	}
	if pe, ok := As(err); ok {
		fmt.Fprintf(os.Stderr, "%v\n\n%s\n", pe, pe.Stack)
	}
	panic(err)
}
