package snapstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections"
)

// ErrTimelineDB means timeline.db could not be used: it is damaged (the
// error wraps events.ErrDamaged too), of another format version, or could
// not be read or written. It is a cache: the caller passes it over and
// rebuilds it from the event store.
var ErrTimelineDB = errors.New("snapstore: timeline.db unusable")

// dbVersion is timeline.db's format: "2" since every entry carries its
// checksum, "3" since an apply's entry carries its held list. A file of
// another version is replaced by an empty one.
const dbVersion = "3"

var (
	bMeta    = []byte("meta")
	bEntries = []byte("entries")
	bCounts  = []byte("counts")
	bTime    = []byte("time")
	indexes  = [][]byte{[]byte("node"), []byte("type"), []byte("module"), []byte("resource")}
	kVersion = []byte("version")
	kPos     = []byte("position")
	kOrdered = []byte("ordered")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// damagedf is an error saying timeline.db is damaged.
func damagedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %w", ErrTimelineDB, fmt.Sprintf(format, args...), events.ErrDamaged)
}

// unusable wraps err, from bbolt or the file, as ErrTimelineDB (err says
// whether it is damage).
func unusable(err error) error {
	if err == nil || errors.Is(err, ErrTimelineDB) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTimelineDB, err)
}

// encodeRecord is r as entries stores it under key: its JSON, then the
// CRC-32C (Castagnoli) of key and JSON, 4 bytes big-endian. The key is in
// the checksum so that a record read under another key is damage too.
func encodeRecord(key []byte, r projections.EntryRecord) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, b)
	return binary.BigEndian.AppendUint32(b, sum), nil
}

// decodeRecord decodes v, stored under key (a position) in entries, and
// checks it: its checksum, its JSON, and that it is the entry at key.
// Anything else is an error wrapping ErrTimelineDB and events.ErrDamaged.
func decodeRecord(key, v []byte) (projections.EntryRecord, error) {
	var r projections.EntryRecord
	if len(key) != 8 {
		return r, damagedf("entries: key %x is not a position", key)
	}
	pos := binary.BigEndian.Uint64(key)
	if len(v) < 4 {
		return r, damagedf("entry at %d: %d bytes", pos, len(v))
	}
	body := v[:len(v)-4]
	if sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, body); sum != binary.BigEndian.Uint32(v[len(v)-4:]) {
		return r, damagedf("entry at %d: checksum mismatch", pos)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return projections.EntryRecord{}, damagedf("entry at %d: %v", pos, err)
	}
	if r.Entry.Position != pos {
		return projections.EntryRecord{}, damagedf("entry at %d says position %d", pos, r.Entry.Position)
	}
	return r, nil
}

// namesOf are the names en is indexed under, per index (in the order of
// indexes), each once.
func namesOf(en projections.Entry) [4][]string {
	var out [4][]string
	for i, names := range [][]string{{en.Node}, {en.Type}, en.Modules, en.Resources} {
		for _, n := range names {
			if n != "" && !slices.Contains(out[i], n) {
				out[i] = append(out[i], n)
			}
		}
	}
	return out
}

// TimelineDB is the timeline kept in a bbolt file (see the package doc).
// It is safe for concurrent use (bbolt's transactions). Every call into
// bbolt runs under boltstore's guard: damage is an error wrapping
// ErrTimelineDB and events.ErrDamaged, never a panic or a fault.
type TimelineDB struct {
	f *boltstore.File
	// Replaced is the damage, or the other format version, of the file
	// OpenTimelineDB found and replaced by an empty one (removed, not
	// moved aside: it is a cache); nil if none was.
	Replaced error
	// Made says OpenTimelineDB made the file, or replaced it: it is
	// empty.
	Made bool
}

