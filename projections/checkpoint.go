package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"meshplane/events"
	"meshplane/internal/atomicfile"
)

// Checkpoints of the projections (issue 21 item 1, issue 23 item 3): a
// Keeper holds snapshots (SaveSnapshot's format) at several positions of
// one history, so that the state at any position P is restored from the
// nearest checkpoint at or before P and folded on to P (FoldTo), instead
// of from position 0. A Runner given a Keeper (Runner.Keep) saves one
// every KeepPolicy.Every events, or every KeepPolicy.Interval of event
// time, as it folds; the Keeper bounds them in number and bytes, thinning
// the old ones so that their spacing grows with their age (see thin).
//
// A checkpoint is a cache, never the truth: one that is damaged, of
// another format version or of another history is passed over with a
// note, removed, and the next older one used, down to a fold from 0. Its
// history is told by the id of the event at its position (the snapshot's
// check) and by the hash chain's value there (events.Event.Chain), which
// covers every event up to it: a store holding the same event at that
// position after other ones (an import, a copy that diverged) is another
// history too. The chain value rides in the snapshot's extra (ckExtra),
// beside the caller's (Runner.KeepWith: the controller's token table).

// CheckpointStore holds checkpoint bodies by position: a directory
// (DirCheckpoints) or memory (MemCheckpointStore).
type CheckpointStore interface {
	// List is every checkpoint held, by position ascending.
	List() ([]CheckpointInfo, error)
	// Read is the checkpoint at pos.
	Read(pos uint64) ([]byte, error)
	// Write keeps b as the checkpoint at pos.
	Write(pos uint64, b []byte) error
	// Remove drops the checkpoint at pos (none there is no error).
	Remove(pos uint64) error
}

// CheckpointInfo is one checkpoint held: its position and size.
type CheckpointInfo struct {
	Position uint64
	Bytes    int64
}

// KeepPolicy says when a runner keeps a checkpoint and how many are kept.
// A zero field is its default.
type KeepPolicy struct {
	// Every is how many events may pass between two checkpoints (default
	// 8,192: a fold of that many takes about 100 ms on a 2-core machine).
	Every uint64
	// Interval is how much event time may pass between two checkpoints,
	// when at least MinGap events did (default 6 h).
	Interval time.Duration
	// MinGap is the fewest events between two checkpoints (default 256).
	MinGap uint64
	// MaxCount bounds the checkpoints kept (default 128).
	MaxCount int
	// MaxBytes bounds their bytes (default 512 MiB).
	MaxBytes int64
	// BytesPerEvent spaces the checkpoints of a large state further apart:
	// after one of B bytes, the next waits for at least one event for each
	// BytesPerEvent bytes of B beyond its first MiB (default 32), whatever
	// Every and Interval say. A checkpoint costs about what its bytes cost to
	// encode and write, a fold about what its events cost, so the saves
	// stay a bounded share of the fold, and a resume folds at most that many
	// events more. Measured (BenchmarkQuietDays, 10,000 nodes, on 2 shared
	// cores): a 25.8 MB checkpoint encodes in 572 ms (22 ns a byte), a quiet
	// pass folds in 8.6 µs, so at 32 the saves are about a tenth of the
	// fold, one every 770,000 events (77 ticks of 10,000 nodes), and a
	// resume folds at most those, some 7 s. A mesh of 10,000 nodes reports
	// 10,000 events a tick: with Every alone, its state would be encoded
	// under the fold lock every tick.
	BytesPerEvent int64
}

// sizeFloor is the size of a checkpoint below which BytesPerEvent spaces
// nothing.
const sizeFloor = 1 << 20

func (p KeepPolicy) withDefaults() KeepPolicy {
	if p.Every == 0 {
		p.Every = 8192
	}
	if p.Interval == 0 {
		p.Interval = 6 * time.Hour
	}
	if p.MinGap == 0 {
		p.MinGap = 256
	}
	if p.MaxCount == 0 {
		p.MaxCount = 128
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = 512 << 20
	}
	if p.BytesPerEvent <= 0 {
		p.BytesPerEvent = 32
	}
	return p
}

// sizeGap is the fewest events after a checkpoint of n bytes before the
// next (KeepPolicy.BytesPerEvent).
func (p KeepPolicy) sizeGap(n int64) uint64 {
	if n <= sizeFloor {
		return 0
	}
	return uint64((n - sizeFloor) / p.BytesPerEvent)
}

