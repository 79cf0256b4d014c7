package snapstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections"
)

// FileReport is what Verify found of one of the cache files.
type FileReport struct {
	Name     string // SnapshotFile or TimelineFile
	Path     string
	Size     int64
	Missing  bool
	Position uint64 // the position it holds, when it could be read
	// Checked says, a line each, what was checked.
	Checked []string
	// Damage is the damage found ("" if none): the next query removes the
	// file and rebuilds it from the event store.
	Damage string
	// Rebuild says why the next query would rebuild the file though it is
	// not damaged (another format version, another history, the two files
	// disagree); "" when it would resume from it.
	Rebuild string
}

func (r *FileReport) checked(format string, args ...any) {
	r.Checked = append(r.Checked, fmt.Sprintf(format, args...))
}

// Verify checks the cache files of the data directory dir against store,
// read-only (it waits for a query holding timeline.db, as a query does):
// the snapshot whole (magic, length, checksum, its content decoded and
// consistent) and of store's history; timeline.db whole (checkWhole:
// bbolt's structure page by page, bbolt's consistency check, every
// block's checksum, every index against the entries and counts); and that
// the two agree. It
// says of each whether the next query resumes from it or rebuilds it, and
// why. The error is for what stopped it from looking (reading the store,
// the lock held too long by another call).
func Verify(ctx context.Context, store events.Store, reg *events.Registry, dir string) ([]FileReport, error) {
	snap := FileReport{Name: SnapshotFile, Path: filepath.Join(dir, SnapshotFile)}
	tl := FileReport{Name: TimelineFile, Path: filepath.Join(dir, TimelineFile)}
	var snapAt uint64
	var snapOK bool
	var extra []byte
	if fi, err := os.Stat(snap.Path); errors.Is(err, os.ErrNotExist) {
		snap.Missing = true
	} else if err != nil {
		return nil, fmt.Errorf("snapstore: verify: %w", err)
	} else {
		snap.Size = fi.Size()
		set := projections.New()
		r := projections.NewRunner(store, reg, set.All()...)
		pos, x, err := projections.LoadSnapshotWith(ctx, snap.Path, r, set)
		switch {
		case errors.Is(err, events.ErrDamaged):
			snap.Damage = trimSnapshot(err, snap.Path)
			snap.checked("checksum and content: damaged")
		case errors.Is(err, projections.ErrSnapshot):
			snap.Rebuild = trimSnapshot(err, snap.Path)
			snap.checked("checksum and content: ok; not of this build or this store's history")
		case err != nil:
			return nil, fmt.Errorf("snapstore: verify %s: %w", snap.Path, err)
		default:
			snap.Position, snapAt, snapOK, extra = pos, pos, true, x
			snap.checked("checksum, format and content: ok")
			snap.checked("of this store: the event at position %d is the one it folded", pos)
		}
	}

	var tlAt uint64
	var tlOK bool
	if fi, err := os.Stat(tl.Path); errors.Is(err, os.ErrNotExist) {
		tl.Missing = true
	} else if err != nil {
		return nil, fmt.Errorf("snapstore: verify: %w", err)
	} else {
		tl.Size = fi.Size()
		f, err := boltstore.OpenFile(tl.Path, boltstore.FileOptions{ReadOnly: true, LockTimeout: lockTimeout})
		switch {
		case errors.Is(err, events.ErrDamaged):
			tl.Damage = trimDamaged(err)
			tl.checked("bbolt meta pages and length: damaged")
		case err != nil:
			return nil, fmt.Errorf("snapstore: verify: %w", err)
		default:
			d := &TimelineDB{f: f}
			tlAt, tlOK = verifyTimeline(ctx, d, &tl)
			tl.Position = tlAt
			if tlOK && snapOK && !d.stamped(extra) {
				tl.checked("not the file the snapshot recorded (changed or copied since): the next query checks it whole once, as here")
			}
			f.Close()
		}
	}

	switch {
	case snapOK && tlOK && snapAt != tlAt:
		why := fmt.Sprintf("the snapshot is at position %d, timeline.db at %d: they disagree", snapAt, tlAt)
		snap.Rebuild, tl.Rebuild = why, why
	case snapOK && !tlOK && snap.Rebuild == "":
		snap.Rebuild = "timeline.db is missing or rebuilt: the snapshot, which must agree with it, is rebuilt too"
	case !snapOK && tlOK && tlAt > 0:
		tl.Rebuild = "the snapshot is missing or not used: timeline.db is rebuilt with it"
	}
	return []FileReport{snap, tl}, nil
}

// verifyTimeline checks d whole into r; it returns d's position and
// whether the next query would use d.
func verifyTimeline(ctx context.Context, d *TimelineDB, r *FileReport) (uint64, bool) {
	var version []byte
	if err := d.f.View(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bMeta); m != nil {
			version = bytes.Clone(m.Get(kVersion))
		}
		return nil
	}); err == nil && version != nil && string(version) != dbVersion {
		r.checked("format: %q", version)
		r.Rebuild = fmt.Sprintf("format %q, this build writes %q: the next query replaces it", version, dbVersion)
		return 0, false
	}
	w, err := d.checkWhole(ctx)
	if err != nil {
		if w.Pages > 0 {
			r.checked("bbolt structure: %d pages walked", w.Pages)
		}
		r.Damage = trimDamaged(err)
		return 0, false
	}
	r.checked("bbolt structure: %d pages walked, each in the file and reached once", w.Pages)
	r.checked("bbolt consistency check (tx.Check): ok")
	r.checked("entries: %d to position %d, in blocks each with a matching checksum, positions in order", w.Entries, w.Position)
	r.checked("indexes: %d blocks and time keys, %d names, each position an entry's, agreeing with counts (each entry is checked against its event when read)", w.Keys, w.Names)
	return w.Position, true
}

// trimSnapshot is trimDamaged for LoadSnapshot's errors about the file
// at path, which a report's heading names.
func trimSnapshot(err error, path string) string {
	s := strings.TrimPrefix(trimDamaged(err), "projections: load snapshot "+path+": ")
	return strings.TrimSuffix(s, ": "+projections.ErrSnapshot.Error())
}

// trimDamaged is err's text without the sentinels' own words, which a
// report's heading says.
func trimDamaged(err error) string {
	s := err.Error()
	for _, p := range []string{ErrTimelineDB.Error() + ": ", events.ErrDamaged.Error() + ": "} {
		s = strings.ReplaceAll(s, p, "")
	}
	return strings.TrimSuffix(s, ": "+events.ErrDamaged.Error())
}
