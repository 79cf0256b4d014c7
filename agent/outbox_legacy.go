package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/google/uuid"

	"meshplane/internal/crcframe"
)

// The legacy format, versions 1 and 2 (before the log, see outbox.go): a
// directory of files, read once by an upgraded agent, which moves what it
// holds into the log (importLegacy) and removes them:
//
//	DIR/state.json             the agent's State: {"version":2,"made":[paths],
//	                           "last":{"declaration","held_in","held":[...]}}
//	                           ("last" added; a file without it refers to nothing)
//	DIR/report-SSSSSSSSSSSSSSSSSSSS.json
//	                           one kept report: {"version":2,"seq":S,"report":{...}}
//	                           where S (20 digits, from 1) is its place in apply order
//
// Each file is its JSON (indented), then a last line "crc32c XXXXXXXX": the
// CRC-32C (Castagnoli) of every byte before that line, in hex. Version 1
// files (written before the checksum) have no such line and are read as
// they are; a version-2 file without it, or whose checksum fails, or that
// does not decode, is damaged: it is moved aside (NAME.damaged, renamed,
// nothing deleted) and logged, as it always was.

const (
	entryVersion  = 2 // with the checksum line
	legacyVersion = 1 // without it
	statePrefix   = "state.json"
	entryPrefix   = "report-"
	entrySuffix   = ".json"
	damagedSuffix = ".damaged"
)

// seal appends to body (ending in a newline) its checksum line
// (crcframe.Seal).
func seal(body []byte) []byte { return crcframe.Seal(body) }

// unseal splits b into its body and checksum line and checks it
// (crcframe.Unseal). A file without a checksum line is returned whole,
// sealed false (version 1).
func unseal(b []byte) (body []byte, sealed bool, err error) {
	body, sealed, err = crcframe.Unseal(b)
	if err != nil {
		return nil, sealed, fmt.Errorf("%w: %w", err, ErrDamaged)
	}
	return body, sealed, nil
}

