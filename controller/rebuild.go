package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/projections"
)

var _ api.Rebuilder = (*Controller)(nil)

// rebuildStep is how many events the shadow folds between two progress
// reports.
const rebuildStep = 16 * projections.PageSize

// Rebuild rebuilds projections in the shadow and swaps them in (see
// RebuildProgress).
func (c *Controller) Rebuild(ctx context.Context, req api.RebuildRequest) (api.RebuildResult, error) {
	return c.RebuildProgress(ctx, req, nil)
}

// RebuildProgress folds the named projections (every one when none is
// named) from position 0 into a fresh set with a runner of its own, while
// the live projections go on folding and answering queries; then, with the
// live runner paused, brings both to one position, compares each rebuilt
// projection with the live one, and swaps it in (projections.Runner.Adopt).
// A query never waits for the rebuild: it answers from the old state until
// the swap, and from the new one after it. progress, if set, is called as
// the shadow folds, with the position it reached and the store's head when
// the rebuild began.
//
// Rebuilding a projection drops nothing recorded: the events are the truth,
// and the rebuilt state is theirs. What the comparison found is in the
// result (and logged when a projection differed).
func (c *Controller) RebuildProgress(ctx context.Context, req api.RebuildRequest, progress func(done, total uint64)) (api.RebuildResult, error) {
	names := slices.Clone(req.Projections)
	known := projections.Names()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return api.RebuildResult{}, reject(commands.CodeInvalid, "no projection %q: the projections are %v", n, known)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == len(known) {
		names = nil
	}
	start := time.Now()
	fresh := projections.New()
	shadow := projections.NewRunner(c.store, c.reg, fresh.Feed(names...)...)
	shadow.OnPanic(c.reportPanic)
	head, err := c.store.Head(ctx)
	if err != nil {
		return api.RebuildResult{}, fmt.Errorf("controller: rebuild: head: %w", err)
	}
	for shadow.Position() < head {
		if err := shadow.CatchUpTo(ctx, min(shadow.Position()+rebuildStep, head)); err != nil {
			return api.RebuildResult{}, fmt.Errorf("controller: rebuild: %w", err)
		}
		if progress != nil {
			progress(shadow.Position(), head)
		}
	}
	folded := shadow.Position()
	pos, cmp, err := c.runner.Adopt(ctx, c.views, shadow, fresh, names...)
	if err != nil {
		return api.RebuildResult{}, fmt.Errorf("controller: rebuild: %w", err)
	}
	for _, x := range cmp {
		if !x.Same {
			c.log.Warn("controller: rebuild: the rebuilt projection differs from the one it replaced", "projection", x.Name, "position", pos, "old_bytes", x.OldBytes, "new_bytes", x.NewBytes)
		}
	}
	return api.RebuildResult{
		Position: pos, Events: folded, Millis: time.Since(start).Milliseconds(),
		Projections: mapSlice(cmp, comparedOf), Skipped: c.skipped(),
	}, nil
}
