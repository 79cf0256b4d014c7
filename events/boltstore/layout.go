package boltstore

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket and meta key names of the on-disk layout (see the package doc).
var (
	bucketEvents  = []byte("events")
	bucketStreams = []byte("streams")
	bucketIDs     = []byte("ids")
	bucketMeta    = []byte("meta")
	bucketChain   = []byte("chain")

	metaLayout     = []byte("layout")
	metaHead       = []byte("head")
	metaChainStart = []byte("chainstart")
)

// Layouts this package reads. It creates layout 3; a layout-2 file (made
// before records were chained) becomes layout 3 when opened for writing,
// its chain starting after its head; a layout-1 file (made before records
// carried a checksum) is read and written as it is, unchained: its old
// records are format 1, its new ones format 3.
const (
	layoutPlain       = 1 // records of format 1 or 2
	layoutChecksummed = 2 // every record is format 3: a format-1 record is damage
	layoutChained     = 3 // layout 2, and a chain value for every position from chainstart
)

// Fill percents: keys of events and of stream buckets only grow.
const (
	fillSequential = 1.0
	fillIDs        = 0.9
)

func u64key(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v) }

func u64val(b []byte) (uint64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b), true
}

// initLayout creates the buckets of an empty file (layout 2), or checks
// those of an existing one, and returns the layout and the stored head.
func initLayout(tx *bolt.Tx) (layout, head uint64, err error) {
	if tx.Bucket(bucketMeta) != nil {
		return checkLayout(tx)
	}
	if k, _ := tx.Cursor().First(); k != nil {
		return 0, 0, damagedf("no meta bucket, but a bucket %q: not a meshplane store", k)
	}
	for _, name := range [][]byte{bucketEvents, bucketStreams, bucketIDs, bucketMeta, bucketChain} {
		if _, err := tx.CreateBucket(name); err != nil {
			return 0, 0, fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(metaLayout, u64key(layoutChained)); err != nil {
		return 0, 0, fmt.Errorf("write layout: %w", err)
	}
	if err := meta.Put(metaHead, u64key(0)); err != nil {
		return 0, 0, fmt.Errorf("write head: %w", err)
	}
	if err := meta.Put(metaChainStart, u64key(1)); err != nil {
		return 0, 0, fmt.Errorf("write chain start: %w", err)
	}
	return layoutChained, 0, nil
}

// upgradeLayout makes a layout-2 file layout 3, in the writer's Open: its
// chain starts after its head. Other layouts are left as they are.
func upgradeLayout(tx *bolt.Tx, layout, head uint64) (uint64, error) {
	if layout != layoutChecksummed {
		return layout, nil
	}
	if _, err := tx.CreateBucket(bucketChain); err != nil {
		return 0, fmt.Errorf("create bucket %s: %w", bucketChain, err)
	}
	meta := tx.Bucket(bucketMeta)
	if err := meta.Put(metaChainStart, u64key(head+1)); err != nil {
		return 0, fmt.Errorf("write chain start: %w", err)
	}
	if err := meta.Put(metaLayout, u64key(layoutChained)); err != nil {
		return 0, fmt.Errorf("write layout: %w", err)
	}
	return layoutChained, nil
}

// chainStart returns the first chained position of a layout-3 file (0 for
// other layouts: none is chained).
func chainStart(tx *bolt.Tx, layout uint64) (uint64, error) {
	if layout != layoutChained {
		return 0, nil
	}
	if tx.Bucket(bucketChain) == nil {
		return 0, damagedf("bucket %s missing", bucketChain)
	}
	start, ok := u64val(tx.Bucket(bucketMeta).Get(metaChainStart))
	if !ok || start == 0 {
		return 0, damagedf("meta chainstart missing or malformed")
	}
	return start, nil
}

// checkLayout checks the buckets and layout of an existing file, and its
// head against the last key of events.
func checkLayout(tx *bolt.Tx) (layout, head uint64, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, 0, damagedf("bucket %s missing: not a meshplane store, or its first write never finished", bucketMeta)
	}
	v := meta.Get(metaLayout)
	layout, ok := u64val(v)
	switch {
	case !ok:
		return 0, 0, damagedf("meta layout is %x, not 8 bytes", v)
	case layout != layoutPlain && layout != layoutChecksummed && layout != layoutChained:
		// Likely a newer build's: not damage.
		return 0, 0, fmt.Errorf("unknown layout %d (this build reads layouts %d to %d)", layout, layoutPlain, layoutChained)
	}
	for _, name := range [][]byte{bucketEvents, bucketStreams, bucketIDs} {
		if tx.Bucket(name) == nil {
			return 0, 0, damagedf("bucket %s missing", name)
		}
	}
	head, err = checkHead(tx)
	return layout, head, err
}

// checkHead reads meta's head and checks it against the last key of events.
func checkHead(tx *bolt.Tx) (uint64, error) {
	head, ok := u64val(tx.Bucket(bucketMeta).Get(metaHead))
	if !ok {
		return 0, damagedf("meta head missing or malformed")
	}
	var last uint64
	if k, _ := tx.Bucket(bucketEvents).Cursor().Last(); k != nil {
		if last, ok = u64val(k); !ok {
			return 0, damagedf("events key %x is not 8 bytes", k)
		}
	}
	if last != head {
		return 0, damagedf("meta head is %d, last event is at position %d", head, last)
	}
	return head, nil
}