// Keeper keeps checkpoints of one history in a CheckpointStore. Safe for
// concurrent use. Trouble writing or reading one is a note (OnNote), never
// an error of the fold.
type Keeper struct {
	store  CheckpointStore
	policy KeepPolicy
	onNote func(string)

	mu        sync.Mutex
	lastPos   uint64
	lastTime  time.Time
	lastBytes int64 // the size of the last checkpoint saved (or the newest held)
}

// NewKeeper returns a Keeper over s with policy p; onNote (nil: none)
// hears what it passed over.
func NewKeeper(s CheckpointStore, p KeepPolicy, onNote func(string)) *Keeper {
	return &Keeper{store: s, policy: p.withDefaults(), onNote: onNote}
}

func (k *Keeper) note(format string, args ...any) {
	if k.onNote != nil {
		k.onNote(fmt.Sprintf(format, args...))
	}
}

// Positions is the positions of the checkpoints held, ascending.
func (k *Keeper) Positions() []uint64 {
	l, err := k.store.List()
	if err != nil {
		k.note("checkpoints not listed: %v", err)
		return nil
	}
	out := make([]uint64, len(l))
	for i, c := range l {
		out[i] = c.Position
	}
	return out
}

// due reports whether a checkpoint is due at pos, an event at t, and
// notes it as the last one if so.
func (k *Keeper) due(pos uint64, t time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lastPos == 0 && k.lastTime.IsZero() {
		// The first fold of this process: resume from what is held.
		if l, err := k.store.List(); err == nil && len(l) > 0 {
			k.lastPos, k.lastBytes = l[len(l)-1].Position, l[len(l)-1].Bytes
		}
		k.lastTime = t
	}
	if pos <= k.lastPos {
		return false
	}
	gap := pos - k.lastPos
	if gap < k.policy.sizeGap(k.lastBytes) {
		return false
	}
	if gap < k.policy.Every && (gap < k.policy.MinGap || t.Sub(k.lastTime) < k.policy.Interval) {
		return false
	}
	k.lastPos, k.lastTime = pos, t
	return true
}

// save keeps body as the checkpoint at pos, then thins the checkpoints
// to the policy's bounds.
func (k *Keeper) save(pos uint64, body []byte) {
	framed := frameSnapshot(body)
	if err := k.store.Write(pos, framed); err != nil {
		k.note("checkpoint at position %d not kept: %v", pos, err)
		return
	}
	k.mu.Lock()
	k.lastBytes = int64(len(framed))
	k.mu.Unlock()
	l, err := k.store.List()
	if err != nil {
		k.note("checkpoints not thinned: %v", err)
		return
	}
	for _, drop := range thin(l, k.policy.MaxCount, k.policy.MaxBytes) {
		if err := k.store.Remove(drop); err != nil {
			k.note("checkpoint at position %d not removed: %v", drop, err)
		}
	}
}

// thin is the positions to drop from l (ascending) so that at most max
// checkpoints of at most maxBytes in all are left. The newest is never
// dropped; of the others, the one dropped is each time the one whose
// removal leaves the smallest gap for its age: (next − previous) / (newest
// − its position), 0 being the previous of the first. So the spacing grows
// about geometrically with age: recent moments fold few events, old ones
// more, and the count stays bounded however long the history.
func thin(l []CheckpointInfo, max int, maxBytes int64) []uint64 {
	l = slices.Clone(l)
	var total int64
	for _, c := range l {
		total += c.Bytes
	}
	var drop []uint64
	for len(l) > 1 && (len(l) > max || total > maxBytes) {
		newest := l[len(l)-1].Position
		best, bestScore := -1, 0.0
		for i := 0; i < len(l)-1; i++ {
			prev := uint64(0)
			if i > 0 {
				prev = l[i-1].Position
			}
			score := float64(l[i+1].Position-prev) / float64(newest-l[i].Position)
			if best < 0 || score < bestScore {
				best, bestScore = i, score
			}
		}
		drop = append(drop, l[best].Position)
		total -= l[best].Bytes
		l = slices.Delete(l, best, best+1)
	}
	return drop
}

// ckExtra is a checkpoint's extra: the chain value at its position (zero
// for a store whose chain starts after it) and the caller's (KeepWith).
type ckExtra struct {
	Chain  events.Hash     `json:"chain"`
	Caller json.RawMessage `json:"caller,omitempty"`
}