// OpenTimelineDB opens (creating) the timeline index at path, holding its
// lock until Close. The file is checked before bbolt reads it (its meta
// pages, its length, its freelist: boltstore.OpenFile); one that is
// damaged there, or of another format version, is removed while its lock
// is held and replaced by an empty one (Replaced says why).
func OpenTimelineDB(path string) (*TimelineDB, error) {
	f, err := boltstore.OpenFile(path, boltstore.FileOptions{LockTimeout: lockTimeout, Replace: true})
	if err != nil {
		return nil, unusable(fmt.Errorf("snapstore: open %s: %w", path, err))
	}
	d := &TimelineDB{f: f, Replaced: f.Replaced, Made: f.Check == (boltstore.FileCheck{})}
	var version []byte
	var empty bool
	err = f.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		k, _ := tx.Cursor().First()
		empty = k == nil
		if m != nil {
			version = bytes.Clone(m.Get(kVersion))
		}
		return nil
	})
	switch {
	case err != nil:
		return d.replace(err)
	case empty:
		if err := f.Update(d.init); err != nil {
			d.Close()
			return nil, unusable(fmt.Errorf("snapstore: open %s: %w", path, err))
		}
		d.Made = true
		return d, nil
	case string(version) != dbVersion:
		return d.replace(fmt.Errorf("%w: format %q, this build writes %q", ErrTimelineDB, version, dbVersion))
	}
	return d, nil
}

// replace removes d's file, while d holds its lock, and opens an empty one
// in its place, then closes d. why says what was wrong with it.
func (d *TimelineDB) replace(why error) (*TimelineDB, error) {
	path := d.f.Path()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.Close()
		return nil, unusable(fmt.Errorf("snapstore: replace %s: %w", path, err))
	}
	n, err := OpenTimelineDB(path)
	d.Close()
	if err != nil {
		return nil, err
	}
	n.Replaced, n.Made = unusable(why), true
	return n, nil
}

// Replace empties the index: it removes the file while holding its lock
// and makes an empty one in its place (faster than emptying a large file,
// and safe on a damaged one). It returns the new TimelineDB; d is closed.
func (d *TimelineDB) Replace() (*TimelineDB, error) {
	n, err := d.replace(nil)
	if n != nil {
		n.Replaced = nil
	}
	return n, err
}

// Close releases the file (unless bbolt panicked in a write: then it is
// left to the process's exit, see boltstore.File).
func (d *TimelineDB) Close() error { return d.f.Close() }

