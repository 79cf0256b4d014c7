package projections

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"slices"
	"unsafe"

	"meshplane/events"
	"meshplane/internal/atomicfile"
)

// ErrSnapshot means a snapshot file could not be used: it is damaged, of
// another format version, or of another history than the store's. A
// snapshot is a cache, never the truth: the caller ignores it (saying so)
// and folds from position 0.
var ErrSnapshot = errors.New("projections: snapshot unusable")

// Snapshot file format (SaveSnapshot writes it, LoadSnapshot reads it):
//
//	magic    8 bytes  "MESHSNAP"
//	version  4 bytes  big-endian, snapshotVersion
//	length   8 bytes  big-endian, the length of body
//	body     length bytes, encoding/json of snapState (JSON, not gob: it
//	         keeps an empty list apart from an absent one, which the
//	         projections' own JSON shows)
//	crc      4 bytes  big-endian, CRC-32C (Castagnoli) of body
//
// snapState holds the position every projection in it has folded, the id
// of the event at that position (so a snapshot of another store, or of a
// store that was replaced, is refused), the runner's counters, and the
// state of each projection in the snapshot by name. Slices the projections
// share in memory (a roster or resource list repeated by quiet composes)
// are written once, in tables, and shared again on load. The timeline's
// entries are not in it (see TimelineDB); its fold state is, so a
// TimelineDB can keep folding from the snapshot's position.
//
// Each projection's part of snapState (its *Snap type, save and load)
// sits beside the projection: status.go, churn.go, roster.go, holds.go,
// reports.go, timeline.go. This file keeps the format, the tables they share
// and the checks across them (checkTables).
//
// The version changes whenever snapState or any state in it changes shape
// or meaning; a file of another version is ErrSnapshot. Extra, which the
// caller gives (SaveSnapshotWith), is opaque here: an older file has none.
//
// A file that is not whole (cut short, bits flipped: the magic, the length
// or the checksum disagree), or whose body does not decode to a consistent
// state, is damaged: its error wraps events.ErrDamaged too. One of another
// version or another history is not: it is only stale.
const (
	snapshotMagic   = "MESHSNAP"
	snapshotVersion = 8 // 8: status keeps each node's containers' last state events (the workload axis); 7: status keeps whether a node's last apply's holds are unknown (its held_since names no held list); 6: the timeline keeps each declaration's position and where held lists were carried; 5: status keeps each declaration's compose time and whether it was pushed, and each node's last refused report; 4: the timeline keeps each node's pass history (rule 7's one function weighs its applies); 3: the churn detector's
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type snapState struct {
	Position uint64
	EventID  [16]byte // of the event at Position; zero at 0
	Unknown  map[string]int
	Failures []Failure
	Failed   int

	Strings   [][]string             // shared string slices (rosters)
	Resources [][]events.ResourceRef // shared resource lists

	Churn    *churnSnap
	Roster   *rosterSnap
	Status   *statusSnap
	Holds    *holdsSnap
	Timeline *timelineSnap

	Extra json.RawMessage `json:",omitempty"` // the caller's (SaveSnapshotWith)
}

// tables dedupes the slices a snapshot writes: by identity while saving
// (slices shared in memory are written once), by index while loading.
type tables struct {
	st   *snapState
	strs map[*string]int // nil: nothing is shared (keptState)
	res  map[*events.ResourceRef]int
}

func (t *tables) strings(s []string) int {
	if s == nil {
		return -1
	}
	if len(s) == 0 {
		s = s[:0:0]
	}
	p := unsafe.SliceData(s)
	if i, ok := t.strs[p]; ok && len(t.st.Strings[i]) == len(s) {
		return i
	}
	if t.strs != nil {
		t.strs[p] = len(t.st.Strings)
	}
	t.st.Strings = append(t.st.Strings, s)
	return len(t.st.Strings) - 1
}

func (t *tables) resources(s []events.ResourceRef) int {
	if s == nil {
		return -1
	}
	p := unsafe.SliceData(s)
	if i, ok := t.res[p]; ok && len(t.st.Resources[i]) == len(s) {
		return i
	}
	if t.res != nil {
		t.res[p] = len(t.st.Resources)
	}
	t.st.Resources = append(t.st.Resources, s)
	return len(t.st.Resources) - 1
}

func (st *snapState) strs(i int) []string {
	if i < 0 {
		return nil
	}
	if s := st.Strings[i]; s != nil {
		return s
	}
	return []string{}
}

func (st *snapState) res(i int) []events.ResourceRef {
	if i < 0 {
		return nil
	}
	if s := st.Resources[i]; s != nil {
		return s
	}
	return []events.ResourceRef{}
}

// snapKeep is how many of a node's latest declarations a snapshot keeps in
// each index of declarations (status, churn, timeline) and in the roster's
// history, so that a snapshot's size does not grow with the history:
// pushes and applies name one of the last few (declLookBack). A later
// event naming an older one marks the projection incomplete
// (Set.Incomplete), and the caller rebuilds from 0; the roster's History,
// and Declaration or Diff of an older one, are ErrTrimmed.
var snapKeep = 16

// declSnap is a declIndex's content: the latest declarations, in composed
// order; Trimmed when older ones were left out.
type declSnap[V any] struct {
	IDs     []string
	Vals    []V
	Trimmed bool `json:",omitempty"`
}

// saveDecls keeps the last snapKeep declarations of x, and those keep
// names too (a status's applied declaration, read when queried).
func saveDecls[V, W any](x *declIndex[V], conv func(V) W, keep ...string) declSnap[W] {
	from := max(0, len(x.ids)-snapKeep)
	out := declSnap[W]{Trimmed: x.trimmed || from > 0}
	for i := range x.ids {
		if i < from && !slices.Contains(keep, x.ids[i]) {
			continue
		}
		out.IDs = append(out.IDs, x.ids[i])
		out.Vals = append(out.Vals, conv(x.vals[i]))
	}
	return out
}

func loadDecls[V, W any](s declSnap[W], conv func(W) V) declIndex[V] {
	x := declIndex[V]{ids: s.IDs, vals: make([]V, len(s.Vals)), trimmed: s.Trimmed}
	for i, w := range s.Vals {
		x.vals[i] = conv(w)
	}
	return x
}

// loadPassHistory is the history of a node whose container names and last
// failures a snapshot lists.
func loadPassHistory(containers, failed []string) events.PassHistory {
	var h events.PassHistory
	set := func(names []string) map[string]bool {
		if len(names) == 0 {
			return nil
		}
		m := make(map[string]bool, len(names))
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	h.Containers, h.FailedLast = set(containers), set(failed)
	return h
}

// passHistorySnap is an events.PassHistory: its names, sorted.
type passHistorySnap struct {
	Containers []string
	FailedLast []string
}

func savePassHistory(h *events.PassHistory) passHistorySnap {
	return passHistorySnap{Containers: slices.Sorted(maps.Keys(h.Containers)), FailedLast: slices.Sorted(maps.Keys(h.FailedLast))}
}

// SaveSnapshot writes the state of set's projections that r feeds, with
// r's position and counters, to path, atomically: a temporary file in the
// same directory, synced, then renamed over path. The timeline's entries
// are left out (only its fold state is written; see TimelineDB). It folds
// nothing meanwhile: r's fold lock is held while the state is copied.
func SaveSnapshot(ctx context.Context, path string, r *Runner, set *Set) error {
	return SaveSnapshotWith(ctx, path, r, set, nil)
}

// SaveSnapshotWith is SaveSnapshot, keeping extra (JSON, or nil) in the
// file beside the projections, for LoadSnapshotWith to return: what the
// caller wants to know of the snapshot's surroundings when it was saved
// (snapstore: the timeline.db it agrees with).
func SaveSnapshotWith(ctx context.Context, path string, r *Runner, set *Set, extra json.RawMessage) error {
	if extra != nil && !json.Valid(extra) {
		return fmt.Errorf("projections: save snapshot %s: extra is not JSON", path)
	}
	body, err := r.snapshot(ctx, set, extra)
	if err != nil {
		return fmt.Errorf("projections: save snapshot %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, frameSnapshot(body), 0o600); err != nil {
		return fmt.Errorf("projections: save snapshot %s: %w", path, err)
	}
	return nil
}

// frameSnapshot is body in the file format: magic, version, length, body,
// checksum.
func frameSnapshot(body []byte) []byte {
	buf := make([]byte, 0, len(body)+24)
	buf = append(buf, snapshotMagic...)
	buf = binary.BigEndian.AppendUint32(buf, snapshotVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(body)))
	buf = append(buf, body...)
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(body, castagnoli))
}

// snapshot encodes set's state at r's position, under r's fold lock.
func (r *Runner) snapshot(ctx context.Context, set *Set, extra json.RawMessage) ([]byte, error) {
	r.fold.Lock()
	defer r.fold.Unlock()
	if err := r.load(ctx); err != nil {
		return nil, err
	}
	return r.snapshotHeld(ctx, set, extra, false)
}

// snapshotHeld is snapshot with the fold lock held. foreign projections
// r feeds (not of set: the controller's token table) are left out when
// skipForeign, an error otherwise.
func (r *Runner) snapshotHeld(ctx context.Context, set *Set, extra json.RawMessage, skipForeign bool) ([]byte, error) {
	st := &snapState{Position: r.Position(), Extra: extra}
	if st.Position > 0 {
		id, err := r.idAt(ctx, st.Position)
		if err != nil {
			return nil, err
		}
		st.EventID = id
	}
	r.mu.RLock()
	st.Unknown, st.Failures, st.Failed = maps.Clone(r.unknown), slices.Clone(r.failures), r.failed
	r.mu.RUnlock()
	tb := &tables{st: st, strs: map[*string]int{}, res: map[*events.ResourceRef]int{}}
	for _, p := range r.ps {
		if !set.save(p, tb) && !skipForeign {
			return nil, fmt.Errorf("projection %s is not of the set", p.Name())
		}
	}
	return json.Marshal(st)
}

// idAt is the id of the event at pos in r's store.
func (r *Runner) idAt(ctx context.Context, pos uint64) ([16]byte, error) {
	evs, err := r.store.ReadAll(ctx, pos-1, 1)
	if err != nil {
		return [16]byte{}, fmt.Errorf("read position %d: %w", pos, err)
	}
	if len(evs) == 0 || evs[0].Position != pos {
		return [16]byte{}, fmt.Errorf("the store has no event at position %d: %w", pos, ErrSnapshot)
	}
	return evs[0].ID, nil
}

// LoadSnapshot restores set's projections that r feeds, and r's position
// and counters, from the snapshot at path, and returns that position; r's
// next CatchUp or Run folds from there. The snapshot must hold every
// projection r feeds and be of r's store (the event at its position has
// the id it recorded). Any other case is an error wrapping ErrSnapshot
// (os.ErrNotExist when there is no file), and also events.ErrDamaged when
// the file is damaged (see the format), and leaves set and r as they were;
// the caller then folds from 0. Call it before r folds anything.
func LoadSnapshot(ctx context.Context, path string, r *Runner, set *Set) (uint64, error) {
	pos, _, err := LoadSnapshotWith(ctx, path, r, set)
	return pos, err
}

// LoadSnapshotWith is LoadSnapshot, returning also the extra the snapshot
// was saved with (SaveSnapshotWith; nil if none).
func LoadSnapshotWith(ctx context.Context, path string, r *Runner, set *Set) (uint64, json.RawMessage, error) {
	st, err := readSnapshot(ctx, path, r)
	if err != nil {
		return 0, nil, err
	}
	if err := st.restore(r, set, path); err != nil {
		return 0, nil, err
	}
	return st.Position, st.Extra, nil
}

func badSnapshot(path, format string, args ...any) error {
	return fmt.Errorf("projections: load snapshot %s: %s: %w", path, fmt.Sprintf(format, args...), ErrSnapshot)
}

func damagedSnapshot(path, format string, args ...any) error {
	return fmt.Errorf("projections: load snapshot %s: %s: %w: %w", path, fmt.Sprintf(format, args...), ErrSnapshot, events.ErrDamaged)
}

// readSnapshot reads, checks and decodes the snapshot at path, and checks
// it is of r's store.
func readSnapshot(ctx context.Context, path string, r *Runner) (*snapState, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("projections: load snapshot: %w", err)
	}
	return decodeSnapshot(ctx, path, buf, r)
}

