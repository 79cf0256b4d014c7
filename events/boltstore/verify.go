package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"meshplane/events"
)

// Report is what Verify checked, and the damage it found.
type Report struct {
	Path   string
	Size   int64  // bytes
	Pages  int    // bbolt pages walked
	Layout uint64 // 1: records may lack a checksum; 2: all carry one; 3: and are chained
	Head   uint64
	// ChainStart is the first chained position (0: none is); Chained
	// counts the records whose chain value matched its recomputation.
	ChainStart uint64
	Chained    int

	Records       int // records read, checked and decoded
	Checksummed   int // of which carry a checksum (format 3)
	Streams       int
	StreamEntries int
	IDs           int

	// Checked says, a line each, what was checked (and passed or not).
	Checked []string
	// Damage says, a line each, what is damaged: at most MaxDamage lines;
	// MoreDamage counts those left out.
	Damage     []string
	MoreDamage int
}

// MaxDamage bounds Report.Damage.
const MaxDamage = 100

// OK reports whether Verify found no damage.
func (r *Report) OK() bool { return len(r.Damage) == 0 }

func (r *Report) damage(format string, args ...any) {
	if len(r.Damage) >= MaxDamage {
		r.MoreDamage++
		return
	}
	r.Damage = append(r.Damage, fmt.Sprintf(format, args...))
}

func (r *Report) checked(format string, args ...any) {
	r.Checked = append(r.Checked, fmt.Sprintf(format, args...))
}

// Verify checks the store file at path, read-only (it takes the shared lock,
// so it waits for no reader but fails with ErrLocked while a writer holds
// the file): bbolt's structure, walked page by page; bbolt's own consistency
// check (tx.Check); every record's checksum, decoding and position; the
// stream index and the id index against the records, entry by entry; and
// the head. Damage goes into the report; the error is for what stopped
// Verify from looking (no such file, locked, ctx).
func Verify(ctx context.Context, path string, opts ...Option) (*Report, error) {
	cfg := config{lockTimeout: DefaultLockTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	r := &Report{Path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("boltstore: verify %s: %w", path, err)
	}
	r.Size = fi.Size()
	if r.Size == 0 {
		r.damage("the file is empty (0 bytes)")
		return r, nil
	}
	var db *bolt.DB
	err = guard(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: cfg.lockTimeout, ReadOnly: true})
		return err
	})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("boltstore: verify %s: %w (gave up after %v)", path, ErrLocked, cfg.lockTimeout)
		}
		r.damage("bbolt cannot open the file: %v", err)
		return r, nil
	}
	defer closeBolt(db)

	// The walk first: what follows reads pages through bbolt, which is only
	// safe once every page it can reach is known to be in the file.
	r.Pages, err = checkStructure(db, path)
	if err != nil {
		if !errors.Is(err, events.ErrDamaged) {
			return nil, fmt.Errorf("boltstore: verify %s: %w", path, err)
		}
		r.damage("bbolt structure: %s", trimDamaged(err))
		r.checked("bbolt structure: damaged; nothing else can be read safely")
		return r, nil
	}
	r.checked("bbolt structure: %d pages walked, each in the file and reached once", r.Pages)

	err = guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			n := 0
			for err := range tx.Check() {
				n++
				r.damage("bbolt consistency check: %v", err)
			}
			if n == 0 {
				r.checked("bbolt consistency check (tx.Check): ok")
			} else {
				r.checked("bbolt consistency check (tx.Check): %d problem(s)", n)
			}
			return verifyStore(ctx, tx, r)
		})
	})
	switch {
	case errors.Is(err, events.ErrDamaged):
		r.damage("%v", err)
	case err != nil:
		return nil, fmt.Errorf("boltstore: verify %s: %w", path, err)
	}
	return r, nil
}

// verifyStore checks the layout, every record and both indexes in tx.
func verifyStore(ctx context.Context, tx *bolt.Tx, r *Report) error {
	layout, head, ok := verifyMeta(tx, r)
	if !ok {
		return nil
	}
	evb, sb, idb := tx.Bucket(bucketEvents), tx.Bucket(bucketStreams), tx.Bucket(bucketIDs)
	for name, b := range map[string]*bolt.Bucket{"events": evb, "streams": sb, "ids": idb} {
		if b == nil {
			r.damage("bucket %s missing", name)
		}
	}
	if evb == nil || sb == nil || idb == nil {
		return nil
	}
	start, err := chainStart(tx, layout)
	if err != nil {
		r.damage("%s", trimDamaged(err))
		return nil
	}
	r.ChainStart = start
	s := &Store{checked: layout >= layoutChecksummed, chainStart: start}
	recs, err := verifyRecords(ctx, evb, tx.Bucket(bucketChain), s, layout, r)
	if err != nil {
		return err
	}
	verifyStreamIndex(sb, s, recs, r)
	verifyIDIndex(idb, recs, r)
	if head != uint64(len(recs)) {
		r.damage("meta head is %d, the last position is %d", head, len(recs))
	}
	r.checked("head: %d, the last position", head)
	return nil
}

