package boltstore

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
)

// Other bbolt files
//
// The checks that make a damaged store file an error, never a fault or a
// wrong answer, serve any bbolt file another package keeps of its own
// (projections/snapstore's timeline.db, a cache). OpenFile takes the file's
// lock itself, checks the file with plain reads while it holds the lock and
// before bbolt maps a byte of it (CheckFile), and only then hands the locked
// file to bbolt; File's View and Update run every later call into bbolt
// under Guard. So a truncated or scribbled-on file is an error wrapping
// events.ErrDamaged: bbolt never reads a page past the end of the file it
// was given (no SIGBUS), and a panic or a fault in its memory map on a page
// that damage points at is recovered.

// FileCheck is what CheckFile read of a bbolt file.
type FileCheck struct {
	Size     int64  // the file's size, in bytes
	PageSize int    // bbolt's page size, from the meta pages
	TxID     uint64 // the transaction of the meta bbolt reads (the newer one)
	InUse    int64  // bytes of the pages in use: the file is at least this long
	Pages    int    // pages walked (CheckFile with walk; else 0)
}

// CheckFile checks the bbolt file f with plain reads (f.ReadAt), before
// bbolt maps it: it is not empty; both meta pages are valid (flags, magic,
// version, checksum) and give one page size, a power of two bbolt can use;
// the file holds every page the newer meta says is in use, so that no page
// bbolt reads lies past its end; the root page is one of them; and the
// freelist lists only pages in use. With walk, every page bbolt can reach
// is checked too (as Open checks the store's file): in the file, reached
// once, its elements inside it. That reads the whole tree, about the size of
// the file; without it, CheckFile reads three pages and the freelist. Damage
// is an error wrapping events.ErrDamaged.
func CheckFile(f *os.File, walk bool) (FileCheck, error) {
	fi, err := f.Stat()
	if err != nil {
		return FileCheck{}, err
	}
	c := FileCheck{Size: fi.Size()}
	if c.Size == 0 {
		return c, damagedf("the file is empty (0 bytes)")
	}
	if c.Size < 2*1024 {
		return c, damagedf("the file is %d bytes, too short for bbolt's two meta pages", c.Size)
	}
	m0, err := readMeta(f, 0)
	if err != nil {
		return c, damagedf("%v (the page size is read from it)", err)
	}
	ps := int(m0.pageSize)
	if ps < 1024 || ps > 1<<16 || ps&(ps-1) != 0 {
		return c, damagedf("meta page 0 gives a page size of %d bytes", ps)
	}
	meta, err := chooseMeta(f, ps)
	if err != nil {
		return c, damagedf("%v", err)
	}
	if int(meta.pageSize) != ps {
		return c, damagedf("the meta pages give page sizes %d and %d", ps, meta.pageSize)
	}
	c.PageSize, c.TxID = ps, meta.txid
	if meta.hwm < 3 || meta.hwm > uint64(c.Size)/uint64(ps) {
		return c, damagedf("the file is %d bytes (%d pages of %d), its meta says %d pages are in use: truncated",
			c.Size, c.Size/int64(ps), ps, meta.hwm)
	}
	c.InUse = int64(meta.hwm) * int64(ps)
	if meta.root < 2 || meta.root >= meta.hwm {
		return c, damagedf("the root is page %d, out of range [2, %d)", meta.root, meta.hwm)
	}
	if walk {
		n, err := walkPages(f, c.Size, ps, meta)
		c.Pages = n
		if err != nil {
			return c, fmt.Errorf("%w: %w", events.ErrDamaged, err)
		}
		return c, nil
	}
	if meta.freelist != noFreelist {
		w, err := newPageWalk(f, c.Size, ps, meta)
		if err == nil {
			err = w.freelist(meta.freelist)
		}
		if err != nil {
			return c, fmt.Errorf("%w: %w", events.ErrDamaged, err)
		}
	}
	return c, nil
}

// Guard runs fn, which calls into bbolt, turning a fault in bbolt's memory
// map into a panic (debug.SetPanicOnFault, for this goroutine while fn
// runs) and a panic into an error wrapping events.ErrDamaged. bbolt trusts
// the file it maps: on a damaged one it panics, or faults on a page past the
// end of the file. After a panic inside a write transaction bbolt may still
// hold its locks: the DB must not be used or closed again (File does that).
func Guard(fn func() error) error { return guard(fn) }

