package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"meshplane/events"
	"meshplane/internal/gcboost"
	"meshplane/internal/safego"
)

// Checkpoints keeps the last position a named consumer has folded.
//
// Invariant: a runner saves a position only after every projection has
// folded every event up to it, so a checkpoint never runs ahead of the state
// it stands for. A durable implementation is only sound with durable
// projections; with in-memory projections use MemCheckpoints.
type Checkpoints interface {
	// Load returns the saved position of name, 0 if none was saved.
	Load(ctx context.Context, name string) (uint64, error)
	// Save records pos as name's position.
	Save(ctx context.Context, name string, pos uint64) error
}

// MemCheckpoints is an in-memory Checkpoints, safe for concurrent use.
type MemCheckpoints struct {
	mu  sync.Mutex
	pos map[string]uint64
}

var _ Checkpoints = (*MemCheckpoints)(nil)

// NewMemCheckpoints returns an empty MemCheckpoints.
func NewMemCheckpoints() *MemCheckpoints { return &MemCheckpoints{pos: map[string]uint64{}} }

// Load returns name's position.
func (m *MemCheckpoints) Load(_ context.Context, name string) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pos[name], nil
}

// Save records name's position.
func (m *MemCheckpoints) Save(_ context.Context, name string, pos uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pos[name] = pos
	return nil
}

// DefaultCheckpoint is the checkpoint name NewRunner uses.
const DefaultCheckpoint = "projections"

// PageSize is how many events CatchUp reads at a time.
const PageSize = 4096

// bulkCatchUp is how many events behind its store a catch-up must start
// for it to run with the collector boosted (package gcboost).
const bulkCatchUp = 16 * PageSize

// maxFailures bounds how many failures a runner keeps for inspection; it
// counts them all.
const maxFailures = 100

// Failure is an event some projection (or the codec) could not fold.
type Failure struct {
	Position   uint64 `json:"position"`
	Stream     string `json:"stream"`
	Type       string `json:"type"`
	Projection string `json:"projection,omitempty"` // "" when the payload did not decode
	Err        string `json:"error"`
}

// Runner feeds projections from a store: it decodes each event once, hands
// it to every projection in order, then advances its position and saves the
// checkpoint.
//
// Concurrency: folding is serialized by the runner (CatchUp, Run and
// Rebuild may be called from several goroutines; an event is folded once),
// and each projection locks its own state, so queries may run at any time.
// Position, WaitFor, Unknown and Failures are safe at any time.
type Runner struct {
	store events.Store
	reg   *events.Registry
	ps    []Projection
	cp    Checkpoints
	name  string

	fold   sync.Mutex // held while folding; guards loaded and foldCtx
	loaded bool       // the checkpoint was read
	// restored: the projections were restored from a checkpoint (Keeper
	// Resume, LoadSnapshot) and have not all been adopted from a fold from
	// 0 since (Adopt).
	restored bool
	foldCtx  context.Context      // of the catch-up or run folding: held lists are looked up under it
	roster   *events.RosterBook   // resolves composed declarations' roster_revision; guarded by fold
	res      *events.ResourceBook // resolves composed declarations' resources_since; guarded by fold

	mu       sync.RWMutex // guards what follows
	pos      uint64
	unknown  map[string]int
	failures []Failure
	failed   int
	moved    *events.Signal // notified whenever pos changes

	onPanic atomic.Pointer[func(error)] // OnPanic's hook

	keeper  *Keeper // Keep's, under fold; nil: no checkpoints kept
	keepSet *Set
	// keepExtra is KeepWith's: the caller's part of each checkpoint.
	keepExtra func() (json.RawMessage, error)
}

// OnPanic makes fn hear of every fold or decode that panicked (each also
// one of Failures), with the *safego.PanicError: the adapter that runs the
// runner logs and counts it (the core does neither). fn is called on the
// folding goroutine, outside the runner's locks; it must not fold.
func (r *Runner) OnPanic(fn func(err error)) { r.onPanic.Store(&fn) }

