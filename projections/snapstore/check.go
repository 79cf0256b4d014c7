package snapstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// How a call knows timeline.db is the file an earlier call wrote. Checking
// it whole (checkWhole) reads all of it: hundreds of milliseconds for the
// 849 MB of a million events, against a call of under a hundred. So the
// call that saves the snapshot records in it, as its extra, the file's
// stamp: its size, its modification time (to the nanosecond) and bbolt's
// last transaction (from the meta pages, read before bbolt maps the file).
// A later call that finds the file so uses it as it is, with the checks
// every read makes (each entry's checksum, each key read, an index's
// entries of its name and time, and every call into bbolt under the
// guard); one that finds it otherwise (written by anything, truncated,
// restored from an older copy, or with a snapshot of an older build, which
// has no stamp) checks it whole before use, and a sound one is stamped
// again. A copy that keeps the modification time (cp -p) is the same bytes,
// and is trusted as the original.
//
// What the stamp does not catch: a file changed in place with its size
// and modification time set back, or bits the disk flips with no write at
// all. Reads still check what they read, and nothing the guard sees can
// crash the call; but the structure of such a file is not proven before
// bbolt walks it, and a subtree bbolt no longer reaches is not missed.
// (Anyone who can write the data directory can write the snapshot's stamp
// too: the stamp is a cache's bookkeeping, not a seal.)

// stamp is what a call records of timeline.db beside the snapshot.
type stamp struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	TxID    uint64 `json:"txid"` // bbolt's last transaction
}

// snapExtra is what snapstore keeps in the snapshot's extra.
type snapExtra struct {
	Timeline *stamp `json:"timeline.db,omitempty"`
}

// stampOf is d's stamp with bbolt's last transaction txid.
func (d *TimelineDB) stampOf(txid uint64) (stamp, error) {
	fi, err := d.f.Stat()
	if err != nil {
		return stamp{}, unusable(fmt.Errorf("snapstore: stat %s: %w", d.f.Path(), err))
	}
	return stamp{Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), TxID: txid}, nil
}

// openedStamp is d's stamp as it was opened: bbolt's last transaction is
// the one the meta pages said before bbolt read them (zero for a file made
// by this call), so nothing of the file past them is read.
func (d *TimelineDB) openedStamp() (stamp, error) { return d.stampOf(d.f.Check.TxID) }

// currentStamp is d's stamp now (after a flush).
func (d *TimelineDB) currentStamp() (stamp, error) {
	var txid int
	if err := d.f.View(func(tx *bolt.Tx) error { txid = tx.ID(); return nil }); err != nil {
		return stamp{}, unusable(err)
	}
	return d.stampOf(uint64(txid))
}

// extra is the snapshot's extra for d as it is now.
func (d *TimelineDB) extra() (json.RawMessage, error) {
	st, err := d.currentStamp()
	if err != nil {
		return nil, err
	}
	return json.Marshal(snapExtra{Timeline: &st})
}

// stamped reports whether d is the file extra (a snapshot's) recorded.
func (d *TimelineDB) stamped(extra json.RawMessage) bool {
	var x snapExtra
	if len(extra) == 0 || json.Unmarshal(extra, &x) != nil || x.Timeline == nil {
		return false
	}
	now, err := d.openedStamp()
	return err == nil && now == *x.Timeline
}

// wholeChecks counts checkWhole's calls (a test reads it).
var wholeChecks atomic.Uint64

// wholeCheck is what checkWhole found of a sound timeline.db.
type wholeCheck struct {
	Pages    int    // bbolt pages walked
	Position uint64 // the last position flushed
	Entries  int
	Keys     int // index blocks (node, type, module, resource) and time keys
	Names    int // names counted (counts)
	Ordered  bool
}

// checkWhole checks all of d's file: bbolt's structure, page by page, as
// the event store's Open does (boltstore.File.Walk); bbolt's own
// consistency check (tx.Check: every page reached once, keys in order,
// freelist); the meta; every entries block (its checksum, its positions in
// order, their order in time while the meta says ordered) and the time
// index against them (by a sum of hashes of the keys each block should
// have, against the same over those there are); every postings block (its
// checksum, each name's positions in order, each an entry's) and the
// counts against them. Which names an entry is under its event says, which
// the file does not hold: a query checks each entry it reads against the
// index it walked. Damage is an error wrapping ErrTimelineDB and
// events.ErrDamaged.
func (d *TimelineDB) checkWhole(ctx context.Context) (wholeCheck, error) {
	wholeChecks.Add(1)
	var w wholeCheck
	fc, err := d.f.Walk()
	w.Pages = fc.Pages
	if err != nil {
		return w, unusable(err)
	}
	err = d.f.View(func(tx *bolt.Tx) error {
		var problems []string
		for err := range tx.Check() { // drained: the check runs in a goroutine of its own
			problems = append(problems, err.Error())
		}
		if len(problems) > 0 {
			more := ""
			if len(problems) > 1 {
				more = fmt.Sprintf(" (and %d more)", len(problems)-1)
			}
			return damagedf("bbolt consistency check: %s%s", problems[0], more)
		}
		return checkContent(ctx, tx, &w)
	})
	return w, unusable(err)
}

