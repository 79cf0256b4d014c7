// Package groupcommit is the group commit of the stores that write through
// one committer goroutine (boltstore, pgstore): each Append becomes a
// Request on a queue, the committer gathers what is queued into a group, the
// store's commit function writes the group in one transaction, and each
// request gets its own answer. The store gives only that function (and the
// bounds below); what happens between Append and the answer is here, once.
//
// What a Committer guarantees:
//
//   - Order. Requests are committed in the order they were queued: a Submit
//     that returned before another began is committed first. A group holds
//     consecutive requests of the queue and the commit function decides
//     them in that order, so each request sees every request queued before
//     it, in an earlier group or earlier in its own.
//   - Which requests share a commit. The first request queued after the
//     previous commit began, and every request queued behind it, up to
//     Config.MaxRequests requests or Config.MaxBytes bytes (a request larger
//     than both commits alone). With Config.MaxWait, a group smaller than the
//     number of writers known to be active waits a little for the others
//     (see gather).
//   - One answer per request, exactly: its own Result, or, if the commit
//     fails as a whole, the commit's error for every request of the group.
//     A failed commit fails its group only: the requests queued behind it
//     go to the next commit.
//   - A request whose caller's ctx ends before the committer takes it is
//     dropped and never committed: Submit returns ctx's error, and nothing of
//     the request was written. Once taken, it is answered within its commit,
//     whatever its ctx does.
//   - Close. The group being committed completes and is answered; every
//     request still queued, and every Submit after, fails with
//     events.ErrClosed. A Submit that races Close gets one or the other,
//     never both and never neither.
//   - Back-pressure. At most Config.Queue requests wait for the committer;
//     Submit blocks while the queue is full, until there is room, its ctx
//     ends, or the Committer is closed.
//
// The package does no I/O of its own: a commit is whatever the store's
// function does. It reads the clock only to time commits, for MaxWait.
package groupcommit

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"meshplane/events"
	"meshplane/internal/safego"
)

// A Request is one append waiting for the committer. The store fills the
// exported fields; the committer owns the rest.
type Request struct {
	Stream   string
	Expected events.ExpectedVersion
	Events   []events.Event // prepared (events.Prepare): validated, Version and Position zero
	Size     int            // about the bytes the request will write: what MaxBytes counts

	// state moves from pending to taken (by the committer, which then
	// answers on done exactly once) or to abandoned (by the caller, whose
	// ctx ended first; the committer then skips it).
	state atomic.Int32
	done  chan Result // buffered 1
}

const (
	pending int32 = iota
	taken
	abandoned
)

// Result is one request's answer: the events as stored, or why the request
// was refused (a *events.VersionError, an events.ErrIDConflict, ...).
type Result struct {
	Events []events.Event
	Err    error
}

// CommitFunc commits group in one transaction, deciding its requests in
// order (each sees those before it), and returns each request's result:
// results[i] is group[i]'s. A request it refuses writes nothing and leaves
// the others alone. If err is not nil the commit failed as a whole: every
// request of the group fails with err, and results is not read.
//
// It runs on the committer goroutine, one call at a time; whatever the store
// must do after a commit and before its callers hear of it (publish the new
// head, wake subscribers) it does before it returns.
type CommitFunc func(group []*Request) (results []Result, err error)

// Config bounds a Committer.
type Config struct {
	// Queue is how many requests may wait for the committer; Submit blocks
	// while that many do. At least 1.
	Queue int
	// MaxRequests and MaxBytes bound a group: the committer stops gathering
	// past either. At least 1.
	MaxRequests int
	MaxBytes    int
	// MaxWait bounds how long a group waits to fill (see gather); 0 never
	// waits.
	MaxWait time.Duration
	// Name is the store's, for the committer goroutine's recover: a panic
	// in it (a commit's) stops the process as "NAME.write" (package safego).
	Name string
}

// Committer runs the committer goroutine of one store.
type Committer struct {
	commit CommitFunc
	cfg    Config

	reqs      chan *Request
	quit      chan struct{} // closed by Close: the committer fails what is queued
	done      chan struct{} // closed when the committer has returned
	closeOnce sync.Once
}

