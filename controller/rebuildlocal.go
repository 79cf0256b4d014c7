package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"meshplane/projections"
)

// ErrNondeterministic is RebuildLocal's failure when two rebuilds from
// the same events differ: a bug in a projection.
var ErrNondeterministic = errors.New("two rebuilds differ: the projections are not deterministic (a bug: please report it)")

// LocalRebuild is what RebuildLocal rebuilt.
type LocalRebuild struct {
	// Runner and Set are the first rebuild's, at Runner.Position(): what
	// a local call saves as its data directory's snapshot (snapstore.Save)
	// when every projection was rebuilt.
	Runner *projections.Runner
	Set    *projections.Set
	// Bytes is the size of the rebuilt projections' snapshot, the same
	// for both rebuilds.
	Bytes int
	// Took is how long the first rebuild took.
	Took time.Duration
}

// RebuildLocal rebuilds the named projections (every one when none is
// named) from position 0 twice and checks that the two are byte-identical
// (ErrNondeterministic): once into a fresh set by a runner of its own, up
// to the store's head when it began, and once by the controller's own
// runner (Runner.Rebuild). It is for a controller nothing else uses (a
// local CLI call), unlike Rebuild, which rebuilds in the shadow of a
// running one. progress, if set, is called as the first rebuild folds,
// with the position it reached and the head.
func (c *Controller) RebuildLocal(ctx context.Context, names []string, progress func(done, head uint64)) (LocalRebuild, error) {
	if progress == nil {
		progress = func(uint64, uint64) {}
	}
	head, err := c.store.Head(ctx)
	if err != nil {
		return LocalRebuild{}, err
	}
	fresh := projections.New()
	r := projections.NewRunner(c.store, c.reg, fresh.Feed(names...)...)
	start := time.Now()
	progress(0, head)
	for r.Position() < head {
		if err := r.CatchUpTo(ctx, min(r.Position()+rebuildStep, head)); err != nil {
			return LocalRebuild{}, err
		}
		progress(r.Position(), head)
	}
	took := time.Since(start)
	first, err := snapshotOf(fresh, names)
	if err != nil {
		return LocalRebuild{}, err
	}
	// The second rebuild, by the controller's own runner.
	if err := c.runner.Rebuild(ctx); err != nil {
		return LocalRebuild{}, err
	}
	if c.runner.Position() != r.Position() {
		return LocalRebuild{}, fmt.Errorf("the store's head moved during the rebuild (%d, then %d): run it again", r.Position(), c.runner.Position())
	}
	second, err := snapshotOf(c.views, names)
	if err != nil {
		return LocalRebuild{}, err
	}
	if !slices.Equal(first, second) {
		return LocalRebuild{}, ErrNondeterministic
	}
	return LocalRebuild{Runner: r, Set: fresh, Bytes: len(first), Took: took}, nil
}

// snapshotOf serializes the projections of set named (every one when
// none is).
func snapshotOf(set *projections.Set, names []string) ([]byte, error) {
	var ps []projections.Projection
	for _, p := range set.All() {
		if len(names) == 0 || slices.Contains(names, p.Name()) {
			ps = append(ps, p)
		}
	}
	return projections.Snapshot(ps...)
}