// load restores the checkpoint at pos into set and r (fresh, fed set's
// projections) and returns the caller's extra it was kept with. One that
// cannot be used is removed and its error returned.
func (k *Keeper) load(ctx context.Context, pos uint64, r *Runner, set *Set) (json.RawMessage, error) {
	name := fmt.Sprintf("checkpoint at position %d", pos)
	b, err := k.store.Read(pos)
	var x ckExtra
	if err == nil {
		var st *snapState
		if st, err = decodeSnapshot(ctx, name, b, r); err == nil {
			err = checkChain(ctx, name, st, r, &x)
		}
		if err == nil {
			err = st.restore(r, set, name)
		}
	}
	if err != nil && (errors.Is(err, ErrSnapshot) || errors.Is(err, os.ErrNotExist)) {
		if rerr := k.store.Remove(pos); rerr != nil {
			k.note("%v: passed over (removing it failed: %v)", err, rerr)
		} else {
			k.note("%v: passed over and removed", err)
		}
	}
	return x.Caller, err
}

// checkChain decodes st's extra into x and checks its chain value against
// the store's at st's position: the whole history up to it is the one
// folded. A checkpoint of an older build has no extra (the event id alone
// is checked, by decodeSnapshot).
func checkChain(ctx context.Context, name string, st *snapState, r *Runner, x *ckExtra) error {
	if len(st.Extra) == 0 {
		return nil
	}
	if err := json.Unmarshal(st.Extra, x); err != nil {
		return damagedSnapshot(name, "extra: %v", err)
	}
	if st.Position == 0 {
		return nil
	}
	chain, err := r.chainAt(ctx, st.Position)
	if err != nil {
		return err
	}
	if chain != x.Chain {
		return badSnapshot(name, "the store's hash chain at position %d is %s, the checkpoint's %s: another history (another store, or one rewritten before it)", st.Position, chain, x.Chain)
	}
	return nil
}

// chainAt is the chain value of the event at pos in r's store.
func (r *Runner) chainAt(ctx context.Context, pos uint64) (events.Hash, error) {
	evs, err := r.store.ReadAll(ctx, pos-1, 1)
	if err != nil {
		return events.Hash{}, fmt.Errorf("read position %d: %w", pos, err)
	}
	if len(evs) == 0 || evs[0].Position != pos {
		return events.Hash{}, fmt.Errorf("the store has no event at position %d: %w", pos, ErrSnapshot)
	}
	return evs[0].Chain, nil
}

// Keep makes r keep a checkpoint of set (whose projections r feeds; others
// it feeds are left out of them) in k whenever one is due, as it folds:
// at the end of each page of a catch-up, after each event of Run. Call it
// before r folds.
func (r *Runner) Keep(k *Keeper, set *Set) { r.KeepWith(k, set, nil) }

// KeepWith is Keep, each checkpoint also carrying extra's JSON (nil: none),
// called under the fold lock at the checkpoint's position: the state of
// the projections r feeds beside set's (the controller's token table),
// which Keeper.Resume hands back.
func (r *Runner) KeepWith(k *Keeper, set *Set, extra func() (json.RawMessage, error)) {
	r.fold.Lock()
	defer r.fold.Unlock()
	r.keeper, r.keepSet, r.keepExtra = k, set, extra
}

// keepAt saves a checkpoint at pos, its event at t, if one is due. Called
// with the fold lock held, after advance.
func (r *Runner) keepAt(ctx context.Context, pos uint64, t time.Time) {
	if r.keeper == nil || !r.keeper.due(pos, t) {
		return
	}
	x := ckExtra{}
	var err error
	if x.Chain, err = r.chainAt(ctx, pos); err == nil && r.keepExtra != nil {
		x.Caller, err = r.keepExtra()
	}
	var body []byte
	if err == nil {
		var extra []byte
		if extra, err = json.Marshal(x); err == nil {
			body, err = r.snapshotHeld(ctx, r.keepSet, extra, true)
		}
	}
	if err != nil {
		r.keeper.note("checkpoint at position %d not kept: %v", pos, err)
		return
	}
	r.keeper.save(pos, body)
}

