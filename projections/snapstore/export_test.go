package snapstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections"
)

// SetFlush sets how many events Open folds between flushes, and how far
// behind the head it leaves the files, for a test; it returns the restore.
func SetFlush(every, after uint64) func() {
	e, a := flushEvery, flushAfter
	flushEvery, flushAfter = every, after
	return func() { flushEvery, flushAfter = e, a }
}

// Restamp stamps the snapshot in dir with dir's timeline.db as it is now,
// as if the call that saved the snapshot had left the file so: a test
// hides damage from the stamp with it.
func Restamp(ctx context.Context, store events.Store, dir string) error {
	set := projections.New()
	r := projections.NewRunner(store, events.NewRegistry(), set.All()...)
	snap := filepath.Join(dir, SnapshotFile)
	if _, _, err := projections.LoadSnapshotWith(ctx, snap, r, set); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(dir, TimelineFile))
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := boltstore.CheckFile(f, false)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	extra, err := json.Marshal(snapExtra{Timeline: &stamp{Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), TxID: c.TxID}})
	if err != nil {
		return err
	}
	return projections.SaveSnapshotWith(ctx, snap, r, set, extra)
}

// CheckWhole checks dir's timeline.db whole (read-only), for a test to
// say what damage it holds.
func CheckWhole(ctx context.Context, dir string) error {
	f, err := boltstore.OpenFile(filepath.Join(dir, TimelineFile), boltstore.FileOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = (&TimelineDB{f: f}).checkWhole(ctx)
	return err
}

// WholeChecks is how many times a timeline.db was checked whole.
func WholeChecks() uint64 { return wholeChecks.Load() }

// SpoilEntry spoils the entries block that holds position pos in dir's
// timeline.db (its checksum then fails), with bbolt itself (the file stays
// sound).
func SpoilEntry(dir string, pos uint64) error {
	db, err := bolt.Open(filepath.Join(dir, TimelineFile), 0o600, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bEntries)
		k, v := lastBlock(b.Cursor(), nil, pos)
		if k == nil {
			return fmt.Errorf("no entry at %d", pos)
		}
		k, v = bytes.Clone(k), bytes.Clone(v)
		v[len(v)/2] ^= 1
		return b.Put(k, v)
	})
}
