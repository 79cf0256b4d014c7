package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/uuid"

	"meshplane/internal/atomicfile"
)

// ErrUndelivered means a report could not be delivered; it is kept in the
// outbox and Flush will try again.
var ErrUndelivered = errors.New("report not delivered")

// ErrCorrupt means an outbox entry or the state file on disk is damaged:
// its checksum fails, or it does not decode. The outbox passes it over:
// it moves the file aside (NAME.damaged), says so in its log, and goes
// on without it (see the format).
var ErrCorrupt = errors.New("corrupt outbox entry")

// The on-disk format of an outbox directory:
//
//	DIR/state.json             the agent's State: {"version":2,"made":[paths],
//	                           "last":{"declaration","held_in","held":[...]}}
//	                           ("last" added; a file without it refers to nothing)
//	DIR/report-SSSSSSSSSSSSSSSSSSSS.json
//	                           one kept report: {"version":2,"seq":S,"report":{...}}
//	                           where S (20 digits, from 1) is its place in apply order
//	DIR/NAME.damaged           a file the outbox passed over (below); never read
//	DIR/.tmp-*                 a write in progress; removed when the outbox opens
//
// Each file is its JSON (indented), then a last line "crc32c XXXXXXXX": the
// CRC-32C (Castagnoli) of every byte before that line, in hex. Version 1
// files (written before the checksum) have no such line and are read as
// they are; a version-2 file without it, or whose checksum fails, or that
// does not decode, is damaged.
//
// A damaged report is passed over: renamed NAME.damaged (NAME.damaged-2, ...
// if taken), so nothing is deleted, and logged with its name and why; its
// report is not delivered (the next apply of that declaration reports
// anew). A damaged state.json is moved aside the same way and read as if
// absent: what is lost is the directories this agent made (on an adopted
// node they are then found: held and never touched, until their module is
// taken; nothing is ever removed because the state was unreadable) and
// what compact reports may name (the next report is in full).
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
	entryVersion  = 2 // with the checksum line
	legacyVersion = 1 // without it
	statePrefix   = "state.json"
	entryPrefix   = "report-"
	entrySuffix   = ".json"
	damagedSuffix = ".damaged"
	tmpPrefix     = atomicfile.TempPrefix
	sumPrefix     = "crc32c "
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seal appends to body (ending in a newline) its checksum line.
func seal(body []byte) []byte {
	return fmt.Appendf(body, "%s%08x\n", sumPrefix, crc32.Checksum(body, castagnoli))
}

// unseal splits b into its body and checksum line and checks it. A file
// without a checksum line is returned whole, sealed false (version 1).
func unseal(b []byte) (body []byte, sealed bool, err error) {
	i := bytes.LastIndexByte(bytes.TrimSuffix(b, []byte("\n")), '\n')
	last := b[i+1:]
	if !bytes.HasPrefix(last, []byte(sumPrefix)) {
		return b, false, nil
	}
	var sum uint32
	if len(last) != len(sumPrefix)+9 || last[len(last)-1] != '\n' {
		return nil, true, fmt.Errorf("checksum line %q: %w", last, ErrCorrupt)
	}
	if _, err := fmt.Sscanf(string(last[len(sumPrefix):len(last)-1]), "%08x", &sum); err != nil {
		return nil, true, fmt.Errorf("checksum line %q: %w", last, ErrCorrupt)
	}
	body = b[:i+1]
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, true, fmt.Errorf("checksum mismatch: %w", ErrCorrupt)
	}
	return body, true, nil
}

// checkVersion checks a decoded file's version against whether it was
// sealed: version 2 files carry their checksum, version 1 files do not.
func checkVersion(v int, sealed bool) error {
	switch {
	case sealed && v != entryVersion:
		return fmt.Errorf("version %d with a checksum, want %d: %w", v, entryVersion, ErrCorrupt)
	case !sealed && v == entryVersion:
		return fmt.Errorf("version %d without its checksum line (cut short?): %w", v, ErrCorrupt)
	case !sealed && v != legacyVersion:
		return fmt.Errorf("version %d, want %d: %w", v, entryVersion, ErrCorrupt)
	}
	return nil
}

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
	return seal(append(b, '\n')), nil
}