// Resume restores set and r, both fresh (r feeding set's projections and
// perhaps others, which the caller restores from the extra returned),
// from the newest checkpoint of k below position below that can be used,
// and returns its position and the extra it was kept with (KeepWith); r's
// next fold goes on from there. One that cannot be used is passed over
// with a note (and removed), as FoldTo does. None usable: position 0, set
// and r as they were. The caller checks set.Incomplete after folding on,
// and resumes again below the position if so. Call it before r folds.
func (k *Keeper) Resume(ctx context.Context, r *Runner, set *Set, below uint64) (uint64, json.RawMessage, error) {
	from := k.Positions()
	for i := len(from) - 1; i >= 0; i-- {
		if from[i] >= below {
			continue
		}
		// The checkpoint holds set's projections only: restored through a
		// runner of those, whose counters are then r's.
		tmp := NewRunner(r.store, r.reg, set.All()...)
		extra, err := k.load(ctx, from[i], tmp, set)
		if errors.Is(err, ErrSnapshot) || errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, nil, fmt.Errorf("projections: resume from %d: %w", from[i], err)
		}
		r.fold.Lock()
		tmp.mu.RLock()
		r.mu.Lock()
		r.unknown, r.failures, r.failed = tmp.unknown, tmp.failures, tmp.failed
		r.mu.Unlock()
		tmp.mu.RUnlock()
		r.loaded, r.restored = true, true
		r.setPos(from[i])
		r.fold.Unlock()
		return from[i], extra, nil
	}
	return 0, nil, nil
}

// ErrNoMoment means a moment asked for (FoldTo, PositionAt) is not in the
// history: before its first event, or past its head.
var ErrNoMoment = errors.New("no such moment in the history")

// FoldTo is the projections as they stood after the event at pos: from
// the nearest checkpoint of k at or before pos that can be used (nil k:
// none), folded on to pos. A checkpoint that cannot be used, or from which
// the fold cannot be whole (Set.Incomplete), is passed over for the next
// older one, down to a fold from 0. pos 0 or past the head is ErrNoMoment.
// The runner returned stands at pos and is not to fold further. The set's
// timeline holds the entries after the checkpoint only; roster history
// before it is ErrTrimmed (fold from 0 with a nil k for those).
func FoldTo(ctx context.Context, store events.Store, reg *events.Registry, pos uint64, k *Keeper) (*Set, *Runner, error) {
	head, err := store.Head(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("projections: fold to %d: head: %w", pos, err)
	}
	if pos == 0 || pos > head {
		return nil, nil, fmt.Errorf("projections: position %d: the history holds 1 to %d: %w", pos, head, ErrNoMoment)
	}
	var from []uint64
	if k != nil {
		from = k.Positions()
	}
	for i := len(from) - 1; i >= 0; i-- {
		if from[i] > pos {
			continue
		}
		set := New()
		r := NewRunner(store, reg, set.All()...)
		if _, err := k.load(ctx, from[i], r, set); err != nil {
			if errors.Is(err, ErrSnapshot) || errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, nil, err
		}
		if err := r.CatchUpTo(ctx, pos); err != nil {
			return nil, nil, err
		}
		if set.Incomplete() {
			k.note("checkpoint at position %d: an event up to %d names a declaration older than it keeps: passed over", from[i], pos)
			continue
		}
		return set, r, nil
	}
	set := New()
	r := NewRunner(store, reg, set.All()...)
	if err := r.CatchUpTo(ctx, pos); err != nil {
		return nil, nil, err
	}
	return set, r, nil
}

// ViewsAt is FoldTo's projections: what a caller that needs no runner
// (mesh diff) reads.
func ViewsAt(ctx context.Context, store events.Store, reg *events.Registry, pos uint64, k *Keeper) (*Set, error) {
	set, _, err := FoldTo(ctx, store, reg, pos, k)
	return set, err
}

// PositionAt is the position of the last event at or before t, found by
// binary search on the events' times. Event times are the appender's
// wall clock and may step back; the search then finds a position P whose
// event is at or before t and whose next is after it (or is the head):
// one of the moments the clock passed t, not necessarily the last. The
// answer names its position and time, so the caller shows which. A t
// before the first event is ErrNoMoment.
func PositionAt(ctx context.Context, store events.Store, t time.Time) (uint64, time.Time, error) {
	head, err := store.Head(ctx)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("projections: position at %s: head: %w", t.Format(time.RFC3339), err)
	}
	timeOf := func(pos uint64) (time.Time, error) {
		evs, err := store.ReadAll(ctx, pos-1, 1)
		if err != nil {
			return time.Time{}, fmt.Errorf("projections: position at %s: read %d: %w", t.Format(time.RFC3339), pos, err)
		}
		if len(evs) == 0 {
			return time.Time{}, fmt.Errorf("projections: position at %s: no event at %d", t.Format(time.RFC3339), pos)
		}
		return evs[0].At, nil
	}
	lo, hi := uint64(0), head // invariant: event lo is at or before t (0: none), hi+1 after (or past the head)
	var at time.Time
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		mt, err := timeOf(mid)
		if err != nil {
			return 0, time.Time{}, err
		}
		if mt.After(t) {
			hi = mid - 1
		} else {
			lo, at = mid, mt
		}
	}
	if lo == 0 {
		return 0, time.Time{}, fmt.Errorf("projections: %s is before the first event: %w", t.Format(time.RFC3339), ErrNoMoment)
	}
	return lo, at, nil
}

