// Why: what every apply on a node did to one resource.

package projections

import (
	"fmt"
	"slices"

	"meshplane/events"
)

// Touch is one thing an apply did to one resource.
type Touch struct {
	Entry  Entry    `json:"entry"`
	Action string   `json:"action"` // created, updated, replaced, removed, held, failed
	Fields []string `json:"fields,omitempty"`
	Reason string   `json:"reason,omitempty"` // why it was held, or the failure
}

// Touch actions.
const (
	ActionCreated  = "created"
	ActionUpdated  = "updated"
	ActionReplaced = "replaced"
	ActionRemoved  = "removed"
	ActionHeld     = "held"
	ActionFailed   = "failed"
)

// Why returns what every apply on node did to resource, oldest first, each
// with the declaration (and digest) and correlation it came from: follow
// the correlation to the compose and push of that declaration (every apply
// of a declaration shares its compose's correlation, since a push that
// changes nothing re-sends the stored declaration). api.CollapseTouches folds
// runs of the same touch into one.
func (t *Timeline) Why(node, resource string) ([]Touch, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if _, ok := t.byNode[node]; !ok {
		return nil, fmt.Errorf("projections: why %s on %q: %w", resource, node, ErrUnknownNode)
	}
	var out []Touch
	marks := t.churnMarks(node)
	// Filter.Resource selects the entries that touched resource: those
	// of runs only when their head did.
	err := t.walk(Filter{Node: node, Resource: resource}, func(e *entry) bool {
		ts := touches(e, resource)
		if len(ts) > 0 {
			shown := t.marked(t.show(e), marks)
			for i := len(ts) - 1; i >= 0; i-- {
				ts[i].Entry = shown
				out = append(out, ts[i])
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("projections: why %s on %q: %w", resource, node, err)
	}
	slices.Reverse(out)
	return out, nil
}

// touches lists what an apply entry did to the resource named name.
func touches(e *entry, name string) []Touch {
	a, ok := applyOf(e)
	if !ok {
		return nil
	}
	var out []Touch
	for _, s := range a.Created {
		if s == name {
			out = append(out, Touch{Action: ActionCreated})
		}
	}
	for _, r := range a.Updated {
		if r.Name == name {
			out = append(out, Touch{Action: ActionUpdated, Fields: r.Fields})
		}
	}
	for _, r := range a.Replaced {
		if r.Name == name {
			out = append(out, Touch{Action: ActionReplaced, Fields: r.Fields})
		}
	}
	for _, s := range a.Removed {
		if s == name {
			out = append(out, Touch{Action: ActionRemoved})
		}
	}
	for _, h := range a.Held {
		if h.Name == name {
			out = append(out, Touch{Action: ActionHeld, Reason: h.Reason})
		}
	}
	for _, f := range a.Failed {
		if f.Name == name {
			out = append(out, Touch{Action: ActionFailed, Reason: f.Error})
		}
	}
	return out
}

// Declared reports whether any declaration composed for node declared a
// resource named resource (why's test of a name it knows, beside the
// applies that touched it).
func (t *Timeline) Declared(node, resource string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	found := false
	// No run holds a composed entry (runs are of applies): no read.
	_ = t.walk(Filter{Node: node, Type: events.TypeDeclarationComposed}, func(e *entry) bool {
		if e.decl == nil {
			return true
		}
		for _, r := range e.decl.resources {
			if r.Name == resource {
				found = true
				return false
			}
		}
		return true
	})
	return found
}