// decodeEntry decodes and checks one stored entry: its checksum (version
// 2), its JSON, its required fields. Fields added by a later build are
// ignored; anything else is ErrCorrupt.
func decodeEntry(b []byte) (entry, error) {
	body, sealed, err := unseal(b)
	if err != nil {
		return entry{}, err
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&e); err != nil {
		return entry{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	if dec.More() {
		return entry{}, fmt.Errorf("more than one JSON value: %w", ErrCorrupt)
	}
	if err := checkVersion(e.Version, sealed); err != nil {
		return entry{}, err
	}
	r := e.Report.Outcome
	switch {
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
	body, sealed, err := unseal(b)
	if err != nil {
		return State{}, err
	}
	var s storedState
	if err := json.Unmarshal(body, &s); err != nil {
		return State{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	if err := checkVersion(s.Version, sealed); err != nil {
		return State{}, err
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
	rename(from, to string) error // to must not exist
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
	log   *slog.Logger
	where string
	// passed counts the files passed over (moved aside).
	passed int
}

// OutboxOption configures OpenOutbox and NewMemOutbox.
type OutboxOption func(*Outbox)

// OutboxLogger sets where the outbox says what it passed over (default
// slog.Default()).
func OutboxLogger(l *slog.Logger) OutboxOption {
	return func(o *Outbox) {
		if l != nil {
			o.log = l
		}
	}
}

// OpenOutbox opens (creating it if need be) the outbox directory dir. It
// removes writes a crash interrupted, and passes over a kept report or a
// state file that is damaged (moved aside, logged: see the format).
func OpenOutbox(dir string, opts ...OutboxOption) (*Outbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", dir, err)
	}
	d := &dirFiles{dir: dir}
	if err := d.cleanTemps(); err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", dir, err)
	}
	return openOutbox(d, dir, opts)
}

// NewMemOutbox returns an outbox kept in memory (for tests and scenario
// runs). It shares every code path with a directory outbox but the bytes'
// home; Reopen gives a second outbox over the same memory, as a restart
// would.
func NewMemOutbox(opts ...OutboxOption) *Outbox {
	o, err := openOutbox(&memFiles{m: map[string][]byte{}}, "memory", opts)
	if err != nil {
		panic("agent: empty memory outbox: " + err.Error()) // cannot happen: nothing to decode
	}
	return o
}

// Reopen opens a new Outbox over the same files, as a restarted agent would.
func (o *Outbox) Reopen() (*Outbox, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return openOutbox(o.files, o.where, []OutboxOption{OutboxLogger(o.log)})
}

// PassedOver is how many damaged files this outbox moved aside.
func (o *Outbox) PassedOver() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.passed
}

func openOutbox(f files, where string, opts []OutboxOption) (*Outbox, error) {
	o := &Outbox{files: f, next: 1, log: slog.Default(), where: where}
	for _, opt := range opts {
		opt(o)
	}
	es, err := o.entries()
	if err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", where, err)
	}
	if len(es) > 0 {
		o.next = es[len(es)-1].Seq + 1
	}
	return o, nil
}

// entries reads every kept entry, in seq order. A damaged one is passed
// over (passOver): it is not among them.
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
		if err == nil && n != entryName(e.Seq) {
			err = fmt.Errorf("holds seq %d: %w", e.Seq, ErrCorrupt)
		}
		if err != nil {
			if err := o.passOver(n, err, "its report is not delivered; the next apply reports anew"); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// passOver moves the damaged file name aside (NAME.damaged, or
// NAME.damaged-N when taken), so that nothing is deleted and it is never
// read again, and logs it with why and what follows (lost). It fails
// only if the file cannot be moved: then it is not passed over.
func (o *Outbox) passOver(name string, why error, lost string) error {
	to := name + damagedSuffix
	for i := 2; ; i++ {
		if _, err := o.files.get(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s%s-%d", name, damagedSuffix, i)
	}
	if err := o.files.rename(name, to); err != nil {
		return fmt.Errorf("%s is damaged (%v), and moving it aside failed: %w", name, why, err)
	}
	o.passed++
	o.log.Error("agent: outbox: passed over a damaged file", "outbox", o.where, "file", name, "reason", why.Error(), "moved_to", to, "lost", lost)
	return nil
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
// A damaged state file is passed over as if absent: moved aside and
// logged (see the format for what is lost).
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
		if err := o.passOver(statePrefix, err, "read as if absent: the directories this agent made are found again on an adopted node "+
			"(held, never touched, until their module is taken; nothing is removed), and the next report is in full"); err != nil {
			return State{}, fmt.Errorf("agent: load state: %w", err)
		}
		return State{}, nil
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
	if err := o.files.put(statePrefix, seal(append(b, '\n'))); err != nil {
		return fmt.Errorf("agent: save state: %w", err)
	}
	return nil
}

// dirFiles keeps files in a directory, each write atomic and durable.
type dirFiles struct{ dir string }

func (d *dirFiles) put(name string, b []byte) error {
	return atomicfile.WriteFile(filepath.Join(d.dir, name), b, 0o600)
}

func (d *dirFiles) get(name string) ([]byte, error) { return os.ReadFile(filepath.Join(d.dir, name)) }

func (d *dirFiles) remove(name string) error {
	if err := os.Remove(filepath.Join(d.dir, name)); err != nil {
		return err
	}
	return d.syncDir()
}

func (d *dirFiles) rename(from, to string) error {
	if _, err := os.Lstat(filepath.Join(d.dir, to)); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", to, fs.ErrExist)
	}
	if err := os.Rename(filepath.Join(d.dir, from), filepath.Join(d.dir, to)); err != nil {
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

func (d *dirFiles) syncDir() error { return atomicfile.SyncDir(d.dir) }

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

func (m *memFiles) rename(from, to string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.m[from]
	if !ok {
		return fmt.Errorf("%s: %w", from, fs.ErrNotExist)
	}
	if _, ok := m.m[to]; ok {
		return fmt.Errorf("%s: %w", to, fs.ErrExist)
	}
	m.m[to] = b
	delete(m.m, from)
	return nil
}

func (m *memFiles) list() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.m)), nil
}

// OutboxCheck is what CheckOutbox found in an outbox directory.
type OutboxCheck struct {
	Reports int      // kept reports read and sound
	Legacy  int      // of which are version 1 (no checksum to check)
	State   string   // "absent", "sound" or "sound, version 1 (no checksum to check)"
	Damaged []string // "NAME: why", a line each: the agent passes them over when it next reads them
	Aside   []string // files passed over before (NAME.damaged), never read
}

// CheckOutbox reads every file of the outbox directory dir as the agent
// does, checksums included, and says what is damaged, without moving or
// changing anything (the agent may be running). A missing directory is an
// error wrapping fs.ErrNotExist.
func CheckOutbox(dir string) (OutboxCheck, error) {
	c := OutboxCheck{State: "absent"}
	if _, err := os.Stat(dir); err != nil {
		return c, fmt.Errorf("agent: check outbox: %w", err)
	}
	d := &dirFiles{dir: dir}
	names, err := d.list()
	if err != nil {
		return c, fmt.Errorf("agent: check outbox %s: %w", dir, err)
	}
	for _, n := range names {
		switch {
		case strings.Contains(n, damagedSuffix):
			c.Aside = append(c.Aside, n)
		case n == statePrefix:
			b, err := d.get(n)
			if err == nil {
				_, err = decodeState(b)
			}
			switch _, sealed, _ := unseal(b); {
			case err != nil:
				c.Damaged = append(c.Damaged, fmt.Sprintf("%s: %v", n, err))
			case sealed:
				c.State = "sound"
			default:
				c.State = "sound, version 1 (no checksum to check)"
			}
		case strings.HasPrefix(n, entryPrefix) && strings.HasSuffix(n, entrySuffix):
			b, err := d.get(n)
			var e entry
			if err == nil {
				e, err = decodeEntry(b)
			}
			if err == nil && n != entryName(e.Seq) {
				err = fmt.Errorf("holds seq %d: %w", e.Seq, ErrCorrupt)
			}
			if err != nil {
				c.Damaged = append(c.Damaged, fmt.Sprintf("%s: %v", n, err))
				continue
			}
			c.Reports++
			if e.Version == legacyVersion {
				c.Legacy++
			}
		}
	}
	return c, nil
}
