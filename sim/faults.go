package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"meshplane/events"
)

// ErrInjected marks every failure the simulator injects.
var ErrInjected = errors.New("injected fault")

// FaultyStore wraps a store so reads of chosen node streams fail, as a store
// in crash recovery refuses connections (seed 000). It fails only what it is
// told to: appends and other reads pass through.
type FaultyStore struct {
	events.Store

	mu    sync.Mutex
	reads map[string]readFault // stream → fault
	pass  int                  // passes run so far, for "every other pass"
}

type readFault struct {
	everyOther bool
	from       int // the pass count when it was set
}

// NewFaultyStore wraps s with no faults set.
func NewFaultyStore(s events.Store) *FaultyStore {
	return &FaultyStore{Store: s, reads: map[string]readFault{}}
}

// FailReads makes reads of node's stream fail: always, or on every other
// pass starting with the next one.
func (f *FaultyStore) FailReads(node string, everyOther bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads[events.NodeStream(node)] = readFault{everyOther: everyOther, from: f.pass}
}

// Recover clears every read fault.
func (f *FaultyStore) Recover() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = map[string]readFault{}
}

// BeginPass tells the store a pass begins (for faults on every other pass);
// Mesh.Push calls it at every push. A Run sets its faults pass by pass and
// pushes with Mesh.PushChanged, which does not.
func (f *FaultyStore) BeginPass() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pass++
}

func (f *FaultyStore) failing(stream string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	rf, ok := f.reads[stream]
	if !ok {
		return false
	}
	return !rf.everyOther || (f.pass-rf.from)%2 == 1
}

// ReadStream fails for a stream under a read fault.
func (f *FaultyStore) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	if f.failing(stream) {
		return nil, fmt.Errorf("read %s: FATAL: the database system is not yet accepting connections: %w", stream, ErrInjected)
	}
	return f.Store.ReadStream(ctx, stream, after, limit)
}

// ReadByID reads an event by its id from the wrapped store
// (events.IDReader), failing as ReadStream does when the event is on a
// stream under a read fault: readers that look an event up by id (a
// declaration stored by reference, a quiet report's held_since) meet the
// store the mesh's other reads meet.
func (f *FaultyStore) ReadByID(ctx context.Context, id uuid.UUID) (events.Event, error) {
	r, ok := f.Store.(events.IDReader)
	if !ok {
		return events.Event{}, fmt.Errorf("sim: read event %s: the store reads no event by id", id)
	}
	ev, err := r.ReadByID(ctx, id)
	if err == nil && f.failing(ev.Stream) {
		return events.Event{}, fmt.Errorf("read %s: FATAL: the database system is not yet accepting connections: %w", ev.Stream, ErrInjected)
	}
	return ev, err
}
