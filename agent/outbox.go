package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"meshplane/internal/atomicfile"
	"meshplane/internal/crcframe"
)

// ErrUndelivered means a report could not be delivered; it is kept in the
// outbox and Flush will try again.
var ErrUndelivered = errors.New("report not delivered")

// ErrDamaged means a record of the outbox's log (or a legacy file) is
// damaged: its checksum fails, it is cut short, or it does not decode. The
// outbox passes it over: it copies the log aside (outbox.log.damaged), says
// so in its log, and goes on without it (see the format).
var ErrDamaged = errors.New("damaged outbox entry")

// The on-disk format of an outbox directory (version 3):
//
//	DIR/outbox.log             the log: one record a line, appended
//	DIR/outbox.log.damaged     a copy of the log as it was when a damaged
//	                           record was found in it (-2, -3, ... if taken); never read
//	DIR/NAME.damaged           a legacy file passed over (outbox_legacy.go); never read
//	DIR/.tmp-*                 a write in progress; removed when the outbox opens
//
// Each line of the log is a JSON object, a space, and "crc32c XXXXXXXX":
// the CRC-32C (Castagnoli) of the JSON's bytes, in hex (cat shows it;
// `sed 's/ crc32c [0-9a-f]*$//' outbox.log | jq` reads it). Every record
// has "version":3 and an "op":
//
//	{"op":"log","next":S}      the first line: the seq the next report takes
//	{"op":"put","seq":S,"report":{...},"state":{"made":[...],"last":{...}}}
//	                           a kept report, S its place in apply order (from
//	                           1), and the agent's State after its apply
//	                           ("state" absent when saved apart)
//	{"op":"state","state":{...}}
//	                           the agent's State, saved alone
//	{"op":"ack","seq":S}       report S was delivered
//	{"op":"fail","seq":S,"attempts":N,"last_error":"..."}
//	                           a delivery round of report S failed
//
// What the log says is its records read in order: the kept reports are the
// puts without an ack, with the attempts of their last fail; the State is
// the last one recorded.
//
// Durability: a put (an apply: its report and the State in one record), a
// state and a fail are written and fsynced before the call returns: one
// fsync an apply. An ack is appended without one: a crash may lose it, and
// the report is then delivered again, which the mesh takes once (Deliver's
// apply id; the controller appends apply.reported under it and passes over
// the second). When nothing is pending and the log has grown past 1 MiB (or
// is more than half records that no longer count), it is compacted: written
// anew (the header, the State, the kept reports) to a temporary file,
// fsynced, renamed over it, and DIR fsynced, so a crash leaves the old log
// or the new one.
//
// A damaged record (its checksum fails, it does not decode, or the log ends
// in a line cut short) is passed over: the log as found is copied to
// outbox.log.damaged (nothing is deleted), each damaged record is logged
// with its line and why, and the log is rewritten without it. What it held
// is lost: a report (not delivered; the next apply of that declaration
// reports anew), a delivery noted (the report is delivered again), a failed
// round (its attempt is not counted), or a State. A State is read as
// recorded last unless a damaged complete line comes after it: then it is
// read as if absent, since that line may have been a later one (what that
// loses: the directories this agent made are found again on an adopted
// node, held and never touched until their module is taken, nothing is ever
// removed because the state was unreadable; and the next report is in
// full). A line cut short at the end was never acknowledged (the agent
// stopped mid-write: its fsync had not returned), so the State before it
// holds. An empty log (a log always has its first line) is damaged the same
// way. A log cut exactly between two lines reads as the log it was then:
// the lines after the cut are lost unseen, as a deleted file of the legacy
// format was.
//
// Upgrade: a directory of the legacy format (versions 1 and 2: a file a
// report and state.json, outbox_legacy.go) is moved into the log when the
// outbox opens: its sound reports become puts, in their order, after any
// the log already keeps (an apply id already kept is not kept twice), its
// state a state record; the log is written whole (as a compaction), then
// the legacy files are removed. A crash between leaves both, and the next
// open does it again, to the same log.
//
// Why one log rather than a file a report: a file a report cost five fsyncs
// an apply (the report and its directory, the state and its directory, the
// directory again on removal); the log costs one. It is still text an
// operator reads with cat (seed 002 was diagnosed by reading the state by
// hand), and a damaged record costs only itself.
const (
	logVersion = 3
	logName    = "outbox.log"
	tmpPrefix  = atomicfile.TempPrefix

	opLog   = "log"
	opPut   = "put"
	opState = "state"
	opAck   = "ack"
	opFail  = "fail"
)