// TimeOf is the time of the event at pos.
func TimeOf(ctx context.Context, store events.Store, pos uint64) (time.Time, error) {
	evs, err := store.ReadAll(ctx, pos-1, 1)
	if err != nil {
		return time.Time{}, fmt.Errorf("projections: time of %d: %w", pos, err)
	}
	if len(evs) == 0 || evs[0].Position != pos {
		return time.Time{}, fmt.Errorf("projections: time of %d: %w", pos, ErrNoMoment)
	}
	return evs[0].At, nil
}

// MemCheckpointStore is a CheckpointStore in memory (a controller's).
type MemCheckpointStore struct {
	mu sync.Mutex
	m  map[uint64][]byte
}

// NewMemCheckpointStore returns an empty MemCheckpointStore.
func NewMemCheckpointStore() *MemCheckpointStore {
	return &MemCheckpointStore{m: map[uint64][]byte{}}
}

// List is every checkpoint held.
func (s *MemCheckpointStore) List() ([]CheckpointInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CheckpointInfo, 0, len(s.m))
	for p, b := range s.m {
		out = append(out, CheckpointInfo{Position: p, Bytes: int64(len(b))})
	}
	slices.SortFunc(out, func(a, b CheckpointInfo) int { return cmpU64(a.Position, b.Position) })
	return out, nil
}

// Read is the checkpoint at pos (os.ErrNotExist: none).
func (s *MemCheckpointStore) Read(pos uint64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[pos]
	if !ok {
		return nil, fmt.Errorf("checkpoint %d: %w", pos, os.ErrNotExist)
	}
	return b, nil
}

// Write keeps b at pos.
func (s *MemCheckpointStore) Write(pos uint64, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[pos] = b
	return nil
}

// Remove drops pos.
func (s *MemCheckpointStore) Remove(pos uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, pos)
	return nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CheckpointDir is the directory of a data directory's checkpoints.
const CheckpointDir = "checkpoints"

// DirCheckpoints is a CheckpointStore in a directory: one file a
// checkpoint, named by its position (00000000000000001234.snap), written
// atomically (a temporary file renamed). Files of other names are let be.
type DirCheckpoints string

const checkpointExt = ".snap"

func (d DirCheckpoints) path(pos uint64) string {
	return filepath.Join(string(d), fmt.Sprintf("%020d%s", pos, checkpointExt))
}

// List is every checkpoint file in the directory (none: no directory).
func (d DirCheckpoints) List() ([]CheckpointInfo, error) {
	des, err := os.ReadDir(string(d))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoints %s: %w", d, err)
	}
	var out []CheckpointInfo
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), checkpointExt)
		if !ok || !de.Type().IsRegular() {
			continue
		}
		pos, err := strconv.ParseUint(name, 10, 64)
		if err != nil || pos == 0 {
			continue
		}
		var size int64
		if fi, err := de.Info(); err == nil {
			size = fi.Size()
		}
		out = append(out, CheckpointInfo{Position: pos, Bytes: size})
	}
	slices.SortFunc(out, func(a, b CheckpointInfo) int { return cmpU64(a.Position, b.Position) })
	return out, nil
}

// Read is the file at pos.
func (d DirCheckpoints) Read(pos uint64) ([]byte, error) { return os.ReadFile(d.path(pos)) }

// Write writes b as the file at pos, making the directory if need be.
func (d DirCheckpoints) Write(pos uint64, b []byte) error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(d.path(pos), b, 0o600)
}

// Remove removes the file at pos.
func (d DirCheckpoints) Remove(pos uint64) error {
	err := os.Remove(d.path(pos))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