// checkVersion checks a decoded file's version against whether it was
// sealed: version 2 files carry their checksum, version 1 files do not.
func checkVersion(v int, sealed bool) error {
	switch {
	case sealed && v != entryVersion:
		return fmt.Errorf("version %d with a checksum, want %d: %w", v, entryVersion, ErrDamaged)
	case !sealed && v == entryVersion:
		return fmt.Errorf("version %d without its checksum line (cut short?): %w", v, ErrDamaged)
	case !sealed && v != legacyVersion:
		return fmt.Errorf("version %d, want %d: %w", v, entryVersion, ErrDamaged)
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
// ignored; anything else is ErrDamaged.
func decodeEntry(b []byte) (entry, error) {
	body, sealed, err := unseal(b)
	if err != nil {
		return entry{}, err
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&e); err != nil {
		return entry{}, fmt.Errorf("%v: %w", err, ErrDamaged)
	}
	if dec.More() {
		return entry{}, fmt.Errorf("more than one JSON value: %w", ErrDamaged)
	}
	if err := checkVersion(e.Version, sealed); err != nil {
		return entry{}, err
	}
	r := e.Report.Outcome
	switch {
	case e.Seq == 0:
		return entry{}, fmt.Errorf("seq missing: %w", ErrDamaged)
	case r.Node == "":
		return entry{}, fmt.Errorf("report.node missing: %w", ErrDamaged)
	case r.Declaration == "":
		return entry{}, fmt.Errorf("report.declaration missing: %w", ErrDamaged)
	case e.Report.Attempts < 0:
		return entry{}, fmt.Errorf("report.attempts %d: %w", e.Report.Attempts, ErrDamaged)
	}
	if id, err := uuid.Parse(r.ApplyID); err != nil || id == uuid.Nil {
		return entry{}, fmt.Errorf("report.apply_id %q: not a UUID: %w", r.ApplyID, ErrDamaged)
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
		return State{}, fmt.Errorf("%v: %w", err, ErrDamaged)
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

func isLegacyName(n string) bool {
	return n == statePrefix || (strings.HasPrefix(n, entryPrefix) && strings.HasSuffix(n, entrySuffix))
}

// legacy is what a directory in the legacy format holds.
type legacy struct {
	names    []string // every legacy file, sound or not (removed once imported)
	entries  []entry  // the sound reports, in seq order
	state    State
	hasState bool
}

// readLegacy reads the legacy files of o.files. A damaged one is passed
// over as the legacy format always did: renamed NAME.damaged (so it is not
// among names: nothing is deleted) and logged.
func (o *Outbox) readLegacy() (legacy, error) {
	var l legacy
	names, err := o.files.list()
	if err != nil {
		return l, fmt.Errorf("list: %w", err)
	}
	for _, n := range names {
		if !isLegacyName(n) {
			continue
		}
		b, err := o.files.get(n)
		if err != nil {
			return l, fmt.Errorf("read %s: %w", n, err)
		}
		if n == statePrefix {
			st, err := decodeState(b)
			if err != nil {
				if err := o.passOverFile(n, err, "read as if absent: the directories this agent made are found again on an adopted node "+
					"(held, never touched, until their module is taken; nothing is removed), and the next report is in full"); err != nil {
					return l, err
				}
				continue
			}
			l.state, l.hasState = st, true
			l.names = append(l.names, n)
			continue
		}
		e, err := decodeEntry(b)
		if err == nil && n != entryName(e.Seq) {
			err = fmt.Errorf("holds seq %d: %w", e.Seq, ErrDamaged)
		}
		if err != nil {
			if err := o.passOverFile(n, err, "its report is not delivered; the next apply reports anew"); err != nil {
				return l, err
			}
			continue
		}
		l.entries = append(l.entries, e)
		l.names = append(l.names, n)
	}
	sort.Slice(l.entries, func(i, j int) bool { return l.entries[i].Seq < l.entries[j].Seq })
	return l, nil
}

// passOverFile moves the damaged file name aside (NAME.damaged, or
// NAME.damaged-N when taken), so that nothing is deleted and it is never
// read again, and logs it with why and what follows (lost). It fails
// only if the file cannot be moved: then it is not passed over.
func (o *Outbox) passOverFile(name string, why error, lost string) error {
	to := o.asideName(name)
	if err := o.files.rename(name, to); err != nil {
		return fmt.Errorf("%s is damaged (%v), and moving it aside failed: %w", name, why, err)
	}
	o.passed++
	o.log.Error("agent: outbox: passed over a damaged file", "outbox", o.where, "file", name, "reason", why.Error(), "moved_to", to, "lost", lost)
	return nil
}

// asideName is the first of NAME.damaged, NAME.damaged-2, ... not taken.
func (o *Outbox) asideName(name string) string {
	to := name + damagedSuffix
	for i := 2; ; i++ {
		if _, err := o.files.get(to); errors.Is(err, fs.ErrNotExist) {
			return to
		}
		to = fmt.Sprintf("%s%s-%d", name, damagedSuffix, i)
	}
}

// checkLegacy is CheckOutbox's reading of the legacy files of an outbox
// not yet opened by an upgraded agent.
func checkLegacy(c *OutboxCheck, d *dirFiles, names []string) {
	for _, n := range names {
		switch {
		case n == statePrefix:
			b, err := d.get(n)
			if err == nil {
				_, err = decodeState(b)
			}
			switch _, sealed, _ := unseal(b); {
			case err != nil:
				c.Damaged = append(c.Damaged, fmt.Sprintf("%s: %v", n, err))
			case sealed:
				c.State = "sound (state.json, version 2: moved into the log when the agent next opens its outbox)"
			default:
				c.State = "sound, version 1 (no checksum to check)"
			}
		case isLegacyName(n):
			b, err := d.get(n)
			var e entry
			if err == nil {
				e, err = decodeEntry(b)
			}
			if err == nil && n != entryName(e.Seq) {
				err = fmt.Errorf("holds seq %d: %w", e.Seq, ErrDamaged)
			}
			if err != nil {
				c.Damaged = append(c.Damaged, fmt.Sprintf("%s: %v", n, err))
				continue
			}
			c.Reports++
			c.Pending = append(c.Pending, e.Report.Outcome.ApplyID)
			if e.Version == legacyVersion {
				c.Legacy++
			}
		}
	}
}