// NewRunner returns a runner feeding ps from store, checkpointed in memory
// under DefaultCheckpoint.
func NewRunner(store events.Store, reg *events.Registry, ps ...Projection) *Runner {
	return NewRunnerWithCheckpoints(store, reg, NewMemCheckpoints(), DefaultCheckpoint, ps...)
}

// NewRunnerWithCheckpoints returns a runner feeding ps from store,
// checkpointed in cp under name.
func NewRunnerWithCheckpoints(store events.Store, reg *events.Registry, cp Checkpoints, name string, ps ...Projection) *Runner {
	r := &Runner{
		store: store, reg: reg, ps: ps, cp: cp, name: name, roster: events.NewRosterBook(reg, store), res: resourceBook(store, reg),
		unknown: map[string]int{}, moved: events.NewSignal(),
	}
	r.lookHeldUp()
	r.readRunsBack()
	return r
}

// Position is the last position every projection has folded.
func (r *Runner) Position() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.pos
}

// Unknown counts, per type, the events skipped because the registry does not
// know their type.
func (r *Runner) Unknown() map[string]int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.unknown)
}

// Failures returns the first failures kept (at most 100) and how many there
// were in all: payloads that did not decode, and events a projection
// refused.
func (r *Runner) Failures() (kept []Failure, total int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]Failure(nil), r.failures...), r.failed
}

// WaitFor blocks until the projections have folded position pos, or ctx is
// done.
func (r *Runner) WaitFor(ctx context.Context, pos uint64) error {
	for {
		r.mu.RLock()
		at, moved := r.pos, r.moved.Changed()
		r.mu.RUnlock()
		if at >= pos {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("projections: wait for position %d (at %d): %w", pos, at, ctx.Err())
		case <-moved:
		}
	}
}

// load reads the checkpoint once. Called with fold held.
func (r *Runner) load(ctx context.Context) error {
	if r.loaded {
		return nil
	}
	pos, err := r.cp.Load(ctx, r.name)
	if err != nil {
		return fmt.Errorf("projections: load checkpoint %s: %w", r.name, err)
	}
	r.setPos(pos)
	r.loaded = true
	return nil
}

func (r *Runner) setPos(pos uint64) {
	r.mu.Lock()
	r.pos = pos
	r.mu.Unlock()
	r.moved.Notify()
}

// CatchUp folds every event from the checkpoint to the store's head as it is
// when CatchUp starts, a page at a time, saving the checkpoint after each
// page. A read failure is returned, wrapped; it is never taken for the end of
// the stream.
func (r *Runner) CatchUp(ctx context.Context) error {
	r.fold.Lock()
	defer r.fold.Unlock()
	return r.catchUp(ctx, 0)
}

// CatchUpTo is CatchUp stopping at position limit (when the store's head
// is past it), so a caller can flush what was folded in steps (TimelineDB).
func (r *Runner) CatchUpTo(ctx context.Context, limit uint64) error {
	r.fold.Lock()
	defer r.fold.Unlock()
	return r.catchUp(ctx, limit)
}

