package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"meshplane/declaration"
)

// Watcher is a Runtime that can tell when something it runs changed behind
// the agent's back: a container died, was stopped, killed for memory or
// removed by someone else. A running agent (Run) then makes a pass at once,
// rather than at its next drift check: what it finds is reported as any
// pass's outcome (a stopped container started again is updated, a removed
// one created), and counts in churn as such. The Docker runtime follows the
// engine's event stream; simruntime does not implement it.
type Watcher interface {
	// Changes yields one line per change it saw ("container web died, exit
	// 137"), never blocking on a slow reader: changes that come while one
	// waits to be taken are folded into it (a pass sees them all). What the
	// runtime itself did (a container it replaced or removed) is not a
	// change. The channel is closed when ctx ends; a watch that breaks
	// (the engine restarted) is started again by the runtime, and says so
	// as a change, since what happened meanwhile is unknown.
	Changes(ctx context.Context) (<-chan string, error)
}

// RosterSource is where a running agent's rosters come from: on the bus,
// the mesh's shared roster value, which every agent watches beside its own
// key. A declaration that names the roster revision it was composed against
// travels without the roster (declaration.Declaration.Wire); the agent
// fills it from the roster it holds before its Diff.
type RosterSource interface {
	// Rosters yields the mesh's roster at once, if one was put, then each
	// new one, keeping only the newest while the agent is busy. The channel
	// is closed when ctx ends or the source ends for good.
	Rosters(ctx context.Context) (<-chan declaration.Roster, error)
}

// DefaultRosterWait is how long a running agent waits for the roster
// revision a declaration names before it reports the declaration as not
// applied (RunConfig.RosterWait).
const DefaultRosterWait = 30 * time.Second

// heldRosters is how many roster revisions an agent keeps: the newest, and
// a few before it for a declaration composed just before a change.
const heldRosters = 4

// rosters are the rosters a running agent holds, newest last. Safe for
// concurrent use: the run loop adds, dry runs fill.
type rosters struct {
	mu   sync.Mutex
	held []declaration.Roster
}

// add holds r, dropping the oldest beyond heldRosters. A revision held
// already is replaced (another store's roster under the same number).
func (h *rosters) add(r declaration.Roster) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = slices.DeleteFunc(h.held, func(x declaration.Roster) bool { return x.Revision == r.Revision })
	h.held = append(h.held, r)
	if len(h.held) > heldRosters {
		h.held = slices.Delete(h.held, 0, len(h.held)-heldRosters)
	}
}

// fill is d filled from the roster it names (declaration.Fill), or the
// error of the newest held, wrapping declaration.ErrRosterNotHeld.
func (h *rosters) fill(d declaration.Declaration) (declaration.Declaration, error) {
	if !d.NamesRoster() {
		return d, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.held {
		if r.Revision == d.RosterRevision && r.Digest == d.RosterDigest {
			return d.Fill(r)
		}
	}
	var newest declaration.Roster
	if len(h.held) > 0 {
		newest = h.held[len(h.held)-1]
	}
	return d.Fill(newest)
}