// checkContent checks what Flush wrote in tx (see checkWhole).
func checkContent(ctx context.Context, tx *bolt.Tx, w *wholeCheck) error {
	m, err := meta(tx)
	if err != nil {
		return err
	}
	if v := m.Get(kVersion); string(v) != dbVersion {
		return damagedf("format %q, want %q", v, dbVersion)
	}
	pv := m.Get(kPos)
	if len(pv) != 8 {
		return damagedf("position of %d bytes", len(pv))
	}
	w.Position = binary.BigEndian.Uint64(pv)
	switch o := string(m.Get(kOrdered)); o {
	case "0", "1":
		w.Ordered = o == "1"
	default:
		return damagedf("ordered is %q", o)
	}
	buckets := map[string]*bolt.Bucket{}
	for _, name := range append([][]byte{bEntries, bCounts, bTime}, indexes...) {
		if buckets[string(name)] = tx.Bucket(name); buckets[string(name)] == nil {
			return damagedf("bucket %s is missing", name)
		}
	}
	if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if string(name) != string(bMeta) && buckets[string(name)] == nil {
			return damagedf("a bucket %q this build does not write", name)
		}
		return nil
	}); err != nil {
		return err
	}

	// Every entry, in order; then every postings block against them.
	seed := maphash.MakeSeed()
	var want, got uint64 // the hashes of the time keys the blocks need, and of those there are
	var all []uint64     // every entry's position, ascending
	var last uint64
	var lastAt int64
	c := buckets[string(bEntries)].Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if v == nil {
			return damagedf("entries: key %x is a bucket", k)
		}
		rs, err := decodeEntries(k, v)
		if err != nil {
			return err
		}
		want += keyHash(seed, 0, append(timeKey(time.Unix(0, rs[0].at)), k...), nil)
		for _, r := range rs {
			switch {
			case r.pos <= last:
				return damagedf("entries: position %d after %d", r.pos, last)
			case r.pos > w.Position:
				return damagedf("entry at %d, past the position flushed (%d)", r.pos, w.Position)
			case w.Ordered && len(all) > 0 && r.at < lastAt:
				return damagedf("entry at %d is earlier than the one before, but the meta says the entries are in time order", r.pos)
			}
			last, lastAt = r.pos, r.at
			all = append(all, r.pos)
		}
	}
	w.Entries = len(all)
	tc := buckets[string(bTime)].Cursor()
	for k, v := tc.First(); k != nil; k, v = tc.Next() {
		if len(k) != 16 || len(v) != 0 {
			return damagedf("time: key %x, value %x", k, v)
		}
		got += keyHash(seed, 0, k, nil)
		w.Keys++
	}
	if got != want {
		return damagedf("the time index disagrees with the entries (a block's key or time differs)")
	}
	seen := map[string]uint64{}
	for _, name := range indexes {
		if err := checkPostings(ctx, buckets[string(name)], string(name), all, seen, w); err != nil {
			return err
		}
	}
	cc := buckets[string(bCounts)].Cursor()
	stored := 0
	for k, v := cc.First(); k != nil; k, v = cc.Next() {
		name := strings.ReplaceAll(string(k), "\x00", " ")
		switch {
		case len(v) != 8:
			return damagedf("counts: %q is %d bytes", name, len(v))
		case binary.BigEndian.Uint64(v) != seen[string(k)]:
			return damagedf("counts: %q says %d, the index holds %d", name, binary.BigEndian.Uint64(v), seen[string(k)])
		}
		stored++
	}
	if stored != len(seen) {
		return damagedf("counts holds %d names, the indexes %d", stored, len(seen))
	}
	w.Names = stored
	return nil
}

// checkPostings checks the postings blocks of index ix in b: each block,
// each name's positions ascending across its blocks, and each an entry's
// (all); it counts each name's positions into seen.
func checkPostings(ctx context.Context, b *bolt.Bucket, ix string, all []uint64, seen map[string]uint64, w *wholeCheck) error {
	var name []byte
	var last uint64
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if v == nil {
			return damagedf("%s: key %q is a bucket", ix, k)
		}
		ps, err := decodePostings(ix, k, v)
		if err != nil {
			return err
		}
		if n := k[:len(k)-9]; !bytes.Equal(n, name) {
			name, last = bytes.Clone(n), 0
		}
		for _, p := range ps {
			if p <= last {
				return damagedf("%s %q: position %d after %d", ix, name, p, last)
			}
			if _, ok := slices.BinarySearch(all, p); !ok {
				return damagedf("%s %q: position %d, where there is no entry", ix, name, p)
			}
			last = p
		}
		seen[ix+"\x00"+string(name)] += uint64(len(ps))
		w.Keys++
	}
	return nil
}

// keyHash is the hash of key k and value v in the bucket numbered b.
func keyHash(seed maphash.Seed, b byte, k, v []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteByte(b)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(k)))
	h.Write(n[:])
	h.Write(k)
	h.Write(v)
	return h.Sum64()
}