// FileOptions tune OpenFile.
type FileOptions struct {
	// ReadOnly opens the file read-only, with a shared lock; a missing
	// file is an error wrapping os.ErrNotExist. Otherwise the file is
	// created if missing, and locked exclusively.
	ReadOnly bool
	// LockTimeout is how long OpenFile waits for the lock (default
	// DefaultLockTimeout); then it fails with ErrLocked.
	LockTimeout time.Duration
	// Walk makes CheckFile walk every page (see there).
	Walk bool
	// Replace, for a damaged file, removes it while holding its lock and
	// makes an empty one in its place: File.Replaced says what the damage
	// was. For a cache, which is rebuilt from elsewhere. Not with ReadOnly.
	Replace bool
}

// File is a bbolt file opened by OpenFile. Its View and Update run under
// Guard.
type File struct {
	// DB is the bbolt database. Call into it through View and Update.
	DB *bolt.DB
	// Check is what CheckFile read before bbolt did (zero for a file made
	// by OpenFile).
	Check FileCheck
	// Replaced is, with FileOptions.Replace, the damage of the file that
	// was removed and replaced by an empty one; nil when none was.
	Replaced error

	path   string
	f      *os.File    // bbolt's file: the one OpenFile locked and checked
	held   os.FileInfo // f, when its lock was taken
	broken error       // set when bbolt panicked in a write transaction
}

// errMoved means the path named another file once its lock was taken (a
// damaged file was replaced meanwhile): OpenFile opens the new one.
var errMoved = errors.New("the file was replaced while its lock was awaited")

// OpenFile opens the bbolt file at path with the checks Open makes of the
// store's file: it takes the file's lock (waiting up to the lock timeout),
// checks the file it locked with CheckFile before bbolt reads it, opens it
// with bbolt under Guard, and checks that bbolt reads the meta CheckFile
// checked. A file OpenFile creates is not checked. Damage is an error
// wrapping events.ErrDamaged (or, with Replace, an empty file and
// File.Replaced); a file held too long by another process is ErrLocked.
func OpenFile(path string, o FileOptions) (*File, error) {
	if o.Replace && o.ReadOnly {
		return nil, fmt.Errorf("boltstore: open %s: a read-only file is not replaced", path)
	}
	timeout := cmp.Or(o.LockTimeout, DefaultLockTimeout)
	var replaced error
	for attempt := 0; ; attempt++ {
		bf, err := openFile(path, o, timeout)
		switch {
		case errors.Is(err, errMoved) && attempt < 3:
			continue
		case errors.Is(err, events.ErrDamaged) && o.Replace && bf != nil && attempt < 3:
			// Damaged: remove it while holding its lock, so that no one
			// else is using it, then make the new one.
			rerr := bf.removeLocked(timeout)
			bf.release()
			if rerr != nil {
				return nil, fmt.Errorf("boltstore: open %s: %w; removing it: %w", path, err, rerr)
			}
			replaced = err
			continue
		case err != nil:
			if bf != nil {
				bf.release()
			}
			return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
		}
		bf.Replaced = replaced
		return bf, nil
	}
}

