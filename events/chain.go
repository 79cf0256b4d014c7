package events

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The hash chain: every record a store keeps carries a chain value, so that
// a record changed, removed or moved after it was written is found, and,
// against a head kept off the host (an anchor), so is the removal of the
// newest records. It is a persisted format, defined here once for every
// store:
//
//	chain(p) = SHA-256( chain(p-1) || AppendRecord(nil, e_p) )
//
// e_p is the event at position p as stored (Version and Position set), and
// AppendRecord's bytes are its record (format 3, CRC-32C included; see
// record.go), which has exactly one encoding per event, so a store that
// keeps columns rather than records (pgstore, esdbstore) computes the same
// value as one that keeps the bytes (boltstore). chain(s-1) is 32 zero bytes
// for the first chained position s: 1 for a store created by a build that
// chains, the position after the head for an older store, whose records
// keep their format and their place and carry no chain value (Event.Chain
// zero). ChainVerifier says where the chain starts.
//
// The value is kept beside its record, not inside it (the record's bytes are
// what it covers): boltstore in a bucket of its own, pgstore in a column of
// the row, esdbstore in its position table, memstore beside the event. Each
// computes it in the transaction that assigns the position, from the
// previous position's value, so the chain has the order of the positions.
//
// The chain alone proves a store consistent with itself; anyone who
// rewrites a record and every value after it keeps it so, and a truncation
// of the newest records leaves a shorter, consistent chain. A head kept
// elsewhere (ChainHead.String, mesh store head) is what tells them apart.

// Hash is a chain value: a SHA-256 digest. The zero Hash is "none".
type Hash [sha256.Size]byte

// hashPrefix names the hash function in a Hash's text form.
const hashPrefix = "sha256:"

// IsZero reports whether h is the zero Hash (no chain value).
func (h Hash) IsZero() bool { return h == Hash{} }

// String returns "sha256:" and h in lower-case hex.
func (h Hash) String() string { return hashPrefix + hex.EncodeToString(h[:]) }

// MarshalText implements encoding.TextMarshaler: h.String().
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: ParseHash.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// ParseHash parses a Hash's String form ("sha256:" and 64 hex digits). An
// error wraps ErrInvalid.
func ParseHash(s string) (Hash, error) {
	var h Hash
	hx, ok := strings.CutPrefix(s, hashPrefix)
	if !ok || len(hx) != 2*len(h) || strings.ToLower(hx) != hx {
		return h, fmt.Errorf("events: chain value %q: want sha256: and 64 lower-case hex digits: %w", s, ErrInvalid)
	}
	if _, err := hex.Decode(h[:], []byte(hx)); err != nil {
		return Hash{}, fmt.Errorf("events: chain value %q: %v: %w", s, err, ErrInvalid)
	}
	return h, nil
}

// ChainRecord returns the chain value of the record rec (AppendRecord's
// bytes) following prev.
func ChainRecord(prev Hash, rec []byte) Hash {
	d := sha256.New()
	d.Write(prev[:])
	d.Write(rec)
	var h Hash
	d.Sum(h[:0])
	return h
}

// ChainOf returns the chain value of e (Version and Position set) following
// prev: ChainRecord of its record.
func ChainOf(prev Hash, e Event) Hash {
	var buf [512]byte
	return ChainRecord(prev, AppendRecord(buf[:0], e))
}

// ChainHead is the head of a store's chain: its last position, that
// position's chain value (zero when the record predates the chain, or the
// store is empty) and its event's time. Store.ChainHead returns it; its
// String is the line an operator keeps off the host, and the anchor that
// ChainVerifier checks a history against.
type ChainHead struct {
	Position uint64    `json:"position"`
	Chain    Hash      `json:"chain"`
	At       time.Time `json:"at"`
}

// headWord starts a ChainHead's line.
const headWord = "meshplane-head"

