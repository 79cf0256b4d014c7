package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"meshplane/events"
)

// TestFullIsStoreFull: a write, sync or resize of the file that failed
// for lack of space is events.ErrStoreFull, its cause kept; any other
// failure is not.
func TestFullIsStoreFull(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		full bool
	}{
		{"write: ENOSPC", &fs.PathError{Op: "write", Path: "events.db", Err: syscall.ENOSPC}, true},
		{"sync: EDQUOT", fmt.Errorf("sync: %w", &fs.PathError{Op: "sync", Path: "events.db", Err: syscall.EDQUOT}), true},
		{"bbolt's resize, said with %s", fmt.Errorf("file resize error: %s", &fs.PathError{Op: "truncate", Path: "events.db", Err: syscall.ENOSPC}), true},
		{"write: EIO", &fs.PathError{Op: "write", Path: "events.db", Err: syscall.EIO}, false},
		{"a version conflict", &events.VersionError{Stream: "node-n1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := full(tc.err)
			if errors.Is(got, events.ErrStoreFull) != tc.full {
				t.Fatalf("full(%v) = %v: ErrStoreFull %v, want %v", tc.err, got, !tc.full, tc.full)
			}
			if !errors.Is(got, tc.err) && got.Error() != tc.err.Error() {
				t.Errorf("full(%v) = %v: the cause is lost", tc.err, got)
			}
		})
	}
}
