package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/uuid"
)

// ErrUndelivered means a report could not be delivered; it is kept in the
// outbox and Flush will try again.
var ErrUndelivered = errors.New("report not delivered")

// ErrCorrupt means an outbox entry or the state file on disk does not decode.
// The outbox refuses to open rather than drop a report it cannot read.
var ErrCorrupt = errors.New("corrupt outbox entry")

// The on-disk format of an outbox directory:
//
//	DIR/state.json             the agent's State: {"version":1,"made":[paths],
//	                           "last":{"declaration","held_in","held":[...]}}
//	                           ("last" added; a file without it refers to nothing)
//	DIR/report-SSSSSSSSSSSSSSSSSSSS.json
//	                           one kept report: {"version":1,"seq":S,"report":{...}}
//	                           where S (20 digits, from 1) is its place in apply order
//	DIR/.tmp-*                 a write in progress; removed when the outbox opens
//
// Every file is written whole to a temporary file in DIR, fsynced, renamed
// over its name, and DIR is fsynced: a crash leaves the old file or the new
// one, never half of either. A kept report is written before its delivery is
// attempted and removed once delivered.
//
// Why a directory of files rather than one bbolt file: an outbox holds a
// handful of small entries at a time, each written once, rewritten a few
// times (attempt counts) and removed; it needs no transactions across
// entries, and an operator who wants to know why a node "applied and could
// not tell the mesh" can read the reports with cat (seed 002 was diagnosed by
// reading state.json by hand). One file per report also keeps a corrupt
// entry from costing the others.
const (
	entryVersion = 1
	statePrefix  = "state.json"
	entryPrefix  = "report-"
	entrySuffix  = ".json"
	tmpPrefix    = ".tmp-"
)

// entry is one kept report as stored.
type entry struct {
	Version int    `json:"version"`
	Seq     uint64 `json:"seq"`
	Report  Report `json:"report"`
}

// storedState is State as stored.
type storedState struct {
	Version int      `json:"version"`
	Made    []string `json:"made"`
	Last    Last     `json:"last"` // added; absent in older files (nothing to refer to)
}

func entryName(seq uint64) string { return fmt.Sprintf("%s%020d%s", entryPrefix, seq, entrySuffix) }

func encodeEntry(e entry) ([]byte, error) {
	e.Version = entryVersion
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report %s: %w", e.Report.Outcome.ApplyID, err)
	}
	return append(b, '\n'), nil
}

// decodeEntry decodes and checks one stored entry. Fields added by a later
// build are ignored; a missing or malformed required field is ErrCorrupt.
func decodeEntry(b []byte) (entry, error) {
	var e entry
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&e); err != nil {
		return entry{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	if dec.More() {
		return entry{}, fmt.Errorf("more than one JSON value: %w", ErrCorrupt)
	}
	r := e.Report.Outcome
	switch {
	case e.Version != entryVersion:
		return entry{}, fmt.Errorf("version %d, want %d: %w", e.Version, entryVersion, ErrCorrupt)
	case e.Seq == 0:
		return entry{}, fmt.Errorf("seq missing: %w", ErrCorrupt)
	case r.Node == "":
		return entry{}, fmt.Errorf("report.node missing: %w", ErrCorrupt)
	case r.Declaration == "":
		return entry{}, fmt.Errorf("report.declaration missing: %w", ErrCorrupt)
	case e.Report.Attempts < 0:
		return entry{}, fmt.Errorf("report.attempts %d: %w", e.Report.Attempts, ErrCorrupt)
	}
	if id, err := uuid.Parse(r.ApplyID); err != nil || id == uuid.Nil {
		return entry{}, fmt.Errorf("report.apply_id %q: not a UUID: %w", r.ApplyID, ErrCorrupt)
	}
	return e, nil
}

func decodeState(b []byte) (State, error) {
	var s storedState
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	if s.Version != entryVersion {
		return State{}, fmt.Errorf("version %d, want %d: %w", s.Version, entryVersion, ErrCorrupt)
	}
	made := append([]string(nil), s.Made...)
	sort.Strings(made)
	return State{Made: compact(made), Last: s.Last}, nil
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// files is where an outbox keeps its bytes: a directory, or memory. Names are
// flat. It is the only part of the outbox that differs between the two, so
// both share every other line.
type files interface {
	put(name string, b []byte) error
	get(name string) ([]byte, error) // fs.ErrNotExist when absent
	remove(name string) error
	list() ([]string, error)
}

// Outbox keeps apply reports until they are delivered, and the agent's
// State beside them. It is safe for concurrent use.
//
// Invariants: a report is on disk before any delivery of it is attempted;
// kept reports are delivered in apply order (seq), and a report is removed
// only after its delivery succeeded.
type Outbox struct {
	mu    sync.Mutex
	files files
	next  uint64 // the seq the next Put takes
}

// OpenOutbox opens (creating it if need be) the outbox directory dir. It
// removes writes a crash interrupted and refuses to open if a kept report
// does not decode (ErrCorrupt, naming the file).
func OpenOutbox(dir string) (*Outbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", dir, err)
	}
	d := &dirFiles{dir: dir}
	if err := d.cleanTemps(); err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", dir, err)
	}
	return openOutbox(d, dir)
}