// catchUp folds to the head, or to limit when limit > 0 is below it.
func (r *Runner) catchUp(ctx context.Context, limit uint64) error {
	r.foldCtx = ctx
	if err := r.load(ctx); err != nil {
		return err
	}
	head, err := r.store.Head(ctx)
	if err != nil {
		return fmt.Errorf("projections: catch up: head: %w", err)
	}
	if limit > 0 && limit < head {
		head = limit
	}
	pos := r.Position()
	if pos >= head {
		return nil
	}
	if head-pos >= bulkCatchUp {
		// A rebuild, or a start far behind: see package gcboost.
		defer gcboost.Boost()()
	}
	// A pipeline: one goroutine cuts pos..head into pages, decodeWorkers
	// each read a page and decode it (decoding is most of a rebuild, and
	// each event's decode is independent), and this goroutine folds the
	// pages in order. Positions are dense, so a page's first position is
	// known before the page before it is read: the workers read pages side
	// by side, which on a server store (PostgreSQL) is two backends at work
	// instead of one. Folding, the checkpoint and every counter stay on
	// this goroutine.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := decodeWorkers()
	jobs := make(chan decodeJob, workers)
	// Pages folded go back to the workers to be filled again: a rebuild
	// allocated a page's slices, some 900 KB, 245 times for a million events.
	spare := make(chan decodedPage, 2*workers+2)
	order := make(chan chan decodedPage, 2*workers)
	planErr := make(chan error, 1)
	// A panic on one of these goroutines fails the catch-up with it
	// (safego.Do), as a store that failed does: never the process.
	go func() {
		defer close(jobs)
		defer close(order)
		planErr <- safego.Do("projections.plan", func() error {
			return planPages(ctx, pos, head, jobs, order, spare)
		})
	}()
	for w := 0; w < workers; w++ {
		go func() {
			for j := range jobs {
				j.out <- r.readPageOrPanic(ctx, j)
			}
		}()
	}
	last := pos
	for res := range order {
		var dp decodedPage
		select {
		case dp = <-res:
		case <-ctx.Done():
			return ctx.Err()
		}
		for {
			if dp.err != nil {
				return dp.err
			}
			for _, ev := range dp.events {
				if ev.Position != last+1 {
					return fmt.Errorf("projections: catch up: expected position %d, store returned %d", last+1, ev.Position)
				}
				last = ev.Position
			}
			r.foldPage(dp)
			if err := r.advance(ctx, last); err != nil {
				return err
			}
			if n := len(dp.events); n > 0 {
				r.keepAt(ctx, last, dp.events[n-1].At)
			}
			dp.recycle(spare)
			if last >= dp.end {
				break
			}
			// A store may return less than a page asked for: the rest,
			// before the next page (already read from its own start).
			dp = r.readPage(ctx, decodeJob{after: last, end: dp.end})
		}
	}
	return <-planErr
}

// foldPage folds a decoded page into every projection. Projections are
// independent of each other while they fold (status reads churn only when
// queried), so each folds the page on its own goroutine; each still sees
// every event in position order. What cannot be folded is counted in the
// order a one-by-one fold would count it, so the counters do not depend on
// scheduling.
func (r *Runner) foldPage(dp decodedPage) {
	for i := range dp.events {
		if dp.errs[i] == nil {
			dp.payloads[i], dp.errs[i] = r.resolveRoster(&dp.events[i], dp.payloads[i])
		}
	}
	if len(r.ps) < 2 || len(dp.events) < 64 {
		for i := range dp.events {
			r.foldDecoded(&dp.events[i], dp.payloads[i], dp.nodes[i], dp.errs[i])
		}
		return
	}
	type refusal struct {
		event, proj int
		err         error
	}
	refused := make([][]refusal, len(r.ps))
	var wg sync.WaitGroup
	for k, proj := range r.ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, ok := proj.(nodeFolder)
			for i := range dp.events {
				if dp.errs[i] != nil {
					continue
				}
				if err := foldOneAs(proj, f, ok, &dp.events[i], dp.payloads[i], dp.nodes[i]); err != nil {
					refused[k] = append(refused[k], refusal{i, k, err})
				}
			}
		}()
	}
	wg.Wait()
	var all []refusal
	for i, err := range dp.errs {
		if err != nil {
			all = append(all, refusal{i, -1, err})
		}
	}
	for _, rs := range refused {
		all = append(all, rs...)
	}
	if len(all) == 0 {
		return
	}
	slices.SortFunc(all, func(a, b refusal) int {
		if a.event != b.event {
			return a.event - b.event
		}
		return a.proj - b.proj
	})
	for _, f := range all {
		ev := dp.events[f.event]
		switch {
		case errors.Is(f.err, errUnknown):
			r.mu.Lock()
			r.unknown[ev.Type]++
			r.mu.Unlock()
		case f.proj < 0:
			r.fail(ev, "", f.err)
		default:
			r.fail(ev, r.ps[f.proj].Name(), f.err)
		}
	}
}

// decodeWorkers is how many goroutines decode pages during a catch-up.
func decodeWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// A decodeJob is a page to read and decode: the events after position after
// up to end.
type decodeJob struct {
	after, end uint64
	out        chan decodedPage
	spare      chan decodedPage // pages folded, to fill again (may be nil)
}

