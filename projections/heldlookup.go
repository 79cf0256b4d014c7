package projections

import (
	"context"

	"meshplane/events"
)

// heldLooker is a projection whose Reports resolve held_since: status,
// holds and the timeline.
type heldLooker interface {
	SetHeldLookup(fn HeldLookup)
}

var (
	_ heldLooker = (*Status)(nil)
	_ heldLooker = (*Holds)(nil)
	_ heldLooker = (*Timeline)(nil)
)

// SetHeldLookup gives the projection's report resolver a lookup for what
// its lists miss (Reports.SetLookup). A Runner sets it itself.
func (s *Status) SetHeldLookup(fn HeldLookup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports.SetLookup(fn)
}

// SetHeldLookup: see Status.SetHeldLookup.
func (h *Holds) SetHeldLookup(fn HeldLookup) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reports.SetLookup(fn)
}

// SetHeldLookup: see Status.SetHeldLookup.
func (t *Timeline) SetHeldLookup(fn HeldLookup) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reports.SetLookup(fn)
}

// StoreHeldLookup is the HeldLookup that reads through store's id index,
// decoding with reg, under ctx: events.HeldOf.
func StoreHeldLookup(ctx context.Context, store events.IDReader, reg *events.Registry) HeldLookup {
	return func(stream, applyID string) ([]events.Held, error) {
		return events.HeldOf(ctx, store, reg, stream, applyID)
	}
}

// lookHeldUp gives every projection r feeds that resolves held_since a
// lookup through r's store, when the store reads by id. The lookup reads
// under the context of the catch-up or run that folds (foldCtx).
func (r *Runner) lookHeldUp() {
	ir, ok := r.store.(events.IDReader)
	if !ok {
		return
	}
	fn := func(stream, applyID string) ([]events.Held, error) {
		ctx := r.foldCtx
		if ctx == nil {
			ctx = context.Background()
		}
		return events.HeldOf(ctx, ir, r.reg, stream, applyID)
	}
	for _, p := range r.ps {
		if l, ok := p.(heldLooker); ok {
			l.SetHeldLookup(fn)
		}
	}
}

// runReaderSetter is a projection that keeps runs of entries read back
// from the store: the timeline.
type runReaderSetter interface {
	SetRunReader(r RunReader)
}

var _ runReaderSetter = (*Timeline)(nil)

// readRunsBack gives every projection r feeds that keeps runs r's store to
// read them back from (Timeline.SetRunReader).
func (r *Runner) readRunsBack() {
	for _, p := range r.ps {
		if s, ok := p.(runReaderSetter); ok {
			s.SetRunReader(r.store)
		}
	}
}
