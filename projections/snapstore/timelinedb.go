package snapstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
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
// checksum, "3" since an apply's entry carries its held list, "4" since it
// keeps positions and keys in blocks, and entries are rendered from the
// store's events. A file of
// another version is replaced by an empty one.
const dbVersion = "4"

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

// Flush writes keys, the entries folded up to pos, in one transaction: their
// records in entries blocks, a time key a block, and each name's positions
// appended to its last postings block and in new ones. ordered is the
// timeline's Ordered after folding them.
func (d *TimelineDB) Flush(keys []projections.EntryKeys, pos uint64, ordered bool) error {
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
		if err := putEntries(ents, tm, keys); err != nil {
			return err
		}
		for i, names := range postingsOf(keys) {
			for _, name := range slices.Sorted(maps.Keys(names)) {
				if err := appendPostings(idx[i], string(indexes[i]), []byte(name), names[name]); err != nil {
					return err
				}
				if err := addCount(counts, string(indexes[i])+"\x00"+name, len(names[name])); err != nil {
					return err
				}
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

// putEntries writes the records of keys in entries blocks, and a time key
// for each block.
func putEntries(ents, tm *bolt.Bucket, keys []projections.EntryKeys) error {
	rs := make([]rec, 0, entriesBlock)
	for start := 0; start < len(keys); start += entriesBlock {
		rs = rs[:0]
		for _, k := range keys[start:min(start+entriesBlock, len(keys))] {
			rs = append(rs, rec{pos: k.Position, at: k.At.UnixNano(), fold: k.Fold})
		}
		first := be64(rs[0].pos)
		if err := ents.Put(first, encodeEntries(rs)); err != nil {
			return err
		}
		if err := tm.Put(append(timeKey(keys[start].At), first...), nil); err != nil {
			return err
		}
	}
	return nil
}

// postingsOf is, per index, each name's positions among keys, ascending.
func postingsOf(keys []projections.EntryKeys) [4]map[string][]uint64 {
	var out [4]map[string][]uint64
	for i := range out {
		out[i] = map[string][]uint64{}
	}
	for _, k := range keys {
		for i, names := range projections.NamesOf(k) {
			for _, n := range names {
				out[i][n] = append(out[i][n], k.Position)
			}
		}
	}
	return out
}

// appendPostings appends ps (ascending, after every position b holds of
// name) to name's postings in b: its last block filled up, then new ones.
func appendPostings(b *bolt.Bucket, ix string, name []byte, ps []uint64) error {
	c := b.Cursor()
	if k, v := lastBlock(c, name, ^uint64(0)); k != nil {
		have, err := decodePostings(ix, k, v)
		if err != nil {
			return err
		}
		if last := have[len(have)-1]; last >= ps[0] {
			return damagedf("%s %q: position %d appended after %d", ix, name, ps[0], last)
		}
		if room := postingsBlock - len(have); room > 0 {
			n := min(room, len(ps))
			if err := b.Put(bytes.Clone(k), encodePostings(k, append(have, ps[:n]...))); err != nil {
				return err
			}
			ps = ps[n:]
		}
	}
	for len(ps) > 0 {
		n := min(postingsBlock, len(ps))
		key := postingKey(name, ps[0])
		if err := b.Put(key, encodePostings(key, ps[:n])); err != nil {
			return err
		}
		ps = ps[n:]
	}
	return nil
}

// addCount adds n to the count under k.
func addCount(counts *bolt.Bucket, k string, n int) error {
	var was uint64
	if v := counts.Get([]byte(k)); len(v) == 8 {
		was = binary.BigEndian.Uint64(v)
	}
	return counts.Put([]byte(k), be64(was+uint64(n)))
}

// lastBlock is the block of name (nil: entries, keyed by position alone)
// with the greatest first position at or below pos, or nil if none.
func lastBlock(c *bolt.Cursor, name []byte, pos uint64) (k, v []byte) {
	target := be64(pos)
	if name != nil {
		target = postingKey(name, pos)
	}
	k, v = c.Seek(target)
	if k != nil && bytes.Equal(k, target) {
		return k, v
	}
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil || !ofName(k, name) {
		return nil, nil
	}
	return k, v
}

// ofName reports whether k is a key of name's blocks (nil: an entries
// block's).
func ofName(k, name []byte) bool {
	if name == nil {
		return len(k) == 8
	}
	return len(k) == len(name)+9 && bytes.HasPrefix(k, name) && k[len(name)] == 0
}

func be64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// timeKey is t as 8 bytes that sort as times do.
func timeKey(t time.Time) []byte { return be64(uint64(t.UnixNano()) ^ 1<<63) }
