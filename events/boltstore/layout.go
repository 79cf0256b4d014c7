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

	metaLayout = []byte("layout")
	metaHead   = []byte("head")
)

// layoutVersion is the on-disk layout this package writes and reads.
const layoutVersion = 1

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

// initLayout creates the buckets of an empty file, or checks those of an
// existing one, and returns the stored head.
func initLayout(tx *bolt.Tx) (uint64, error) {
	for _, name := range [][]byte{bucketEvents, bucketStreams, bucketIDs, bucketMeta} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return 0, fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(metaLayout); v == nil {
		if err := meta.Put(metaLayout, u64key(layoutVersion)); err != nil {
			return 0, fmt.Errorf("write layout: %w", err)
		}
		if err := meta.Put(metaHead, u64key(0)); err != nil {
			return 0, fmt.Errorf("write head: %w", err)
		}
	} else if n, ok := u64val(v); !ok || n != layoutVersion {
		return 0, fmt.Errorf("unknown layout %x (this build reads layout %d)", v, layoutVersion)
	}
	return checkHead(tx)
}

// checkHead reads meta's head and checks it against the last key of events.
func checkHead(tx *bolt.Tx) (uint64, error) {
	head, ok := u64val(tx.Bucket(bucketMeta).Get(metaHead))
	if !ok {
		return 0, fmt.Errorf("corrupt: meta head missing or malformed")
	}
	var last uint64
	if k, _ := tx.Bucket(bucketEvents).Cursor().Last(); k != nil {
		if last, ok = u64val(k); !ok {
			return 0, fmt.Errorf("corrupt: events key %x is not 8 bytes", k)
		}
	}
	if last != head {
		return 0, fmt.Errorf("corrupt: meta head is %d, last event is at position %d", head, last)
	}
	return head, nil
}