// decodeSnapshot checks and decodes buf, the snapshot named path, and
// checks it is of r's store.
func decodeSnapshot(ctx context.Context, path string, buf []byte, r *Runner) (*snapState, error) {
	if len(buf) < 24 || string(buf[:8]) != snapshotMagic {
		return nil, damagedSnapshot(path, "not a snapshot file (%d bytes)", len(buf))
	}
	if v := binary.BigEndian.Uint32(buf[8:]); v != snapshotVersion {
		return nil, badSnapshot(path, "format version %d, this build reads %d", v, snapshotVersion)
	}
	n := binary.BigEndian.Uint64(buf[12:])
	if n != uint64(len(buf)-24) {
		return nil, damagedSnapshot(path, "body of %d bytes in a file of %d: cut short or grown", n, len(buf))
	}
	body := buf[20 : 20+n]
	if sum := binary.BigEndian.Uint32(buf[20+n:]); sum != crc32.Checksum(body, castagnoli) {
		return nil, damagedSnapshot(path, "checksum mismatch")
	}
	var st snapState
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, damagedSnapshot(path, "decode: %v", err)
	}
	if head, err := r.store.Head(ctx); err != nil {
		return nil, fmt.Errorf("projections: load snapshot: head: %w", err)
	} else if st.Position > head {
		return nil, badSnapshot(path, "at position %d, past the store's head %d", st.Position, head)
	}
	if st.Position > 0 {
		id, err := r.idAt(ctx, st.Position)
		if err != nil {
			return nil, badSnapshot(path, "%v", err)
		}
		if id != st.EventID {
			return nil, badSnapshot(path, "the event at position %d is not the one the snapshot folded: another history", st.Position)
		}
	}
	return &st, nil
}