// String is the head as one line, with no space inside a field:
//
//	meshplane-head position=1234 chain=sha256:<64 hex> at=2026-09-29T22:46:00.123456789Z
//
// The fields are in this order, each once; ParseChainHead reads it back.
// The time is RFC 3339 with nanoseconds, in UTC ("-" for an empty store).
func (h ChainHead) String() string {
	at := "-"
	if !h.At.IsZero() {
		at = h.At.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s position=%d chain=%s at=%s", headWord, h.Position, h.Chain, at)
}

// ParseChainHead parses the line ChainHead.String writes (surrounding
// space ignored). An error wraps ErrInvalid and says what is wrong.
func ParseChainHead(line string) (ChainHead, error) {
	var h ChainHead
	bad := func(format string, args ...any) (ChainHead, error) {
		return ChainHead{}, fmt.Errorf("events: head line %q: %s: %w", line, fmt.Sprintf(format, args...), ErrInvalid)
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != headWord {
		return bad("want %s position=N chain=sha256:HEX at=TIME", headWord)
	}
	var ok bool
	var v [3]string
	for i, key := range [...]string{"position=", "chain=", "at="} {
		if v[i], ok = strings.CutPrefix(f[i+1], key); !ok {
			return bad("field %d is not %s...", i+2, key)
		}
	}
	p, err := strconv.ParseUint(v[0], 10, 64)
	if err != nil {
		return bad("position %q", v[0])
	}
	h.Position = p
	if h.Chain, err = ParseHash(v[1]); err != nil {
		return bad("%v", errors.Unwrap(err))
	}
	if v[2] != "-" {
		if h.At, err = time.Parse(time.RFC3339Nano, v[2]); err != nil {
			return bad("time %q", v[2])
		}
		h.At = h.At.UTC()
	}
	return h, nil
}

// ErrChainBroken means a history does not prove itself: a chain value
// that does not match its record (a record changed, removed or moved), a
// record with none after the chain started, or a history that disagrees
// with an anchor (rewritten at or before it, or cut short of it).
// ChainReport.Err wraps it with the first position at fault.
var ErrChainBroken = errors.New("hash chain broken")

// ChainBreak is where a history stops proving itself.
type ChainBreak struct {
	// Position is the first position not intact: the record whose chain
	// value fails, the anchor's position when only the anchor disagrees,
	// or the first position past the store's head when it falls short of
	// the anchor.
	Position uint64 `json:"position"`
	// Reason says what was found, for a person.
	Reason string `json:"reason"`
}

// ChainReport is what ChainVerifier found.
type ChainReport struct {
	// Start is the first chained position (0: no record carries a value).
	Start uint64 `json:"start"`
	// Checked is the last position read.
	Checked uint64 `json:"checked"`
	// Head is the last record read, as a head.
	Head ChainHead `json:"head"`
	// Anchor is the head checked against, if any; AnchorChecked says the
	// history reached its position and matched it there.
	Anchor        *ChainHead `json:"anchor,omitempty"`
	AnchorChecked bool       `json:"anchor_checked"`
	// Break is the first fault; nil when the history is intact.
	Break *ChainBreak `json:"break,omitempty"`
}

// Err is nil for an intact history, else an error wrapping ErrChainBroken
// that names the first position at fault.
func (r ChainReport) Err() error {
	if r.Break == nil {
		return nil
	}
	return fmt.Errorf("%w at position %d: %s", ErrChainBroken, r.Break.Position, r.Break.Reason)
}

// ChainVerifier checks a history read in position order from position 1:
// each record's chain value against its recomputation from the record and
// the value before it, the positions dense, and, with an anchor, that the
// history reaches the anchor's position with the anchor's value there. It
// stops at the first fault. It does no I/O: its caller reads the store.
type ChainVerifier struct {
	r    ChainReport
	prev Hash
}

// NewChainVerifier returns a verifier, checking against anchor if it is
// not nil.
func NewChainVerifier(anchor *ChainHead) *ChainVerifier {
	return &ChainVerifier{r: ChainReport{Anchor: anchor}}
}

// Add checks the next event, and reports whether the history is intact so
// far (once it is not, Add checks nothing more).
func (v *ChainVerifier) Add(e Event) bool {
	if v.r.Break != nil {
		return false
	}
	want := v.r.Checked + 1
	fail := func(p uint64, format string, args ...any) bool {
		v.r.Break = &ChainBreak{Position: p, Reason: fmt.Sprintf(format, args...)}
		return false
	}
	if e.Position != want {
		return fail(want, "position %d is missing: the next record read is at %d (removed, or reordered)", want, e.Position)
	}
	switch {
	case e.Chain.IsZero() && v.r.Start != 0:
		return fail(e.Position, "the record has no chain value, and the chain started at position %d", v.r.Start)
	case !e.Chain.IsZero():
		if v.r.Start == 0 {
			v.r.Start = e.Position
		}
		if got := ChainOf(v.prev, e); got != e.Chain {
			return fail(e.Position, "the record does not match its chain value (stored %s, computed %s): it, or the order or number of records before it, was changed since it was written",
				e.Chain, got)
		}
		v.prev = e.Chain
	}
	v.r.Checked = e.Position
	v.r.Head = ChainHead{Position: e.Position, Chain: e.Chain, At: e.At}
	if a := v.r.Anchor; a != nil && a.Position == e.Position {
		if a.Chain != e.Chain {
			return fail(e.Position, "the chain value here is %s, the anchor says %s: the history at or before position %d was rewritten since the anchor was taken (each record matches its stored value: they were recomputed)",
				e.Chain, a.Chain, e.Position)
		}
		v.r.AnchorChecked = true
	}
	return true
}

// Report ends the check and returns what was found. A history that ends
// before the anchor's position is a break at the first position past it:
// its newest records were removed.
func (v *ChainVerifier) Report() ChainReport {
	r := v.r
	if a := r.Anchor; r.Break == nil && a != nil && a.Position > r.Checked {
		r.Break = &ChainBreak{Position: r.Checked + 1, Reason: fmt.Sprintf(
			"the history ends at position %d, and the anchor is at position %d: positions %d to %d were removed (truncated)",
			r.Checked, a.Position, r.Checked+1, a.Position)}
	}
	return r
}