type decodedPage struct {
	events   []events.Event
	payloads []events.Payload
	nodes    []string // nodeOf each event that decoded
	errs     []error  // errUnknown, a decode error, or nil
	end      uint64   // the job's end: the page may stop short of it
	err      error    // the read failed
	// ownEvents is set when events was made by the runner (scanPage), not
	// returned by the store, whose slices a page must not fill again.
	ownEvents bool
}

// reuse returns a page from spare, emptied, with room for n events, or a
// new one. Its events slice is only kept when withEvents and the runner
// made it.
func reuse(spare chan decodedPage, n int, withEvents bool) decodedPage {
	var old decodedPage
	select {
	case old = <-spare:
	default:
	}
	dp := decodedPage{payloads: old.payloads[:0], nodes: old.nodes[:0], errs: old.errs[:0]}
	if cap(dp.payloads) < n {
		dp.payloads, dp.nodes, dp.errs = make([]events.Payload, 0, n), make([]string, 0, n), make([]error, 0, n)
	}
	if withEvents {
		dp.events, dp.ownEvents = old.events[:0], true
		if !old.ownEvents || cap(old.events) < n {
			dp.events = make([]events.Event, 0, n)
		}
	}
	return dp
}

// recycle gives dp's slices to spare (when it has room), emptied so that
// they hold on to nothing folded.
func (dp decodedPage) recycle(spare chan decodedPage) {
	if dp.ownEvents {
		clear(dp.events)
	} else {
		dp.events = nil
	}
	clear(dp.payloads)
	clear(dp.nodes)
	clear(dp.errs)
	select {
	case spare <- dp:
	default:
	}
}

// errUnknown marks an event whose type the registry does not know.
var errUnknown = errors.New("unknown type")

// planPages cuts pos..head into pages and queues each for a worker and, in
// the same order, for folding.
func planPages(ctx context.Context, pos, head uint64, jobs chan<- decodeJob, order chan<- chan decodedPage, spare chan decodedPage) error {
	for pos < head {
		end := pos + min(PageSize, head-pos)
		out := make(chan decodedPage, 1)
		select {
		case order <- out:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case jobs <- decodeJob{after: pos, end: end, out: out, spare: spare}:
		case <-ctx.Done():
			return ctx.Err()
		}
		pos = end
	}
	return nil
}

// readPageOrPanic is readPage on a decode worker: a panic (in the store's
// read) is the page's error.
func (r *Runner) readPageOrPanic(ctx context.Context, j decodeJob) (dp decodedPage) {
	err := safego.Do("projections.read", func() error {
		dp = r.readPage(ctx, j)
		return nil
	})
	if err != nil {
		return decodedPage{err: fmt.Errorf("projections: catch up: read after %d: %w", j.after, err)}
	}
	return dp
}

// readPage reads the events of j from the store and decodes them. It
// touches no runner state.
func (r *Runner) readPage(ctx context.Context, j decodeJob) decodedPage {
	if sc, ok := r.store.(events.Scanner); ok {
		return r.scanPage(ctx, sc, j)
	}
	page, err := r.store.ReadAll(ctx, j.after, int(j.end-j.after))
	if err != nil || len(page) == 0 {
		return readFailed(j, err)
	}
	dp := r.decodePage(page, reuse(j.spare, len(page), false))
	dp.end = j.end
	return dp
}

// readFailed is the page of a read of j that failed with err, or (err nil)
// read nothing.
func readFailed(j decodeJob, err error) decodedPage {
	if err != nil {
		return decodedPage{err: fmt.Errorf("projections: catch up: read after %d: %w", j.after, err)}
	}
	return decodedPage{err: fmt.Errorf("projections: catch up: store read nothing after %d, below its head (at least %d)", j.after, j.end)}
}

// decodePage decodes every event of a page into dp (see reuse). It touches
// no runner state.
func (r *Runner) decodePage(page []events.Event, dp decodedPage) decodedPage {
	dp.events = page
	for _, ev := range page {
		r.decodeInto(&dp, ev)
	}
	return dp
}

// decodeInto decodes ev and appends its payload, node and error to dp.
func (r *Runner) decodeInto(dp *decodedPage, ev events.Event) {
	p, err := r.decode(ev)
	var node string
	if err == nil {
		node = nodeOf(ev, p)
	}
	dp.payloads, dp.nodes, dp.errs = append(dp.payloads, p), append(dp.nodes, node), append(dp.errs, err)
}