// restore loads st into set's projections that r feeds, and r.
func (st *snapState) restore(r *Runner, set *Set, path string) error {
	r.fold.Lock()
	defer r.fold.Unlock()
	for _, p := range r.ps {
		var missing bool
		switch p {
		case set.Churn:
			missing = st.Churn == nil
		case set.Roster:
			missing = st.Roster == nil
		case set.Status:
			missing = st.Status == nil
		case set.Holds:
			missing = st.Holds == nil
		case set.Timeline:
			missing = st.Timeline == nil
		default:
			return fmt.Errorf("projections: load snapshot: projection %s is not of the set", p.Name())
		}
		if missing {
			return damagedSnapshot(path, "no state for %s", p.Name())
		}
	}
	if err := checkTables(st); err != nil {
		return damagedSnapshot(path, "%v", err)
	}
	for _, p := range r.ps {
		switch p {
		case set.Churn:
			set.Churn.load(st.Churn, st)
		case set.Roster:
			set.Roster.load(st.Roster, st)
		case set.Status:
			set.Status.load(st.Status, st)
		case set.Holds:
			set.Holds.load(st.Holds)
		case set.Timeline:
			set.Timeline.load(st.Timeline, st)
		}
	}
	r.mu.Lock()
	r.unknown = st.Unknown
	if r.unknown == nil {
		r.unknown = map[string]int{}
	}
	r.failures, r.failed = st.Failures, st.Failed
	r.mu.Unlock()
	r.loaded = true
	r.restored = st.Position > 0
	r.setPos(st.Position)
	return nil
}

