package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
)

// boltFixture writes a bbolt file of three buckets, big enough for branch
// pages and a nested bucket, and returns its bytes.
func boltFixture(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"a", "b", "c"} {
			b, err := tx.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			nested, err := b.CreateBucket([]byte("nested"))
			if err != nil {
				return err
			}
			for i := range 800 {
				k := fmt.Appendf(nil, "%s-%06d", name, i)
				if err := b.Put(k, []byte(strings.Repeat("v", 40+i%60))); err != nil {
					return err
				}
				if i%4 == 0 {
					if err := nested.Put(k, k); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readEverything reads every key and value of every bucket of f.
func readEverything(f *File) error {
	return f.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			var walk func(b *bolt.Bucket) error
			walk = func(b *bolt.Bucket) error {
				return b.ForEach(func(k, v []byte) error {
					if v == nil {
						if nb := b.Bucket(k); nb != nil {
							return walk(nb)
						}
					}
					_ = len(k) + len(v)
					return nil
				})
			}
			return walk(b)
		})
	})
}

// TestOpenFileDamaged opens damaged copies of a bbolt file with OpenFile,
// with and without the walk, read-only and replacing: it never panics or
// faults; a damaged file is an error wrapping ErrDamaged, or with Replace
// an empty file in its place saying why; and on a file the walk passed,
// every read succeeds.
func TestOpenFileDamaged(t *testing.T) {
	good := boltFixture(t)
	dir := t.TempDir()
	var replaced, kept int
	for i, d := range damages(len(good), 40) {
		for _, walk := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/walk=%v", d.name, walk), func(t *testing.T) {
				path := filepath.Join(dir, fmt.Sprintf("%d-%v.db", i, walk))
				damaged := d.do(append([]byte(nil), good...))
				if err := os.WriteFile(path, damaged, 0o600); err != nil {
					t.Fatal(err)
				}
				// Read-only: an error wrapping ErrDamaged, or a file
				// whose reads fail with ErrDamaged or succeed.
				if f, err := OpenFile(path, FileOptions{ReadOnly: true, Walk: walk}); err != nil {
					if !errors.Is(err, events.ErrDamaged) {
						t.Fatalf("read-only OpenFile: %v, want ErrDamaged", err)
					}
				} else {
					err := readEverything(f)
					if err != nil && !errors.Is(err, events.ErrDamaged) {
						t.Errorf("read: %v, want ErrDamaged", err)
					}
					if err != nil && walk {
						t.Errorf("read of a file the walk passed: %v", err)
					}
					if err := f.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				}
				f, err := OpenFile(path, FileOptions{Walk: walk, Replace: true})
				if err != nil {
					t.Fatalf("OpenFile with Replace: %v", err)
				}
				defer f.Close()
				if f.Replaced != nil {
					replaced++
					if !errors.Is(f.Replaced, events.ErrDamaged) {
						t.Errorf("Replaced: %v, want ErrDamaged", f.Replaced)
					}
					if err := f.View(func(tx *bolt.Tx) error {
						if k, _ := tx.Cursor().First(); k != nil {
							return fmt.Errorf("bucket %q in the replacement", k)
						}
						return nil
					}); err != nil {
						t.Error(err)
					}
					return
				}
				kept++
				if err := readEverything(f); err != nil && (walk || !errors.Is(err, events.ErrDamaged)) {
					t.Errorf("read (walk %v): %v", walk, err)
				}
				// A write on what was kept: an error wrapping ErrDamaged,
				// or a commit.
				err = f.Update(func(tx *bolt.Tx) error {
					b, err := tx.CreateBucketIfNotExists([]byte("a"))
					if err != nil {
						return err
					}
					return b.Put([]byte("a-000001"), []byte("new"))
				})
				if err != nil && !errors.Is(err, events.ErrDamaged) && walk {
					t.Errorf("write after the walk passed: %v", err)
				}
			})
		}
	}
	t.Logf("%d opens replaced the damaged file, %d kept it (damage in free space or unused bytes, or found only on read)", replaced, kept)
}

func TestOpenFileLockAndReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.db")
	a, err := OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Replaced != nil || a.Check != (FileCheck{}) {
		t.Errorf("a new file: replaced %v, check %+v", a.Replaced, a.Check)
	}
	if _, err := OpenFile(path, FileOptions{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second OpenFile: %v, want ErrLocked", err)
	}
	// A waiter on a file that is replaced meanwhile opens the new one.
	got := make(chan *File, 1)
	go func() {
		b, err := OpenFile(path, FileOptions{LockTimeout: 5 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	time.Sleep(100 * time.Millisecond)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c, err := OpenFile(path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("new")); return err }); err != nil {
		t.Fatal(err)
	}
	a.Close()
	time.Sleep(100 * time.Millisecond)
	c.Close()
	b := <-got
	if b == nil {
		return
	}
	defer b.Close()
	if err := b.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("new")) == nil {
			return errors.New("the waiter opened the removed file")
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if _, err := OpenFile(filepath.Join(t.TempDir(), "missing.db"), FileOptions{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only OpenFile of a missing file: %v", err)
	}
}