// NewMemOutbox returns an outbox kept in memory (for tests and scenario
// runs). It shares every code path with a directory outbox but the bytes'
// home; Reopen gives a second outbox over the same memory, as a restart
// would.
func NewMemOutbox() *Outbox {
	o, err := openOutbox(&memFiles{m: map[string][]byte{}}, "memory")
	if err != nil {
		panic("agent: empty memory outbox: " + err.Error()) // cannot happen: nothing to decode
	}
	return o
}

// Reopen opens a new Outbox over the same files, as a restarted agent would.
func (o *Outbox) Reopen() (*Outbox, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return openOutbox(o.files, "reopen")
}

func openOutbox(f files, where string) (*Outbox, error) {
	o := &Outbox{files: f, next: 1}
	es, err := o.entries()
	if err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", where, err)
	}
	if len(es) > 0 {
		o.next = es[len(es)-1].Seq + 1
	}
	return o, nil
}

// entries reads every kept entry, in seq order.
func (o *Outbox) entries() ([]entry, error) {
	names, err := o.files.list()
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var out []entry
	for _, n := range names {
		if !strings.HasPrefix(n, entryPrefix) || !strings.HasSuffix(n, entrySuffix) {
			continue
		}
		b, err := o.files.get(n)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
		e, err := decodeEntry(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if n != entryName(e.Seq) {
			return nil, fmt.Errorf("%s holds seq %d: %w", n, e.Seq, ErrCorrupt)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// Put keeps r, after every report already kept.
func (o *Outbox) Put(r Report) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := entry{Seq: o.next, Report: r}
	b, err := encodeEntry(e)
	if err != nil {
		return fmt.Errorf("agent: outbox: %w", err)
	}
	if err := o.files.put(entryName(e.Seq), b); err != nil {
		return fmt.Errorf("agent: outbox: keep report %s: %w", r.Outcome.ApplyID, err)
	}
	o.next++
	return nil
}

// Pending returns the kept reports, in apply order.
func (o *Outbox) Pending() ([]Report, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	es, err := o.entries()
	if err != nil {
		return nil, fmt.Errorf("agent: outbox: %w", err)
	}
	out := make([]Report, len(es))
	for i, e := range es {
		out[i] = e.Report
	}
	return out, nil
}

// Deliver is how a report reaches the mesh. It must be idempotent per
// Report.Outcome.ApplyID (the id of the apply.reported event the controller
// appends), since a report whose delivery succeeded but whose removal from
// the outbox did not is delivered again.
type Deliver func(ctx context.Context, r Report) error

// Flush tries to deliver every kept report, in apply order, stopping at the
// first failure so that a later report never overtakes an earlier one. A
// delivered report is removed. When one fails, it and every later report
// stay kept, each with its Attempts raised and the error recorded (a later
// report was not tried, but it was not delivered in that round either: its
// delivery is late all the same). It returns how many were delivered, and an
// error wrapping ErrUndelivered if one failed (or the outbox's own error).
func (o *Outbox) Flush(ctx context.Context, deliver Deliver) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	es, err := o.entries()
	if err != nil {
		return 0, fmt.Errorf("agent: flush: %w", err)
	}
	n := 0
	for i, e := range es {
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("agent: flush: %w", err) // not a failed round
		}
		derr := deliver(ctx, e.Report)
		if derr == nil {
			if err := o.files.remove(entryName(e.Seq)); err != nil {
				return n, fmt.Errorf("agent: flush: report %s delivered, not removed (it will be delivered again): %w", e.Report.Outcome.ApplyID, err)
			}
			n++
			continue
		}
		// The round failed for this report and for every later one, which
		// waits behind it.
		for j, later := range es[i:] {
			later.Report.Attempts++
			later.Report.LastError = derr.Error()
			if j > 0 {
				later.Report.LastError = fmt.Sprintf("behind report %s: %v", e.Report.Outcome.ApplyID, derr)
			}
			b, err := encodeEntry(later)
			if err == nil {
				err = o.files.put(entryName(later.Seq), b)
			}
			if err != nil {
				return n, fmt.Errorf("agent: flush: report %s: record failed delivery (%v): %w", later.Report.Outcome.ApplyID, derr, err)
			}
		}
		return n, fmt.Errorf("agent: flush: report %s (%s), round %d: %w: %w",
			e.Report.Outcome.ApplyID, e.Report.Outcome.Declaration, e.Report.Attempts+1, ErrUndelivered, derr)
	}
	return n, nil
}

// LoadState returns the agent's State (the zero State if none was saved).
func (o *Outbox) LoadState() (State, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, err := o.files.get(statePrefix)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("agent: load state: %w", err)
	}
	s, err := decodeState(b)
	if err != nil {
		return State{}, fmt.Errorf("agent: load state: %s: %w", statePrefix, err)
	}
	return s, nil
}