// scanPage is readPage from a store that scans: each event is decoded as
// the store hands it over, and kept without its data, which no projection
// reads once the payload is decoded (Projection).
func (r *Runner) scanPage(ctx context.Context, sc events.Scanner, j decodeJob) decodedPage {
	n := int(j.end - j.after)
	dp := reuse(j.spare, min(n, PageSize), true)
	dp.end = j.end
	err := sc.ScanAll(ctx, j.after, n, func(ev events.Event) error {
		r.decodeInto(&dp, ev)
		ev.Data = nil
		dp.events = append(dp.events, ev)
		return nil
	})
	if err != nil || len(dp.events) == 0 {
		return readFailed(j, err)
	}
	return dp
}

// Run folds every event after the checkpoint, then each as it is committed,
// until ctx is done (returning nil) or the store fails (returning the
// wrapped error). The checkpoint is saved after every event.
func (r *Runner) Run(ctx context.Context) error {
	r.fold.Lock()
	err := r.load(ctx)
	r.fold.Unlock()
	if err != nil {
		return err
	}
	err = r.store.Subscribe(ctx, r.Position(), func(ev events.Event) error {
		r.fold.Lock()
		defer r.fold.Unlock()
		at := r.Position()
		switch {
		case ev.Position <= at: // folded meanwhile by CatchUp or Rebuild
			return nil
		case ev.Position != at+1:
			return fmt.Errorf("projections: run: expected position %d, store delivered %d", at+1, ev.Position)
		}
		r.foldCtx = ctx
		r.apply(ev)
		if err := r.advance(ctx, ev.Position); err != nil {
			return err
		}
		r.keepAt(ctx, ev.Position, ev.At)
		return nil
	})
	if err == nil || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		return nil
	}
	return fmt.Errorf("projections: run: %w", err)
}

// Rebuild resets every projection, the counters and the checkpoint, and
// folds the store again from position 0 to its head. Queries made meanwhile
// see the projections partly rebuilt.
func (r *Runner) Rebuild(ctx context.Context) error {
	r.fold.Lock()
	defer r.fold.Unlock()
	for _, p := range r.ps {
		p.Reset()
	}
	r.mu.Lock()
	r.unknown = map[string]int{}
	r.failures, r.failed = nil, 0
	r.mu.Unlock()
	if err := r.cp.Save(ctx, r.name, 0); err != nil {
		return fmt.Errorf("projections: rebuild: save checkpoint %s: %w", r.name, err)
	}
	r.loaded = true
	r.setPos(0)
	if err := r.catchUp(ctx, 0); err != nil {
		return fmt.Errorf("projections: rebuild: %w", err)
	}
	return nil
}

// advance saves the checkpoint at pos (every projection has folded it) and
// then publishes it.
func (r *Runner) advance(ctx context.Context, pos uint64) error {
	if err := r.cp.Save(ctx, r.name, pos); err != nil {
		return fmt.Errorf("projections: save checkpoint %s at %d: %w", r.name, pos, err)
	}
	r.setPos(pos)
	return nil
}

// apply decodes ev once and folds it into every projection. Nothing here is
// fatal: unknown types, undecodable payloads and refusals are counted.
func (r *Runner) apply(ev events.Event) {
	p, err := r.decode(ev)
	var node string
	if err == nil {
		node = nodeOf(ev, p)
	}
	r.foldDecoded(&ev, p, node, err)
}

// decode decodes ev's payload; errUnknown for a type the registry does not
// know. A decoder that panics on what history holds is that event's
// decode error (a *safego.PanicError): the event is passed over and
// counted, as one that does not decode.
func (r *Runner) decode(ev events.Event) (p events.Payload, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, err = nil, safego.Recovered("projections.decode", v)
		}
	}()
	p, err = r.reg.Decode(ev)
	if err != nil && !r.reg.Known(ev.Type) {
		// Asked only on failure: a lookup of the type per event was a
		// third of a second of a rebuild.
		return nil, errUnknown
	}
	return p, err
}

