package commands

import (
	"context"
	"errors"
	"fmt"

	"meshplane/events"
)

// rosterCache is the roster a Handler last read or recorded: the
// revisions a composition names. It is refreshed from the store only when
// an append finds the roster's stream moved on (another writer), so a push
// of many nodes against one roster reads and appends it once.
type rosterCache struct {
	loaded bool
	cur    events.Roster
}

// RosterRevision returns the revision of the mesh's roster whose routes are
// routes (sorted, as a Composition gives them), appending roster.changed on
// events.RosterStream when the last recorded revision is another roster: a
// composition names a revision its store holds. Many pushes may ask at
// once; the first appends, the others find it recorded. A change of more
// than events.MaxRosterChange routes is recorded as several events in one
// append (Roster.Changes), and the revision returned is the last.
func (h *Handler) RosterRevision(ctx context.Context, routes []events.RosterRoute, meta events.Meta) (uint64, error) {
	return h.rosterRevisionOf(ctx, routes, "", meta)
}

// rosterRevisionOf is RosterRevision of routes whose digest
// (events.RosterDigest) is digest, when the caller has it ("": not known,
// computed). A push records one composition a node, each against the
// pass's one roster: knowing its digest, a roster already recorded is
// found without hashing its routes again, which at 10,000 nodes and 30,000
// routes was most of a push's CPU (each node's record hashing the whole
// roster: nodes × routes).
func (h *Handler) rosterRevisionOf(ctx context.Context, routes []events.RosterRoute, digest string, meta events.Meta) (uint64, error) {
	h.rosterMu.Lock()
	defer h.rosterMu.Unlock()
	if !h.roster.loaded {
		if err := h.readRoster(ctx); err != nil {
			return 0, err
		}
	}
	if digest != "" && h.roster.cur.Revision > 0 && digest == h.roster.cur.Digest {
		return h.roster.cur.Revision, nil
	}
	for attempt := 0; attempt <= h.retries; attempt++ {
		changes, ok := h.roster.cur.Changes(routes)
		if !ok {
			return h.roster.cur.Revision, nil
		}
		payloads := make([]events.Payload, len(changes))
		for i, c := range changes {
			payloads[i] = c
		}
		last := changes[len(changes)-1].Revision
		evs, err := h.events(events.RosterStream, payloads, meta)
		if err != nil {
			return 0, err
		}
		_, err = h.store.Append(ctx, events.RosterStream, events.Exactly(h.roster.cur.Revision), evs...)
		if errors.Is(err, events.ErrWrongExpectedVersion) {
			if err := h.readRoster(ctx); err != nil {
				return 0, err
			}
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("commands: record roster revision %d: %w", last, err)
		}
		next := h.roster.cur
		for _, c := range changes {
			if next, err = next.Apply(c); err != nil {
				return 0, fmt.Errorf("commands: record roster revision %d: %w", c.Revision, err) // a bug: Changes made it
			}
		}
		h.roster.cur = next
		return next.Revision, nil
	}
	return 0, fmt.Errorf("commands: record the roster: gave up after %d attempts, its stream kept changing: %w", h.retries+1, ErrConflict)
}

// readRoster folds what the roster's stream holds beyond the cached
// revision.
func (h *Handler) readRoster(ctx context.Context) error {
	evs, err := h.store.ReadStream(ctx, events.RosterStream, h.roster.cur.Revision, 0)
	if err != nil {
		return fmt.Errorf("commands: read the roster: %w", err)
	}
	cur := h.roster.cur
	for _, ev := range evs {
		c, err := events.DecodeAs[events.RosterChanged](h.reg, ev)
		if err != nil {
			return fmt.Errorf("commands: read the roster: revision %d: %w", ev.Version, err)
		}
		if cur, err = cur.Apply(c); err != nil {
			return fmt.Errorf("commands: read the roster: %w", err)
		}
	}
	h.roster = rosterCache{loaded: true, cur: cur}
	return nil
}