// Start checks cfg and starts the committer goroutine, which calls commit
// until Close.
func Start(commit CommitFunc, cfg Config) (*Committer, error) {
	switch {
	case commit == nil:
		return nil, fmt.Errorf("groupcommit: no commit function")
	case cfg.Queue < 1, cfg.MaxRequests < 1, cfg.MaxBytes < 1, cfg.MaxWait < 0:
		return nil, fmt.Errorf("groupcommit: bounds out of range: %+v", cfg)
	}
	c := &Committer{
		commit: commit, cfg: cfg,
		reqs: make(chan *Request, cfg.Queue), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go c.loop()
	return c, nil
}

// Submit queues r, waits for its commit and returns its result: the events
// as stored, the commit function's refusal or failure (as it gave them),
// events.ErrClosed if the Committer closed before r was taken, or ctx's
// error if ctx ended before that (and then nothing of r was written).
func (c *Committer) Submit(ctx context.Context, r *Request) ([]events.Event, error) {
	r.done = make(chan Result, 1)
	select {
	case c.reqs <- r:
	case <-c.quit:
		return nil, events.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var res Result
	select {
	case res = <-r.done:
	case <-c.done:
		res = lastWord(r)
	case <-ctx.Done():
		if r.state.CompareAndSwap(pending, abandoned) {
			return nil, ctx.Err()
		}
		// The committer has it: its answer comes within one commit.
		select {
		case res = <-r.done:
		case <-c.done:
			res = lastWord(r)
		}
	}
	return res.Events, res.Err
}

// lastWord is r's answer once the committer has returned: the one it gave,
// or ErrClosed if r was queued too late to be seen.
func lastWord(r *Request) Result {
	select {
	case res := <-r.done:
		return res
	default:
		return Result{Err: events.ErrClosed}
	}
}

// Close stops the committer: the commit in progress completes and is
// answered, and every request still queued fails with events.ErrClosed. It
// returns once the committer has returned, and is harmless to repeat.
func (c *Committer) Close() {
	c.closeOnce.Do(func() { close(c.quit) })
	<-c.done
}

// loop is the committer goroutine: it commits groups of requests until
// Close, then fails whatever is still queued with ErrClosed.
func (c *Committer) loop() {
	defer close(c.done)
	defer safego.Catch(cmp.Or(c.cfg.Name, "groupcommit")+".write", nil)
	var (
		expect  int           // requests the next group waits for: see gather
		lastDur time.Duration // how long the last commit took
	)
	for {
		var first *Request
		select {
		case first = <-c.reqs:
		case <-c.quit:
			c.failQueued()
			return
		}
		select {
		case <-c.quit: // Close wins over a request that raced it
			if first.state.CompareAndSwap(pending, taken) {
				first.done <- Result{Err: events.ErrClosed}
			}
			c.failQueued()
			return
		default:
		}
		group := c.gather(first, expect, min(lastDur/4, c.cfg.MaxWait))
		if len(group) == 0 {
			continue
		}
		t0 := time.Now()
		results, err := c.commit(group)
		lastDur = time.Since(t0)
		if err == nil && len(results) != len(group) {
			err = fmt.Errorf("groupcommit: the commit answered %d of %d requests", len(results), len(group))
		}
		// Whoever queued during the commit is a writer other than the
		// group's, which will be back as soon as it is answered.
		expect = len(group) + len(c.reqs)
		for i, r := range group {
			if err != nil {
				r.done <- Result{Err: err}
			} else {
				r.done <- results[i]
			}
		}
	}
}

// gather takes first and every request already queued, within the group
// bounds, skipping requests abandoned by their callers. If that makes fewer
// than expect requests, it waits up to wait for more.
//
// Why wait: writers that each append and wait for the answer split into
// two halves when nothing waits, one committing while the other queues
// (with 8 writers, groups alternated k and 8-k requests, 4 on average), so
// every append waited for two commits. expect is the writers of the last
// group plus those that queued during its commit: the writers known to be
// active, which all come back once answered. A wait of a quarter of the
// last commit bounds what a writer that does not come back costs the
// others (and MaxWait bounds it), while a commit of twice the requests
// costs about what one did (the fsync and the round trip are most of it).
// A lone writer never waits: it is the whole group.
func (c *Committer) gather(first *Request, expect int, wait time.Duration) []*Request {
	var group []*Request
	size := 0
	take := func(r *Request) {
		if r.state.CompareAndSwap(pending, taken) {
			group = append(group, r)
			size += r.Size
		}
	}
	take(first)
	full := func() bool { return len(group) >= c.cfg.MaxRequests || size >= c.cfg.MaxBytes }
	for !full() {
		select {
		case r := <-c.reqs:
			take(r)
			continue
		default:
		}
		break
	}
	if full() || len(group) >= expect || wait <= 0 {
		return group
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for !full() && len(group) < expect {
		select {
		case r := <-c.reqs:
			take(r)
		case <-timer.C:
			return group
		case <-c.quit:
			return group // committed; the loop then sees quit
		}
	}
	return group
}

// failQueued answers every request still queued with ErrClosed.
func (c *Committer) failQueued() {
	for {
		select {
		case r := <-c.reqs:
			if r.state.CompareAndSwap(pending, taken) {
				r.done <- Result{Err: events.ErrClosed}
			}
		default:
			return
		}
	}
}