// verifyMeta reads the meta bucket's layout and head into r; not ok when
// there is no store to read past it (no meta bucket, an unknown layout).
func verifyMeta(tx *bolt.Tx, r *Report) (layout, head uint64, ok bool) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		r.damage("bucket %s missing: not a meshplane store", bucketMeta)
		return 0, 0, false
	}
	layout, ok = u64val(meta.Get(metaLayout))
	if !ok || (layout != layoutPlain && layout != layoutChecksummed && layout != layoutChained) {
		r.damage("meta layout is %x, want %d to %d", meta.Get(metaLayout), layoutPlain, layoutChained)
		return 0, 0, false
	}
	r.Layout = layout
	head, ok = u64val(meta.Get(metaHead))
	if !ok {
		r.damage("meta head is %x, not 8 bytes", meta.Get(metaHead))
	}
	r.Head = head
	return layout, head, true
}

// verifiedRecord is a record as verifyRecords kept it, by position: its
// stream, version and id, for the indexes to be checked against.
type verifiedRecord struct {
	stream  string
	version uint64
	id      [16]byte
	ok      bool // decoded
	streams int  // stream index entries pointing at it
	ids     int  // id index entries pointing at it
}

// verifyRecords reads every record in position order, each decoded, at
// its position and (from the chain's start) matching its chain value;
// recs[p-1] is position p, a zero one when missing or damaged.
func verifyRecords(ctx context.Context, evb, chain *bolt.Bucket, s *Store, layout uint64, r *Report) ([]verifiedRecord, error) {
	var recs []verifiedRecord
	names := map[string]string{}
	cc := chainCheck{s: s, chain: chain}
	c := evb.Cursor()
	var want uint64 = 1
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(recs)%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		pos, ok := u64val(k)
		if !ok {
			r.damage("events: key %x is not 8 bytes", k)
			continue
		}
		if pos < want {
			r.damage("events: key %d out of order after %d", pos, want-1)
			continue
		}
		if pos > want {
			r.damage("positions %d..%d: missing (positions are dense)", want, pos-1)
			if pos-want > 1<<20 {
				r.damage("events: key %d far past position %d: the rest is not read", pos, want-1)
				break
			}
			for ; want < pos; want++ {
				recs = append(recs, verifiedRecord{})
			}
		}
		want++
		e, err := s.decodeAt(k, v, pos)
		if err != nil {
			r.damage("%v", trimDamaged(err))
			recs = append(recs, verifiedRecord{})
			continue
		}
		r.Records++
		if events.RecordFormat(v) == events.RecordFormatChecked {
			r.Checksummed++
		}
		cc.check(pos, v, r)
		name, ok := names[e.Stream]
		if !ok {
			names[e.Stream], name = e.Stream, e.Stream
		}
		recs = append(recs, verifiedRecord{stream: name, version: e.Version, id: e.ID, ok: true})
	}
	if bad := len(recs) - r.Records; bad > 0 {
		r.checked("records: %d at positions 1..%d: %d damaged; %d decoded and at their position, %d of them with a matching checksum (layout %d)",
			len(recs), len(recs), bad, r.Records, r.Checksummed, layout)
	} else {
		r.checked("records: %d at positions 1..%d, each decoded and at its position; %d with a checksum, all matching it (layout %d)",
			r.Records, len(recs), r.Checksummed, layout)
	}
	if start := s.chainStart; start != 0 {
		if n := chain.Stats().KeyN; uint64(n) != uint64(len(recs))+1-min(start, uint64(len(recs))+1) {
			r.damage("chain: %d values, for positions %d..%d", n, start, len(recs))
		}
		r.checked("chain: from position %d, %d values each recomputed from its record and the one before", start, r.Chained)
	}
	return recs, nil
}

