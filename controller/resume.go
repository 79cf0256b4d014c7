package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"meshplane/events"
	"meshplane/projections"
)

// A restart that does not replay the history (issue 23 item 3): Resume
// restores the live projections from the newest checkpoint of
// Config.Checkpoints that matches the store (projections.Keeper.Resume:
// the event id and the hash chain at its position), and folds only the
// events after it. One that does not match is passed over with a note
// (logged) and the next older one used, down to a fold from 0; so is one
// from which the fold to the head is not whole (Set.Incomplete), and one
// that carries no token table or revocation list (checkpointExtra: a
// CLI's, or an older build's).
//
// The checkpoint keeps each projection's current state and bounded recent
// history, not the timeline's entries nor every declaration before it. So
// a resumed controller answers the timeline after the checkpoint from its
// live projections and before it from projections folded from 0 to there
// (wholeOf, made on first use: a query that reaches no further back never
// pays for it), and Why, roster history and roster diff, which need every
// entry or declaration, from those projections folded on to the head, as
// At does for a past moment.

// checkpointExtra is the part of a controller's checkpoint beside the
// Set: the token table and the bus's revocation list at its position
// (projections.Tokens and projections.Revocations are fed by the same
// runner but are not of the Set). With the list in the checkpoint, a
// restart gives the bus its revocations without reading the whole store.
type checkpointExtra struct {
	Tokens  []projections.TokenInfo `json:"tokens"`
	Revoked map[string]time.Time    `json:"revoked"`
}

// checkpointExtraOf is the checkpoint's checkpointExtra of tokens and
// revoked.
func checkpointExtraOf(tokens *projections.Tokens, revoked *projections.Revocations) func() (json.RawMessage, error) {
	return func() (json.RawMessage, error) {
		return json.Marshal(checkpointExtra{Tokens: tokens.List(), Revoked: revoked.List()})
	}
}

// errNoTokenTable passes over a checkpoint without a token table or a
// revocation list: resuming from it would take a key revoked before it
// for a live one.
var errNoTokenTable = errors.New("it keeps no token table or revocation list (a local call's, or an older build's)")

// restoreExtra restores what extra recorded into t and rv (both empty):
// the token table as the events that made it, each token's token.created
// at its creation and its token.revoked at its revocation; the revocation
// list as it is.
func restoreExtra(t *projections.Tokens, rv *projections.Revocations, extra json.RawMessage) error {
	if len(extra) == 0 {
		return errNoTokenTable
	}
	var x checkpointExtra
	if err := json.Unmarshal(extra, &x); err != nil || x.Tokens == nil || x.Revoked == nil {
		return fmt.Errorf("%w: %v", errNoTokenTable, err)
	}
	for _, ti := range x.Tokens {
		ev := events.Event{Stream: "token-" + ti.Name, At: ti.Created}
		if err := t.Fold(ev, events.TokenCreated{Name: ti.Name, TokenID: ti.ID, SecretSHA256: ti.SecretSHA256, By: ti.By, ExpiresAt: ti.ExpiresAt}); err != nil {
			return err
		}
		if !ti.Revoked.IsZero() {
			ev.At = ti.Revoked
			if err := t.Fold(ev, events.TokenRevoked{Name: ti.Name, TokenID: ti.ID, By: ti.RevokedBy}); err != nil {
				return err
			}
		}
	}
	rv.Restore(x.Revoked)
	return nil
}

// resumed is what Resume restored: the checkpoint's position and the
// projections folded from 0 that answer for before it.
type resumed struct {
	pos uint64

	mu    sync.Mutex
	whole *Controller // folded from 0, on first use
}

// ErrResumeLate refuses Resume on a controller that has folded or runs.
var ErrResumeLate = errors.New("controller: resume: only a controller that has not folded yet resumes")

