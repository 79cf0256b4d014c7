package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"meshplane/api"
	"meshplane/projections"
)

// A controller may start from projections loaded elsewhere (Config.Views,
// Config.Runner, Config.TimelineQuery): a local CLI call loads them from the
// snapshot in its data directory (projections/snapstore) and folds only the
// events appended since, instead of every event from position 0. Every query
// still syncs to the store's head first, so an answer is never older than
// the store when the query began.

// ErrIncomplete means projections loaded from a snapshot folded an event
// naming a declaration older than the snapshot keeps (projections.Set's
// Incomplete): their answers might differ from a fold from 0, so none is
// given. Asking again folds from 0 (snapstore.Open does).
var ErrIncomplete = errors.New("controller: the projections loaded from the snapshot cannot fold the newest events (they name a declaration older than it keeps); run the command again: it folds every event from position 0")

// preload takes the projections cfg gives, if any.
func (c *Controller) preload(cfg Config) error {
	switch {
	case cfg.Views == nil && cfg.Runner == nil:
		if cfg.TimelineQuery != nil {
			return errors.New("controller: a timeline query without preloaded views")
		}
		return nil
	case cfg.Views == nil || cfg.Runner == nil:
		return errors.New("controller: preloaded views and runner go together")
	}
	c.views, c.runner, c.tlQuery, c.preloaded = cfg.Views, cfg.Runner, cfg.TimelineQuery, true
	return nil
}

// checkPreloaded refuses to answer from preloaded projections that folded
// what they cannot (ErrIncomplete).
func (c *Controller) checkPreloaded() error {
	if c.preloaded && c.views.Incomplete() {
		return ErrIncomplete
	}
	return nil
}

// queryTimeline answers a timeline query: from Config.TimelineQuery when
// set, else from the timeline in memory.
func (c *Controller) queryTimeline(f projections.Filter) ([]projections.Entry, error) {
	if c.tlQuery != nil {
		es, err := c.tlQuery(f)
		if err != nil {
			return nil, fmt.Errorf("controller: timeline: %w", err)
		}
		return es, nil
	}
	es, err := c.views.Timeline.Read(f)
	if err != nil {
		return nil, fmt.Errorf("controller: timeline: %w", err)
	}
	return es, nil
}

// QueryTimeline is every entry req's filter selects (its cursors and limit
// aside), after a Sync: the CLI's timeline without a limit, in one query
// instead of pages.
func (c *Controller) QueryTimeline(ctx context.Context, req api.TimelineRequest) ([]api.Entry, error) {
	if err := c.Sync(ctx); err != nil {
		return nil, err
	}
	types, err := c.checkTimeline(ctx, req)
	if err != nil {
		return nil, err
	}
	var qerr error
	es := queryTypes(func(f projections.Filter) []projections.Entry {
		es, err := c.queryTimeline(f)
		qerr = cmp.Or(qerr, err)
		return es
	}, filterOf(req), types)
	return entriesOf(es), qerr
}

// Skipped is what the projections could not fold so far (what a Status or
// a Timeline answer carries), for the queries whose answer carries none.
func (c *Controller) Skipped() api.Skipped { return c.skipped() }

// errTimelineOnDisk is the refusal of a query that needs every timeline
// entry in memory, by a controller whose entries are mostly on disk.
func errTimelineOnDisk(what string) error {
	return fmt.Errorf("controller: %s needs the whole timeline in memory; this controller reads it from disk (a local call resuming from a snapshot): fold from 0 instead", what)
}