// chainCheck recomputes the chain value of each record from the chain's
// start, against the stored one; a break is reported once (every value
// after it differs too).
type chainCheck struct {
	s      *Store
	chain  *bolt.Bucket
	prev   events.Hash // the chain value of the last record read
	broken bool
}

func (cc *chainCheck) check(pos uint64, v []byte, r *Report) {
	if start := cc.s.chainStart; start == 0 || pos < start || cc.broken {
		return
	}
	stored, err := cc.s.chainAt(cc.chain, pos)
	switch {
	case err != nil:
		r.damage("%s", trimDamaged(err))
		cc.broken = true
	case stored != events.ChainRecord(cc.prev, v):
		r.damage("position %d: the record does not match its chain value: it, or the order or number of records before it, was changed since it was written", pos)
		cc.broken = true
	default:
		r.Chained++
		cc.prev = stored
	}
}

// recordAt is the record a position value of an index points at; not ok
// when it is no stored position.
func recordAt(recs []verifiedRecord, v []byte) (uint64, *verifiedRecord, bool) {
	p, ok := u64val(v)
	if !ok || p == 0 || p > uint64(len(recs)) {
		return p, nil, false
	}
	return p, &recs[p-1], true
}

// verifyStreamIndex checks the stream index: every stream's versions
// 1..n, each at the record of that stream and version, and every record
// pointed at once.
func verifyStreamIndex(sb *bolt.Bucket, s *Store, recs []verifiedRecord, r *Report) {
	sc := sb.Cursor()
	for name, v := sc.First(); name != nil; name, v = sc.Next() {
		if v != nil {
			r.damage("streams: key %q is not a bucket", name)
			continue
		}
		r.Streams++
		b := sb.Bucket(name)
		if _, err := s.streamVersion(b, string(name)); err != nil {
			r.damage("%s", trimDamaged(err))
		}
		var ver uint64
		vc := b.Cursor()
		for k, v := vc.First(); k != nil; k, v = vc.Next() {
			r.StreamEntries++
			got, ok := u64val(k)
			if !ok || got != ver+1 {
				r.damage("stream %s: key %x after version %d (versions are dense from 1)", name, k, ver)
				if ok {
					ver = got
				}
				continue
			}
			ver = got
			p, rc, ok := recordAt(recs, v)
			switch {
			case !ok:
				r.damage("stream %s version %d: points at %x, not a stored position", name, ver, v)
			case !rc.ok:
				rc.streams++ // already reported as a damaged record
			case rc.stream != string(name) || rc.version != ver:
				r.damage("stream %s version %d: points at position %d, which holds stream %s version %d", name, ver, p, rc.stream, rc.version)
			default:
				rc.streams++
			}
		}
	}
	for i := range recs {
		if recs[i].ok && recs[i].streams != 1 {
			r.damage("position %d (stream %s version %d): %d stream index entries point at it, want 1", i+1, recs[i].stream, recs[i].version, recs[i].streams)
		}
	}
	r.checked("stream index: %d streams, %d entries, each at the record of its stream and version", r.Streams, r.StreamEntries)
}

// verifyIDIndex checks the id index: every id at the record that has it,
// and every record pointed at once.
func verifyIDIndex(idb *bolt.Bucket, recs []verifiedRecord, r *Report) {
	ic := idb.Cursor()
	for k, v := ic.First(); k != nil; k, v = ic.Next() {
		r.IDs++
		p, rc, ok := recordAt(recs, v)
		switch {
		case len(k) != 16:
			r.damage("ids: key %x is not 16 bytes", k)
		case !ok:
			r.damage("id %x: points at %x, not a stored position", k, v)
		case !rc.ok:
			rc.ids++
		case !bytes.Equal(rc.id[:], k):
			r.damage("id %x: points at position %d, which holds id %x", k, p, rc.id)
		default:
			rc.ids++
		}
	}
	for i := range recs {
		if recs[i].ok && recs[i].ids != 1 {
			r.damage("position %d (stream %s version %d): %d id index entries point at it, want 1", i+1, recs[i].stream, recs[i].version, recs[i].ids)
		}
	}
	r.checked("id index: %d ids, each at the record with that id", r.IDs)
}

// trimDamaged drops the "stored data damaged: " prefix from err's text,
// which a line of a report already implies.
func trimDamaged(err error) string {
	return string(bytes.TrimPrefix([]byte(err.Error()), []byte(events.ErrDamaged.Error()+": ")))
}