// Resume restores the projections from the newest usable checkpoint and
// folds them to the store's head (see the comment above); it returns the
// checkpoint's position, 0 when none could be used (the projections are
// then folded from 0 by Run or the first query, as without Resume). Call
// it after New, before Run and any query; a controller given preloaded
// projections does not resume.
func (c *Controller) Resume(ctx context.Context) (uint64, error) {
	if c.preloaded || c.running.Load() || c.runner.Position() > 0 || c.resume != nil {
		return 0, ErrResumeLate
	}
	head, err := c.store.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("controller: resume: head: %w", err)
	}
	below := head + 1
	for {
		set, tokens, revoked := projections.New(), projections.NewTokens(), projections.NewRevocations()
		r := projections.NewRunner(c.store, c.reg, append(set.All(), tokens, revoked)...)
		pos, extra, err := c.keeper.Resume(ctx, r, set, below)
		if err != nil {
			return 0, fmt.Errorf("controller: %w", err)
		}
		if pos == 0 {
			return 0, nil
		}
		below = pos
		if err := restoreExtra(tokens, revoked, extra); err != nil {
			c.log.Warn(fmt.Sprintf("controller: checkpoints: checkpoint at position %d: %v: passed over", pos, err))
			continue
		}
		r.OnPanic(c.reportPanic)
		if err := r.CatchUpTo(ctx, head); err != nil {
			return 0, fmt.Errorf("controller: resume from %d: %w", pos, err)
		}
		if set.Incomplete() {
			c.log.Warn(fmt.Sprintf("controller: checkpoints: checkpoint at position %d: an event up to %d names a declaration older than it keeps: passed over", pos, head))
			continue
		}
		// Kept from here on: not while folding a checkpoint that might yet
		// be passed over.
		r.KeepWith(c.keeper, set, checkpointExtraOf(tokens, revoked))
		c.views, c.tokens, c.revoked, c.runner = set, tokens, revoked, r
		c.resume = &resumed{pos: pos}
		c.tlQuery = c.resumedTimeline
		return pos, nil
	}
}

// ResumedFrom is the position of the checkpoint Resume restored (0: none,
// the projections folded from 0).
func (c *Controller) ResumedFrom() uint64 {
	if c.resume == nil {
		return 0
	}
	return c.resume.pos
}

// wholeOf is a standby controller over c's store whose projections are
// folded from 0 (to where it last synced): a resumed controller's answers
// that need the whole history. Nil when c did not resume.
func (c *Controller) wholeOf() (*Controller, error) {
	if c.resume == nil {
		return nil, nil
	}
	c.resume.mu.Lock()
	defer c.resume.mu.Unlock()
	if c.resume.whole == nil {
		set := projections.New()
		r := projections.NewRunner(c.store, c.reg, set.All()...)
		r.OnPanic(c.reportPanic)
		w, err := New(Config{
			Store: c.store, Registry: c.reg, Clock: c.clock, Version: c.version, Logger: c.log,
			Standby: true, Views: set, Runner: r,
		})
		if err != nil {
			return nil, err
		}
		c.resume.whole = w
	}
	return c.resume.whole, nil
}

// resumedTimeline answers a resumed controller's timeline queries: the
// entries after the checkpoint from the live timeline, those up to it from
// the one folded from 0 to there, with the live churn marks.
func (c *Controller) resumedTimeline(f projections.Filter) ([]projections.Entry, error) {
	cut := c.resume.pos
	before := func(got int) ([]projections.Entry, error) {
		g := f
		if f.Limit > 0 {
			if got >= f.Limit {
				return nil, nil
			}
			g.Limit = f.Limit - got
		}
		if g.After >= cut {
			return nil, nil
		}
		if g.Before == 0 || g.Before > cut+1 {
			g.Before = cut + 1
		}
		w, err := c.wholeOf()
		if err != nil {
			return nil, err
		}
		if w.runner.Position() < cut {
			// Not under a request's context: the fold is kept for later ones.
			if err := w.runner.CatchUpTo(context.Background(), cut); err != nil {
				return nil, err
			}
		}
		// Marked as the live timeline marks them: a mark says how far its
		// episode has gone, which the fold to the checkpoint does not know.
		es, err := w.views.Timeline.Read(g)
		if err != nil {
			return nil, err
		}
		for i := range es {
			if es[i].Churn != "" {
				es[i].Summary = strings.TrimSuffix(es[i].Summary, "; "+es[i].Churn)
				es[i].Churn = ""
			}
		}
		return c.views.Timeline.Marked(es, f.Node), nil
	}
	// The live timeline holds the entries after the checkpoint (all of
	// them after a rebuild swapped a whole one in): those it answers.
	live := func(g projections.Filter) ([]projections.Entry, error) {
		g.After = max(g.After, cut)
		if g.Before != 0 && g.Before <= cut+1 {
			return nil, nil
		}
		return c.views.Timeline.Read(g)
	}
	if f.Forward {
		a, err := before(0)
		if err != nil {
			return nil, err
		}
		g := f
		if f.Limit > 0 {
			if len(a) >= f.Limit {
				return a, nil
			}
			g.Limit = f.Limit - len(a)
		}
		b, err := live(g)
		if err != nil {
			return nil, err
		}
		return append(a, b...), nil
	}
	b, err := live(f)
	if err != nil {
		return nil, err
	}
	a, err := before(len(b))
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}