func (d *TimelineDB) init(tx *bolt.Tx) error {
	for _, b := range append([][]byte{bMeta, bEntries, bCounts, bTime}, indexes...) {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	m := tx.Bucket(bMeta)
	if err := m.Put(kVersion, []byte(dbVersion)); err != nil {
		return err
	}
	if err := m.Put(kOrdered, []byte("1")); err != nil {
		return err
	}
	return m.Put(kPos, be64(0))
}

// meta returns timeline.db's meta bucket, or damage.
func meta(tx *bolt.Tx) (*bolt.Bucket, error) {
	m := tx.Bucket(bMeta)
	if m == nil {
		return nil, damagedf("no meta bucket")
	}
	return m, nil
}

// Position is the last position flushed.
func (d *TimelineDB) Position() (uint64, error) {
	var pos uint64
	err := d.f.View(func(tx *bolt.Tx) error {
		m, err := meta(tx)
		if err != nil {
			return err
		}
		v := m.Get(kPos)
		if len(v) != 8 {
			return damagedf("position of %d bytes", len(v))
		}
		pos = binary.BigEndian.Uint64(v)
		return nil
	})
	if err != nil {
		return 0, unusable(fmt.Errorf("snapstore: timeline position: %w", err))
	}
	return pos, nil
}

// Flush writes recs, the entries folded up to pos, in one transaction.
// ordered is the timeline's Ordered after folding them.
func (d *TimelineDB) Flush(recs []projections.EntryRecord, pos uint64, ordered bool) error {
	err := d.f.Update(func(tx *bolt.Tx) error {
		ents, tm, counts := tx.Bucket(bEntries), tx.Bucket(bTime), tx.Bucket(bCounts)
		if ents == nil || tm == nil || counts == nil {
			return damagedf("a bucket is missing")
		}
		ents.FillPercent, tm.FillPercent = 1, 1 // appended in key order
		idx := make([]*bolt.Bucket, len(indexes))
		for i, name := range indexes {
			if idx[i] = tx.Bucket(name); idx[i] == nil {
				return damagedf("bucket %s is missing", name)
			}
		}
		added := map[string]uint64{}
		var key []byte
		for _, r := range recs {
			en := r.Entry
			p, at := be64(en.Position), timeKey(en.At)
			b, err := encodeRecord(p, r)
			if err != nil {
				return err
			}
			if err := ents.Put(p, b); err != nil {
				return err
			}
			if err := tm.Put(append(slices.Clip(at), p...), nil); err != nil {
				return err
			}
			for i, names := range namesOf(en) {
				for _, n := range names {
					key = append(append(append(key[:0], n...), 0), p...)
					if err := idx[i].Put(key, at); err != nil {
						return err
					}
					added[string(indexes[i])+"\x00"+n]++
				}
			}
		}
		for k, n := range added {
			var was uint64
			if v := counts.Get([]byte(k)); len(v) == 8 {
				was = binary.BigEndian.Uint64(v)
			}
			if err := counts.Put([]byte(k), be64(was+n)); err != nil {
				return err
			}
		}
		m, err := meta(tx)
		if err != nil {
			return err
		}
		o := []byte("0")
		if ordered {
			o = []byte("1")
		}
		if err := m.Put(kOrdered, o); err != nil {
			return err
		}
		return m.Put(kPos, be64(pos))
	})
	if err != nil {
		return unusable(fmt.Errorf("snapstore: flush timeline to %d: %w", pos, err))
	}
	return nil
}

// Query returns the entries f selects, in position order, without churn
// marks (Local.Timeline adds them): Timeline.Query's answer. Each entry it
// reads is checked (its checksum; through an index, that it is of that
// name and time; positions in order): damage is an error wrapping
// ErrTimelineDB and events.ErrDamaged, never a short or wrong answer from
// what it read.
func (d *TimelineDB) Query(f projections.Filter) ([]projections.Entry, error) {
	var out []projections.Entry
	err := d.f.View(func(tx *bolt.Tx) error {
		m, err := meta(tx)
		if err != nil {
			return err
		}
		ents, tmb, counts := tx.Bucket(bEntries), tx.Bucket(bTime), tx.Bucket(bCounts)
		if ents == nil || tmb == nil || counts == nil {
			return damagedf("a bucket is missing")
		}
		ordered := string(m.Get(kOrdered)) == "1"
		// entryAt is the entry at position key, checked.
		entryAt := func(key []byte) (projections.Entry, error) {
			v := ents.Get(key)
			if v == nil {
				return projections.Entry{}, damagedf("no entry at position %d", binary.BigEndian.Uint64(key))
			}
			r, err := decodeRecord(key, v)
			return r.Restore(), err
		}
		// timeAt is the position of the first entry at or after t (0:
		// none), read from time and checked against the entry.
		timeAt := func(t time.Time) (uint64, error) {
			want := timeKey(t)
			k, _ := tmb.Cursor().Seek(want)
			if k == nil {
				return 0, nil
			}
			if len(k) != 16 || bytes.Compare(k[:8], want) < 0 {
				return 0, damagedf("time: a seek to %x found key %x", want, k)
			}
			en, err := entryAt(k[8:])
			if err != nil {
				return 0, err
			}
			if !bytes.Equal(timeKey(en.At), k[:8]) {
				return 0, damagedf("time: key %x names position %d, whose entry is at another time", k, en.Position)
			}
			return en.Position, nil
		}
		lo, hi := f.After, f.Before // exclusive; hi 0 is open
		if ordered {
			if !f.From.IsZero() {
				p, err := timeAt(f.From)
				if err != nil || p == 0 {
					return err // p 0: nothing at or after From
				}
				lo = max(lo, p-1)
			}
			if !f.To.IsZero() {
				p, err := timeAt(f.To)
				if err != nil {
					return err
				}
				if p != 0 && (hi == 0 || p < hi) {
					hi = p
				}
			}
		}
		// The index to walk: that of the filter's least frequent name.
		var walk *bolt.Bucket
		var name []byte
		wi, wname := -1, string(bEntries)
		best := ^uint64(0)
		for i, n := range []string{f.Node, f.Type, f.Module, f.Resource} {
			if n == "" {
				continue
			}
			var c uint64
			if v := counts.Get([]byte(string(indexes[i]) + "\x00" + n)); len(v) == 8 {
				c = binary.BigEndian.Uint64(v)
			}
			if c < best {
				best, wi, wname, name = c, i, string(indexes[i]), []byte(n)
				if walk = tx.Bucket(indexes[i]); walk == nil {
					return damagedf("bucket %s is missing", indexes[i])
				}
			}
		}
		if best == 0 {
			return nil
		}
		if walk == nil {
			walk = ents
		}
		// keyOf splits a key of walk into its name (nil in entries) and
		// position.
		keyOf := func(k []byte) ([]byte, uint64, error) {
			if walk == ents {
				if len(k) != 8 {
					return nil, 0, damagedf("entries: key %x is not a position", k)
				}
				return nil, binary.BigEndian.Uint64(k), nil
			}
			if len(k) < 9 || k[len(k)-9] != 0 {
				return nil, 0, damagedf("%s: key %q is not a name and a position", wname, k)
			}
			return k[:len(k)-9], binary.BigEndian.Uint64(k[len(k)-8:]), nil
		}
		// read is the entry key k and value v of walk stand for, checked:
		// in entries, its checksum (bound to its key); in an index, that
		// the entry at its position is of its name and at its time.
		read := func(k, v []byte) (projections.Entry, error) {
			if walk == ents {
				r, err := decodeRecord(k, v)
				return r.Restore(), err
			}
			n, pos, _ := keyOf(k)
			if len(v) != 8 {
				return projections.Entry{}, damagedf("%s %q: the time of position %d is %d bytes", wname, n, pos, len(v))
			}
			en, err := entryAt(k[len(k)-8:])
			if err != nil {
				return en, err
			}
			if !slices.Contains(namesOf(en)[wi], string(n)) || !bytes.Equal(v, timeKey(en.At)) {
				return en, damagedf("%s %q names position %d, whose entry is not of it or not at that time", wname, n, pos)
			}
			return en, nil
		}
		// Every key the walk reads is checked, the one that ends it too
		// (a damaged key that looked past the range would end it early),
		// and positions must go one way.
		key := func(pos uint64) []byte {
			if walk == ents {
				return be64(pos)
			}
			return append(append(slices.Clip(name), 0), be64(pos)...)
		}
		var last uint64
		step := func(k, v []byte) (bool, error) {
			n, pos, err := keyOf(k)
			if err != nil {
				return false, err
			}
			if !bytes.Equal(n, name) || f.Forward && hi > 0 && pos >= hi || !f.Forward && pos <= lo {
				if _, err := read(k, v); err != nil {
					return false, err
				}
				return false, nil // past the range
			}
			if last != 0 && (f.Forward && pos <= last || !f.Forward && pos >= last) {
				return false, damagedf("%s: position %d after %d", wname, pos, last)
			}
			last = pos
			if walk != ents && !ordered && len(v) == 8 && !inTime(v, f) {
				return true, nil
			}
			en, err := read(k, v)
			if err != nil {
				return false, err
			}
			if f.Selects(en) {
				out = append(out, en)
			}
			return f.Limit <= 0 || len(out) < f.Limit, nil
		}
		c := walk.Cursor()
		if f.Forward {
			start := key(lo + 1)
			k, v := c.Seek(start)
			if k != nil && bytes.Compare(k, start) < 0 {
				return damagedf("%s: a seek to %x found key %x, before it", wname, start, k)
			}
			for ; k != nil; k, v = c.Next() {
				if more, err := step(k, v); err != nil || !more {
					return err
				}
			}
			return nil
		}
		end := ^uint64(0)
		if hi > 0 {
			end = hi
		}
		endKey := key(end)
		k, _ := c.Seek(endKey)
		var v []byte
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		if k != nil && bytes.Compare(k, endKey) >= 0 {
			return damagedf("%s: the key before %x is %x, after it", wname, endKey, k)
		}
		for ; k != nil; k, v = c.Prev() {
			if more, err := step(k, v); err != nil || !more {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, unusable(fmt.Errorf("snapstore: timeline query: %w", err))
	}
	if !f.Forward {
		slices.Reverse(out)
	}
	return out, nil
}

func inTime(v []byte, f projections.Filter) bool {
	if !f.From.IsZero() && bytes.Compare(v, timeKey(f.From)) < 0 {
		return false
	}
	if !f.To.IsZero() && bytes.Compare(v, timeKey(f.To)) >= 0 {
		return false
	}
	return true
}

func be64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// timeKey is t as 8 bytes that sort as times do.
func timeKey(t time.Time) []byte { return be64(uint64(t.UnixNano()) ^ 1<<63) }