// SaveState replaces the saved State.
func (o *Outbox) SaveState(s State) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, err := json.MarshalIndent(storedState{Version: entryVersion, Made: append([]string{}, s.Made...), Last: s.Last}, "", "  ")
	if err != nil {
		return fmt.Errorf("agent: save state: %w", err)
	}
	if err := o.files.put(statePrefix, append(b, '\n')); err != nil {
		return fmt.Errorf("agent: save state: %w", err)
	}
	return nil
}

// dirFiles keeps files in a directory, each write atomic and durable.
type dirFiles struct{ dir string }

func (d *dirFiles) put(name string, b []byte) error {
	tmp, err := os.CreateTemp(d.dir, tmpPrefix+name+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.dir, name)); err != nil {
		return err
	}
	return d.syncDir()
}

func (d *dirFiles) get(name string) ([]byte, error) { return os.ReadFile(filepath.Join(d.dir, name)) }

func (d *dirFiles) remove(name string) error {
	if err := os.Remove(filepath.Join(d.dir, name)); err != nil {
		return err
	}
	return d.syncDir()
}

func (d *dirFiles) list() ([]string, error) {
	des, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(des))
	for _, de := range des {
		if de.Type().IsRegular() {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

func (d *dirFiles) syncDir() error {
	f, err := os.Open(d.dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (d *dirFiles) cleanTemps() error {
	names, err := d.list()
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, tmpPrefix) {
			if err := os.Remove(filepath.Join(d.dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// memFiles keeps files in memory. Stored slices are copied in and out.
type memFiles struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (m *memFiles) put(name string, b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[name] = bytes.Clone(b)
	return nil
}

func (m *memFiles) get(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.m[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return bytes.Clone(b), nil
}

func (m *memFiles) remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[name]; !ok {
		return fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	delete(m.m, name)
	return nil
}

func (m *memFiles) list() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.m)), nil
}
