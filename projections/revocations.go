package projections

import (
	"maps"
	"sync"
	"time"

	"meshplane/events"
)

// Revocations is the bus's revocation list as history gives it: every
// public key of a node.credentials-revoked, with the time of its first
// revocation. Like Tokens it is not in a Set: the controller's runner
// feeds it beside the Set's projections, and the controller's checkpoints
// carry it, so a restart gives the bus its list without reading the whole
// store.
type Revocations struct {
	mu   sync.RWMutex
	keys map[string]time.Time
}

// NewRevocations returns an empty revocation list.
func NewRevocations() *Revocations { return &Revocations{keys: map[string]time.Time{}} }

// Name is "revocations".
func (r *Revocations) Name() string { return "revocations" }

// Reset empties the list.
func (r *Revocations) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = map[string]time.Time{}
}

// Fold folds node.credentials-revoked: each key keeps the earliest time
// it was revoked at.
func (r *Revocations) Fold(ev events.Event, p events.Payload) error {
	rv, ok := p.(events.NodeCredentialsRevoked)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range rv.PublicKeys {
		r.add(k, ev.At)
	}
	return nil
}

func (r *Revocations) add(k string, at time.Time) {
	if was, ok := r.keys[k]; !ok || at.Before(was) {
		r.keys[k] = at
	}
}

// Restore adds list (a checkpoint's) to the list.
func (r *Revocations) Restore(list map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, at := range list {
		r.add(k, at)
	}
}

// List is a copy of the list: never nil.
func (r *Revocations) List() map[string]time.Time {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.keys)
}

// MarshalJSON is the list, by key.
func (r *Revocations) MarshalJSON() ([]byte, error) { return marshal(r.List()) }

var _ Projection = (*Revocations)(nil)