// compactBytes is the size past which a log with nothing pending is
// compacted (a variable for tests).
var compactBytes = 1 << 20

// record is one line of the log.
type record struct {
	Version   int       `json:"version"`
	Op        string    `json:"op"`
	Seq       uint64    `json:"seq,omitempty"`
	Next      uint64    `json:"next,omitempty"`
	Report    *Report   `json:"report,omitempty"`
	State     *logState `json:"state,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	LastError string    `json:"last_error,omitempty"`
}

// logState is State as the log stores it.
type logState struct {
	Made   []string                 `json:"made"`
	Last   Last                     `json:"last"`
	Failed map[string]FailedRollout `json:"failed_rollouts,omitempty"`
}

func toLogState(s State) *logState {
	return &logState{Made: append([]string{}, s.Made...), Last: s.Last, Failed: maps.Clone(s.Failed)}
}

func (s *logState) state() State {
	made := slices.Clone(s.Made)
	slices.Sort(made)
	return State{Made: compact(made), Last: s.Last, Failed: maps.Clone(s.Failed)}
}

// encodeRecord is r's line, its newline included.
func encodeRecord(r record) ([]byte, error) {
	r.Version = logVersion
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode %s record: %w", r.Op, err)
	}
	return crcframe.Line(nil, b), nil
}

// decodeRecord decodes and checks one line of the log (without its
// newline): its checksum, its JSON, its op's fields. Fields added by a
// later build are ignored; anything else is ErrDamaged.
func decodeRecord(line []byte) (record, error) {
	body, err := crcframe.CheckLine(line)
	if err != nil {
		return record{}, fmt.Errorf("%w: %w", err, ErrDamaged)
	}
	var r record
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&r); err != nil {
		return record{}, fmt.Errorf("%v: %w", err, ErrDamaged)
	}
	if dec.More() {
		return record{}, fmt.Errorf("more than one JSON value: %w", ErrDamaged)
	}
	if r.Version != logVersion {
		return record{}, fmt.Errorf("version %d, want %d: %w", r.Version, logVersion, ErrDamaged)
	}
	switch r.Op {
	case opLog:
		if r.Next == 0 {
			return record{}, fmt.Errorf("log record without next: %w", ErrDamaged)
		}
	case opPut:
		if r.Seq == 0 || r.Report == nil {
			return record{}, fmt.Errorf("put record without seq or report: %w", ErrDamaged)
		}
		if err := checkReport(*r.Report); err != nil {
			return record{}, err
		}
	case opState:
		if r.State == nil {
			return record{}, fmt.Errorf("state record without state: %w", ErrDamaged)
		}
	case opAck:
		if r.Seq == 0 {
			return record{}, fmt.Errorf("ack record without seq: %w", ErrDamaged)
		}
	case opFail:
		if r.Seq == 0 || r.Attempts < 1 {
			return record{}, fmt.Errorf("fail record without seq or attempts: %w", ErrDamaged)
		}
	default:
		return record{}, fmt.Errorf("op %q: %w", r.Op, ErrDamaged)
	}
	return r, nil
}

// checkReport checks a kept report's required fields.
func checkReport(rep Report) error {
	r := rep.Outcome
	switch {
	case r.Node == "":
		return fmt.Errorf("report.node missing: %w", ErrDamaged)
	case r.Declaration == "":
		return fmt.Errorf("report.declaration missing: %w", ErrDamaged)
	case rep.Attempts < 0:
		return fmt.Errorf("report.attempts %d: %w", rep.Attempts, ErrDamaged)
	}
	if id, err := uuid.Parse(r.ApplyID); err != nil || id == uuid.Nil {
		return fmt.Errorf("report.apply_id %q: not a UUID: %w", r.ApplyID, ErrDamaged)
	}
	return nil
}

// logView is what a log says (see the format).
type logView struct {
	next     uint64
	pending  []entry
	sizes    map[uint64]int // a kept report's put line, in bytes
	state    State
	hasState bool
	stateLen int
	damage   []string // "line N (byte O): why"
	lostLast bool     // a damaged complete line came after the last State
}

// readLog reads a log's bytes.
func readLog(b []byte) logView {
	v := logView{next: 1, sizes: map[uint64]int{}}
	if len(b) == 0 {
		v.damage = append(v.damage, fmt.Sprintf("empty (a log always has its first line): %v", ErrDamaged))
		return v
	}
	var lastPut uint64
	for line, off := 1, 0; off < len(b); line++ {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			v.damage = append(v.damage, fmt.Sprintf("line %d (byte %d): cut short, no newline (the agent stopped mid-write?): %v", line, off, ErrDamaged))
			break
		}
		raw := b[off : off+end]
		at := off
		off += end + 1
		r, err := decodeRecord(raw)
		if err == nil && r.Op == opPut && r.Seq <= lastPut {
			err = fmt.Errorf("seq %d after seq %d: %w", r.Seq, lastPut, ErrDamaged)
		}
		if err == nil && r.Op == opLog && line != 1 {
			err = fmt.Errorf("a log record on line %d: %w", line, ErrDamaged)
		}
		if err != nil {
			v.damage = append(v.damage, fmt.Sprintf("line %d (byte %d): %v", line, at, err))
			v.lostLast = true
			continue
		}
		switch r.Op {
		case opLog:
			v.next = max(v.next, r.Next)
		case opPut:
			lastPut = r.Seq
			v.pending = append(v.pending, entry{Seq: r.Seq, Report: *r.Report})
			v.sizes[r.Seq] = len(raw) + 1
			v.next = max(v.next, r.Seq+1)
			if r.State != nil {
				v.state, v.hasState, v.stateLen, v.lostLast = r.State.state(), true, len(raw)+1, false
			}
		case opState:
			v.state, v.hasState, v.stateLen, v.lostLast = r.State.state(), true, len(raw)+1, false
		case opAck:
			if i := v.find(r.Seq); i >= 0 {
				v.pending = slices.Delete(v.pending, i, i+1)
				delete(v.sizes, r.Seq)
			}
		case opFail:
			if i := v.find(r.Seq); i >= 0 {
				v.pending[i].Report.Attempts, v.pending[i].Report.LastError = r.Attempts, r.LastError
			}
		}
	}
	if v.lostLast {
		v.state, v.hasState = State{}, false
	}
	return v
}

func (v *logView) find(seq uint64) int {
	return slices.IndexFunc(v.pending, func(e entry) bool { return e.Seq == seq })
}

// files is where an outbox keeps its bytes: a directory, or memory. Names are
// flat. It is the only part of the outbox that differs between the two, so
// both share every other line.
type files interface {
	put(name string, b []byte) error // replaces name whole, atomically and durably
	appendTo(name string, b []byte, sync bool) error
	get(name string) ([]byte, error) // fs.ErrNotExist when absent
	remove(name string) error
	rename(from, to string) error // to must not exist
	list() ([]string, error)
}

// Outbox keeps apply reports until they are delivered, and the agent's
// State beside them. It is safe for concurrent use.
//
// Invariants: a report is on disk before any delivery of it is attempted;
// kept reports are delivered in apply order (seq), and a report is dropped
// (acknowledged in the log) only after its delivery succeeded.
type Outbox struct {
	mu      sync.Mutex
	files   files
	next    uint64 // the seq the next Put takes
	pending []entry
	sizes   map[uint64]int
	state   State
	hasSt   bool
	stLen   int
	size    int  // the log's bytes
	broken  bool // an append failed: the log may end in part of a line; compact before the next
	log     *slog.Logger
	where   string
	// passed counts the damaged records and files passed over.
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
// removes writes a crash interrupted, moves a legacy directory into the
// log, and passes over the damaged records of the log (copied aside,
// logged: see the format).
func OpenOutbox(dir string, opts ...OutboxOption) (*Outbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", dir, err)
	}
	d := &dirFiles{dir: dir, app: map[string]*os.File{}}
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

// PassedOver is how many damaged records (and legacy files) this outbox
// passed over.
func (o *Outbox) PassedOver() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.passed
}

func openOutbox(f files, where string, opts []OutboxOption) (*Outbox, error) {
	o := &Outbox{files: f, next: 1, sizes: map[uint64]int{}, log: slog.Default(), where: where}
	for _, opt := range opts {
		opt(o)
	}
	if err := o.load(); err != nil {
		return nil, fmt.Errorf("agent: open outbox %s: %w", where, err)
	}
	return o, nil
}

// load reads the log (creating it when absent), passes over its damaged
// records, and moves a legacy directory into it.
func (o *Outbox) load() error {
	b, err := o.files.get(logName)
	rewrite := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rewrite = true
	case err != nil:
		return fmt.Errorf("read %s: %w", logName, err)
	default:
		v := readLog(b)
		o.next, o.pending, o.sizes, o.state, o.hasSt, o.stLen, o.size = v.next, v.pending, v.sizes, v.state, v.hasState, v.stateLen, len(b)
		if len(v.damage) > 0 {
			if err := o.passOverRecords(b, v); err != nil {
				return err
			}
			rewrite = true
		}
	}
	l, err := o.readLegacy()
	if err != nil {
		return err
	}
	if len(l.names) > 0 {
		o.importLegacy(l)
		rewrite = true
	}
	if rewrite {
		if err := o.compact(); err != nil {
			return err
		}
	}
	for _, n := range l.names {
		if err := o.files.remove(n); err != nil {
			return fmt.Errorf("remove %s, moved into the log: %w", n, err)
		}
	}
	if len(l.names) > 0 {
		o.log.Info("agent: outbox: moved the legacy files into the log", "outbox", o.where, "files", len(l.names), "reports", len(l.entries))
	}
	return nil
}

// importLegacy adds to the outbox what a legacy directory holds (see the
// format): its reports after those kept, unless kept already; its State.
func (o *Outbox) importLegacy(l legacy) {
	for _, e := range l.entries {
		if slices.ContainsFunc(o.pending, func(p entry) bool { return p.Report.Outcome.ApplyID == e.Report.Outcome.ApplyID }) {
			continue
		}
		o.pending = append(o.pending, entry{Seq: o.next, Report: e.Report})
		o.next++
	}
	if l.hasState {
		o.state, o.hasSt = l.state, true
	}
}

// passOverRecords copies the log as found (b) aside, so that nothing is
// deleted, and logs each damaged record of v. The caller rewrites the log.
func (o *Outbox) passOverRecords(b []byte, v logView) error {
	to := o.asideName(logName)
	if err := o.files.put(to, b); err != nil {
		return fmt.Errorf("%s has %d damaged record(s) (%s), and copying it aside failed: %w", logName, len(v.damage), v.damage[0], err)
	}
	lost := "what it held: a kept report (not delivered; the next apply of that declaration reports anew), " +
		"a delivery noted (the report is delivered again), a failed round (not counted), or the agent's state"
	if v.lostLast {
		lost += "; the state is read as if absent: the directories this agent made are found again on an adopted node " +
			"(held, never touched, until their module is taken; nothing is removed), and the next report is in full"
	}
	for _, d := range v.damage {
		o.passed++
		o.log.Error("agent: outbox: passed over a damaged record", "outbox", o.where, "file", logName, "reason", d, "copied_to", to, "lost", lost)
	}
	return nil
}

// compact writes the log anew from what it says: the header, the State,
// the kept reports.
func (o *Outbox) compact() error {
	var buf bytes.Buffer
	add := func(r record) error {
		b, err := encodeRecord(r)
		if err != nil {
			return err
		}
		buf.Write(b)
		return nil
	}
	if err := add(record{Op: opLog, Next: o.next}); err != nil {
		return err
	}
	o.stLen = 0
	if o.hasSt {
		before := buf.Len()
		if err := add(record{Op: opState, State: toLogState(o.state)}); err != nil {
			return err
		}
		o.stLen = buf.Len() - before
	}
	clear(o.sizes)
	for _, e := range o.pending {
		before := buf.Len()
		if err := add(record{Op: opPut, Seq: e.Seq, Report: &e.Report}); err != nil {
			return err
		}
		o.sizes[e.Seq] = buf.Len() - before
	}
	if err := o.files.put(logName, buf.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", logName, err)
	}
	o.size, o.broken = buf.Len(), false
	return nil
}

// maybeCompact compacts a log that has grown (see the format).
func (o *Outbox) maybeCompact() error {
	live := o.stLen
	for _, n := range o.sizes {
		live += n
	}
	if o.size < compactBytes || (len(o.pending) > 0 && o.size < 2*live) {
		return nil
	}
	return o.compact()
}

// appendRecords appends rs to the log in one write, fsynced when sync.
func (o *Outbox) appendRecords(sync bool, rs ...record) error {
	if o.broken {
		if err := o.compact(); err != nil {
			return err
		}
	}
	var buf []byte
	for _, r := range rs {
		b, err := encodeRecord(r)
		if err != nil {
			return err
		}
		buf = append(buf, b...)
	}
	if err := o.files.appendTo(logName, buf, sync); err != nil {
		o.broken = true
		return fmt.Errorf("append to %s: %w", logName, err)
	}
	o.size += len(buf)
	return nil
}

// Put keeps r, after every report already kept.
func (o *Outbox) Put(r Report) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.put(r, nil); err != nil {
		return fmt.Errorf("agent: outbox: keep report %s: %w", r.Outcome.ApplyID, err)
	}
	return nil
}

// Keep keeps r, after every report already kept, and saves s as the State,
// in one record: one durable write an apply.
func (o *Outbox) Keep(r Report, s State) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.put(r, &s); err != nil {
		return fmt.Errorf("agent: outbox: keep report %s and the state: %w", r.Outcome.ApplyID, err)
	}
	return nil
}

func (o *Outbox) put(r Report, s *State) error {
	rec := record{Op: opPut, Seq: o.next, Report: &r}
	if s != nil {
		rec.State = toLogState(*s)
	}
	before := o.size
	if err := o.appendRecords(true, rec); err != nil {
		return err
	}
	o.pending = append(o.pending, entry{Seq: rec.Seq, Report: r})
	o.sizes[rec.Seq] = o.size - before
	o.next++
	if s != nil {
		o.state, o.hasSt = rec.State.state(), true
		o.stLen = 0 // counted in the report's line until compacted
	}
	return nil
}

// Pending returns the kept reports, in apply order.
func (o *Outbox) Pending() ([]Report, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Report, len(o.pending))
	for i, e := range o.pending {
		out[i] = e.Report
	}
	return out, nil
}

// Deliver is how a report reaches the mesh. It must be idempotent per
// Report.Outcome.ApplyID (the id of the apply.reported event the controller
// appends), since a report whose delivery succeeded but whose
// acknowledgement in the log was lost (a crash) is delivered again.
type Deliver func(ctx context.Context, r Report) error

// Flush tries to deliver every kept report, in apply order, stopping at the
// first failure so that a later report never overtakes an earlier one. A
// delivered report is dropped. When one fails, it and every later report
// stay kept, each with its Attempts raised and the error recorded (a later
// report was not tried, but it was not delivered in that round either: its
// delivery is late all the same). It returns how many were delivered, and an
// error wrapping ErrUndelivered if one failed (or the outbox's own error).
func (o *Outbox) Flush(ctx context.Context, deliver Deliver) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for len(o.pending) > 0 {
		e := o.pending[0]
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("agent: flush: %w", err) // not a failed round
		}
		derr := deliver(ctx, e.Report)
		if derr == nil {
			if err := o.appendRecords(false, record{Op: opAck, Seq: e.Seq}); err != nil {
				return n, fmt.Errorf("agent: flush: report %s delivered, not noted (it will be delivered again): %w", e.Report.Outcome.ApplyID, err)
			}
			o.pending = o.pending[1:]
			delete(o.sizes, e.Seq)
			n++
			continue
		}
		// The round failed for this report and for every later one, which
		// waits behind it.
		rs := make([]record, len(o.pending))
		for j, later := range o.pending {
			msg := derr.Error()
			if j > 0 {
				msg = fmt.Sprintf("behind report %s: %v", e.Report.Outcome.ApplyID, derr)
			}
			rs[j] = record{Op: opFail, Seq: later.Seq, Attempts: later.Report.Attempts + 1, LastError: msg}
		}
		if err := o.appendRecords(true, rs...); err != nil {
			return n, fmt.Errorf("agent: flush: report %s: record failed delivery (%v): %w", e.Report.Outcome.ApplyID, derr, err)
		}
		for j := range o.pending {
			o.pending[j].Report.Attempts, o.pending[j].Report.LastError = rs[j].Attempts, rs[j].LastError
		}
		if err := o.maybeCompact(); err != nil {
			return n, fmt.Errorf("agent: flush: compact: %w", err)
		}
		return n, fmt.Errorf("agent: flush: report %s (%s), round %d: %w: %w",
			e.Report.Outcome.ApplyID, e.Report.Outcome.Declaration, e.Report.Attempts+1, ErrUndelivered, derr)
	}
	if err := o.maybeCompact(); err != nil {
		return n, fmt.Errorf("agent: flush: compact: %w", err)
	}
	return n, nil
}

// LoadState returns the agent's State (the zero State if none was saved,
// or if a damaged record was passed over after it: see the format).
func (o *Outbox) LoadState() (State, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.state
	st.Made = slices.Clone(st.Made)
	st.Last.Held = slices.Clone(st.Last.Held)
	return st, nil
}

// SaveState replaces the saved State.
func (o *Outbox) SaveState(s State) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	rec := record{Op: opState, State: toLogState(s)}
	before := o.size
	if err := o.appendRecords(true, rec); err != nil {
		return fmt.Errorf("agent: save state: %w", err)
	}
	o.state, o.hasSt, o.stLen = rec.State.state(), true, o.size-before
	return nil
}

// dirFiles keeps files in a directory: each put atomic and durable, each
// append to one open file.
type dirFiles struct {
	dir string
	mu  sync.Mutex
	app map[string]*os.File // open for appending
}

func (d *dirFiles) put(name string, b []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closeApp(name) // the name gets a new file
	return atomicfile.WriteFile(filepath.Join(d.dir, name), b, 0o600)
}

func (d *dirFiles) closeApp(name string) {
	if f, ok := d.app[name]; ok {
		f.Close()
		delete(d.app, name)
	}
}

func (d *dirFiles) appendTo(name string, b []byte, sync bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.app[name]
	if !ok {
		var err error
		if f, err = os.OpenFile(filepath.Join(d.dir, name), os.O_WRONLY|os.O_APPEND, 0); err != nil {
			return err
		}
		d.app[name] = f
	}
	if _, err := f.Write(b); err != nil {
		d.closeApp(name)
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			d.closeApp(name)
			return err
		}
	}
	return nil
}

func (d *dirFiles) get(name string) ([]byte, error) { return os.ReadFile(filepath.Join(d.dir, name)) }

func (d *dirFiles) remove(name string) error {
	d.mu.Lock()
	d.closeApp(name)
	d.mu.Unlock()
	if err := os.Remove(filepath.Join(d.dir, name)); err != nil {
		return err
	}
	return d.syncDir()
}

func (d *dirFiles) rename(from, to string) error {
	if _, err := os.Lstat(filepath.Join(d.dir, to)); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", to, fs.ErrExist)
	}
	d.mu.Lock()
	d.closeApp(from)
	d.mu.Unlock()
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

func (m *memFiles) appendTo(name string, b []byte, _ bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.m[name]
	if !ok {
		return fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	m.m[name] = append(old, b...)
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
	Pending []string // their apply ids, in apply order
	Legacy  int      // of which are version 1 files (no checksum to check)
	State   string   // "absent", "sound", or what else was found of it
	Damaged []string // "FILE: why" (for the log, "outbox.log: line N (byte O): why"), a line each: the agent passes them over when it next opens its outbox
	Aside   []string // files passed over before (NAME.damaged), never read
}

// CheckOutbox reads the outbox directory dir as the agent does, checksums
// included (its log, and the legacy files of an outbox an upgraded agent
// has not opened yet), and says what is damaged, without moving or
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
		if strings.Contains(n, damagedSuffix) {
			c.Aside = append(c.Aside, n)
		}
	}
	checkLegacy(&c, d, names)
	if slices.Contains(names, logName) {
		b, err := d.get(logName)
		if err != nil {
			return c, fmt.Errorf("agent: check outbox %s: %w", dir, err)
		}
		v := readLog(b)
		c.Reports += len(v.pending)
		for _, e := range v.pending {
			c.Pending = append(c.Pending, e.Report.Outcome.ApplyID)
		}
		for _, dmg := range v.damage {
			c.Damaged = append(c.Damaged, fmt.Sprintf("%s: %s", logName, dmg))
		}
		switch {
		case v.hasState:
			c.State = "sound"
		case v.lostLast:
			c.State = "absent: a damaged record comes after the last one (read as if absent)"
		}
	}
	return c, nil
}