// openFile is one attempt of OpenFile. On damage it returns the error and,
// still holding the lock, the File it could not use (its DB nil if bbolt
// did not open it), for OpenFile to replace and release.
func openFile(path string, o FileOptions, timeout time.Duration) (*File, error) {
	f, err := openLocked(path, o.ReadOnly, timeout)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	bf := &File{path: path, f: f, held: fi}
	existed := fi.Size() > 0 || o.ReadOnly
	if existed {
		if bf.Check, err = CheckFile(f, o.Walk); err != nil {
			return bf, err
		}
	}
	err = guard(func() error {
		var err error
		bf.DB, err = bolt.Open(path, 0o600, &bolt.Options{
			Timeout:  timeout,
			ReadOnly: o.ReadOnly,
			// The file locked and checked above: bbolt's own flock of it
			// is a lock its open file description already holds.
			OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil },
		})
		return err
	})
	if err != nil {
		bf.DB = nil // bbolt closed f, or panicked: release closes it
		if !errors.Is(err, events.ErrDamaged) {
			err = fmt.Errorf("%w: bbolt cannot read it: %w", events.ErrDamaged, err)
		}
		return bf, err
	}
	if existed {
		// bbolt must read the meta that was checked (it picks the same
		// one, by the same rule).
		var txid int
		var size int64
		if err := bf.View(func(tx *bolt.Tx) error { txid, size = tx.ID(), tx.Size(); return nil }); err != nil {
			return bf, err
		}
		if uint64(txid) != bf.Check.TxID || size != bf.Check.InUse {
			return bf, damagedf("bbolt reads transaction %d of %d bytes, the meta pages checked say %d of %d",
				txid, size, bf.Check.TxID, bf.Check.InUse)
		}
	}
	return bf, nil
}

// openLocked opens path and takes its lock (exclusive unless readOnly),
// then checks that path still names the file locked.
func openLocked(path string, readOnly bool, timeout time.Duration) (*os.File, error) {
	flag, how := os.O_RDWR|os.O_CREATE, syscall.LOCK_EX
	if readOnly {
		flag, how = os.O_RDONLY, syscall.LOCK_SH
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock: %w", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w (gave up after %v)", ErrLocked, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	held, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !held.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file (%s)", held.Mode())
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, errMoved
	}
	return f, nil
}

// removeLocked removes the file at bf's path while holding its lock. The
// lock is bf's unless bbolt, failing to open the file, closed it: then it
// is taken again, and the file removed only if the path still names it.
func (bf *File) removeLocked(timeout time.Duration) error {
	if _, err := bf.f.Stat(); err == nil {
		return os.Remove(bf.path) // f is open: its lock is held
	}
	f, err := openLocked(bf.path, false, timeout)
	if errors.Is(err, errMoved) || errors.Is(err, os.ErrNotExist) {
		return nil // replaced meanwhile: the next attempt opens that one
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !os.SameFile(now, bf.held) {
		return nil
	}
	return os.Remove(bf.path)
}

// release closes what an attempt of openFile holds.
func (bf *File) release() {
	if bf.DB != nil {
		closeBolt(bf.DB)
	}
	bf.f.Close() // closed already when bbolt was: an error, dropped
}

// View runs fn in a read transaction, under Guard.
func (bf *File) View(fn func(*bolt.Tx) error) error {
	if bf.broken != nil {
		return bf.broken
	}
	return guard(func() error { return bf.DB.View(fn) })
}

// Update runs fn in a write transaction, under Guard. After a panic bbolt
// may hold its locks, so the file is not used again (every call fails with
// that error) and Close leaves it to the process's exit.
func (bf *File) Update(fn func(*bolt.Tx) error) error {
	if bf.broken != nil {
		return bf.broken
	}
	err := guard(func() error { return bf.DB.Update(fn) })
	if errors.Is(err, errPanicked) {
		bf.broken = fmt.Errorf("left alone after %w", err)
	}
	return err
}

// Walk checks every page of the file bbolt can reach (CheckFile with
// walk), reading the file bbolt holds with plain reads.
func (bf *File) Walk() (FileCheck, error) { return CheckFile(bf.f, true) }

// Stat is the file bbolt holds (which the path named when it was locked).
func (bf *File) Stat() (os.FileInfo, error) { return bf.f.Stat() }

// Path is the file's path.
func (bf *File) Path() string { return bf.path }

// Broken is the error that made the file unusable (a panic in a write
// transaction), or nil.
func (bf *File) Broken() error { return bf.broken }

// Close closes the file and releases its lock, unless a write transaction
// panicked (see Update): then it is left open, and Close says so.
func (bf *File) Close() error {
	if bf.broken != nil {
		return fmt.Errorf("boltstore: close %s: %w", bf.path, bf.broken)
	}
	if err := guard(bf.DB.Close); err != nil {
		return fmt.Errorf("boltstore: close %s: %w", bf.path, err)
	}
	return nil
}