// foldDecoded folds one decoded event, which concerns node (nodeOf), into
// every projection, or counts why it cannot.
func (r *Runner) foldDecoded(ev *events.Event, p events.Payload, node string, err error) {
	if errors.Is(err, errUnknown) {
		r.mu.Lock()
		r.unknown[ev.Type]++
		r.mu.Unlock()
		return
	}
	if err != nil {
		r.fail(*ev, "", err)
		return
	}
	if p, err = r.resolveRoster(ev, p); err != nil {
		r.fail(*ev, "", err)
		return
	}
	for _, proj := range r.ps {
		if err := foldOne(proj, ev, p, node); err != nil {
			r.fail(*ev, proj.Name(), err)
		}
	}
}

// resolveRoster folds a roster.changed into the runner's roster book and
// gives a composed declaration that names a roster revision its roster in
// full (events.RosterBook.Resolve, reading the roster's stream for a
// revision folded before the runner's start): every projection folds the
// names, as a declaration recorded before revisions carried them. A
// declaration stored by reference gets its resources in full likewise
// (events.ResourceBook.Resolve, looking up by id one carried before the
// runner's start), or, when the reference does not resolve, is folded with
// its resources unknown and the note why (ResourcesUnknown), never
// refused. Called in position order, under fold.
func (r *Runner) resolveRoster(ev *events.Event, p events.Payload) (events.Payload, error) {
	switch v := p.(type) {
	case events.RosterChanged:
		if ev.Stream == events.RosterStream {
			r.roster.Fold(v)
		}
	case events.DeclarationComposed:
		ctx := r.foldCtx
		if ctx == nil {
			ctx = context.Background()
		}
		v, err := r.res.Resolve(ctx, *ev, v)
		if err != nil {
			return p, err
		}
		if v.RosterRevision == 0 || v.Roster != nil {
			return v, nil
		}
		return r.roster.Resolve(ctx, v)
	}
	return p, nil
}

// resourceBook is the runner's events.ResourceBook, looking up through
// store when it reads by id.
func resourceBook(store events.Store, reg *events.Registry) *events.ResourceBook {
	ir, _ := store.(events.IDReader)
	return events.NewResourceBook(reg, ir)
}

// nodeFolder is a projection of this package: it folds an event whose
// node the runner has worked out once (nodeOf), on a decode worker, for
// every projection, and takes the event by pointer (it is some 180
// bytes). fold(&ev, p, nodeOf(ev, p)) is Fold(ev, p).
type nodeFolder interface {
	fold(ev *events.Event, p events.Payload, node string) error
}

var (
	_ nodeFolder = (*Churn)(nil)
	_ nodeFolder = (*Roster)(nil)
	_ nodeFolder = (*Status)(nil)
	_ nodeFolder = (*Holds)(nil)
	_ nodeFolder = (*Timeline)(nil)
)

// foldOne folds ev, which concerns node, into proj.
func foldOne(proj Projection, ev *events.Event, p events.Payload, node string) error {
	f, ok := proj.(nodeFolder)
	return foldOneAs(proj, f, ok, ev, p, node)
}

// foldOneAs is foldOne with proj's nodeFolder looked up (f, when ok). A
// fold that panics is that projection's refusal of the event (a
// *safego.PanicError), counted as any refusal: history that one
// projection cannot fold never stops the others, nor the process. (Each
// projection unlocks its state with defer, so a panic leaves it usable.)
func foldOneAs(proj Projection, f nodeFolder, ok bool, ev *events.Event, p events.Payload, node string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = safego.Recovered("projections.fold", v)
		}
	}()
	if ok {
		return f.fold(ev, p, node)
	}
	return proj.Fold(*ev, p)
}

func (r *Runner) fail(ev events.Event, proj string, err error) {
	if fn := r.onPanic.Load(); fn != nil && errors.Is(err, safego.ErrPanic) {
		(*fn)(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed++
	if len(r.failures) < maxFailures {
		r.failures = append(r.failures, Failure{
			Position: ev.Position, Stream: ev.Stream, Type: ev.Type, Projection: proj, Err: err.Error(),
		})
	}
}