// keptState is what a checkpoint keeps of p, one of s's projections: its
// part of a snapshot's state as JSON, each slice written where it is used
// (tables that share nothing: what shares memory depends on how the state
// was made, a fold or a restore, not on what it is), for Adopt's
// comparison when the live projections were restored. Called under the
// fold lock of the runner that feeds p.
func (s *Set) keptState(p Projection) ([]byte, error) {
	st := &snapState{}
	if !s.save(p, &tables{st: st}) {
		return nil, fmt.Errorf("projection %s is not of the set", p.Name())
	}
	return json.Marshal(st)
}

// save puts p's part of a snapshot's state into tb's, and reports whether
// p is one of s's projections (false: nothing is put).
func (s *Set) save(p Projection, tb *tables) bool {
	st := tb.st
	switch p {
	case s.Churn:
		st.Churn = s.Churn.save(tb)
	case s.Roster:
		st.Roster = s.Roster.save(tb)
	case s.Status:
		st.Status = s.Status.save(tb)
	case s.Holds:
		st.Holds = s.Holds.save()
	case s.Timeline:
		st.Timeline = s.Timeline.save(tb)
	default:
		return false
	}
	return true
}

// checkTables checks that every table index in st is in range, so that a
// snapshot that passed its checksum but was written wrong cannot make a
// load panic.
func checkTables(st *snapState) error {
	ok := func(i, n int) bool { return i >= -1 && i < n }
	ns, nr := len(st.Strings), len(st.Resources)
	if c := st.Churn; c != nil {
		for name, n := range c.Nodes {
			if !ok(n.CurRoster, ns) || !ok(n.PrevRost, ns) {
				return fmt.Errorf("churn of %s: roster index out of range", name)
			}
			if n.Active < -1 || n.Active >= len(n.Episodes) {
				return fmt.Errorf("churn of %s: open episode %d of %d", name, n.Active, len(n.Episodes))
			}
			if len(n.Decls.IDs) != len(n.Decls.Vals) {
				return fmt.Errorf("churn of %s: declarations and ids differ in number", name)
			}
		}
	}
	if r := st.Roster; r != nil {
		for name, h := range r.Nodes {
			for _, d := range h {
				if !ok(d.Roster, ns) || !ok(d.Resources, nr) {
					return fmt.Errorf("roster of %s: index out of range", name)
				}
			}
		}
	}
	if s := st.Status; s != nil {
		for name, n := range s.Nodes {
			if len(n.Decls.IDs) != len(n.Decls.Vals) {
				return fmt.Errorf("status of %s: declarations and ids differ in number", name)
			}
			for _, d := range n.Decls.Vals {
				if !ok(d.Resources, nr) {
					return fmt.Errorf("status of %s: index out of range", name)
				}
			}
		}
	}
	if t := st.Timeline; t != nil {
		for name, ds := range t.Decls {
			if len(ds.IDs) != len(ds.Vals) {
				return fmt.Errorf("timeline of %s: declarations and ids differ in number", name)
			}
			for _, d := range ds.Vals {
				if !ok(d.Resources, nr) || !ok(d.Modules, ns) {
					return fmt.Errorf("timeline of %s: index out of range", name)
				}
			}
		}
		for name, d := range t.Last {
			if !ok(d.Resources, nr) || !ok(d.Modules, ns) {
				return fmt.Errorf("timeline of %s: index out of range", name)
			}
		}
	}
	for _, ns := range []map[string]reportsNodeSnap{reportsOf(st.Status), reportsOf(st.Holds), reportsOf(st.Timeline)} {
		for name, n := range ns {
			if len(n.Applies) != len(n.Held) {
				return fmt.Errorf("reports of %s: applies and held lists differ in number", name)
			}
		}
	}
	return nil
}

func reportsOf(v any) map[string]reportsNodeSnap {
	switch s := v.(type) {
	case *statusSnap:
		if s != nil {
			return s.Reports.Nodes
		}
	case *holdsSnap:
		if s != nil {
			return s.Reports.Nodes
		}
	case *timelineSnap:
		if s != nil {
			return s.Reports.Nodes
		}
	}
	return nil
}
