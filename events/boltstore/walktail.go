package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"meshplane/events"
)

// A read-only store does not walk the whole file at Open (walkPages): on a
// store of a million events that is most of a CLI call (hundreds of
// milliseconds of reading the whole file), while a call that resumes from a
// snapshot reads only the last events. It walks, before bbolt reads
// anything, only what bbolt will touch, and the rest when a read needs it:
//
//   - at Open: the meta pages and the freelist, the root bucket's tree and
//     every bucket in it except events, chain, streams and ids in full
//     (meta), and of events and chain the pages a seek to their last key
//     goes through (what Open's check of the head reads);
//   - with every walk of events below, the same walk of chain, whose keys
//     are the same positions (a read looks each event's chain value up);
//   - before ReadAll(after) (and so Subscribe): the pages of events that a
//     seek to position after+1 and the Nexts after it reach (seekWalk), once
//     for the lowest position asked so far; for a ReadAll with a limit, only
//     the pages that hold its positions (rangeWalk, walkrange.go);
//   - before the first ReadStream: the whole file, as a writer's Open does.
//
// The guarantee is the writer's, for what is read: no page bbolt reaches
// lies outside the file or is reached twice, and every element it reads lies
// inside its page. The file cannot change meanwhile: a read-only store holds
// the shared lock, so no writer opens it.

// seekWalk checks the pages of the tree rooted at root that a cursor reaches
// by seeking key and then calling Next to the end: on each branch page on
// the way down, the child bbolt's search picks (the same search, on the same
// bytes) and, whole, every child after it. Those branch pages' keys must be
// in strictly increasing order (bbolt writes them so), which makes the search
// monotonic: a later seek to a key at or after key stays inside what was
// walked. Any bucket found on the way is walked whole.
func (w *pageWalk) seekWalk(root uint64, key []byte, path string) error {
	var whole []subtree
	id := root
	for depth := 0; ; depth++ {
		if depth > maxTreeDepth {
			return fmt.Errorf("%s: tree deeper than %d pages", path, maxTreeDepth)
		}
		nested, children, keyOf, err := w.keyed(id, depth, path)
		if err != nil {
			return err
		}
		if children == nil {
			whole = append(whole, nested...)
			break
		}
		index := search(len(children), keyOf, key)
		whole = append(whole, children[index+1:]...)
		id = children[index].id
	}
	return w.trees(whole)
}

// keyed reads page id of a tree for a walk that follows keys: a leaf gives
// the buckets nested in it (children nil); a branch its children and their
// keys, checked in strictly increasing order (bbolt writes them so), which
// makes search monotonic.
func (w *pageWalk) keyed(id uint64, depth int, path string) (nested, children []subtree, keyOf func(int) []byte, err error) {
	p, span, err := w.page(id, flagBranch|flagLeaf, path)
	if err != nil {
		return nil, nil, nil, err
	}
	off := int64(id) * int64(w.pageSize)
	if ne.Uint16(p[8:]) == flagLeaf {
		nested, err := w.elems(nil, p, span, off, id, depth, path)
		return nested, nil, nil, err
	}
	// A branch: its keys are needed, so the whole page.
	if int64(len(p)) < span {
		p = make([]byte, span)
		if err := w.readAt(p, off); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: read page %d: %w", path, id, err)
		}
	}
	children, err = w.elems(nil, p, span, off, id, depth, path)
	if err != nil {
		return nil, nil, nil, err
	}
	count := int(ne.Uint16(p[10:]))
	if count == 0 || len(children) != count {
		return nil, nil, nil, fmt.Errorf("%s: branch page %d has %d elements", path, id, count)
	}
	keyOf = func(i int) []byte {
		e := pageHeaderSize + i*pageElemSize
		pos, ksize := int(ne.Uint32(p[e:])), int(ne.Uint32(p[e+4:]))
		return p[e+pos : e+pos+ksize] // in the page: elems checked it
	}
	for i := 1; i < count; i++ {
		if bytes.Compare(keyOf(i-1), keyOf(i)) >= 0 {
			return nil, nil, nil, fmt.Errorf("%s: branch page %d: keys %d and %d out of order", path, id, i-1, i)
		}
	}
	return nil, children, keyOf, nil
}

// search is bbolt's Cursor.searchPage on a branch of count keys: the child
// a seek to key descends to.
func search(count int, keyOf func(int) []byte, key []byte) int {
	var exact bool
	index := sort.Search(count, func(i int) bool {
		c := bytes.Compare(keyOf(i), key)
		if c == 0 {
			exact = true
		}
		return c != -1
	})
	if !exact && index > 0 {
		index--
	}
	return index
}

// newPageWalk checks what every walk of the file starts from: the page size
// and that the file holds every page the meta counts.
func newPageWalk(r io.ReaderAt, size int64, pageSize int, meta boltMeta) (*pageWalk, error) {
	if pageSize < 1024 || pageSize > 1<<20 || int(meta.pageSize) != pageSize {
		return nil, fmt.Errorf("page size %d (meta says %d)", pageSize, meta.pageSize)
	}
	if meta.hwm < 2 || meta.hwm > uint64(size)/uint64(pageSize) {
		return nil, fmt.Errorf("file is %d bytes (%d pages of %d), its meta says %d pages: truncated",
			size, uint64(size)/uint64(pageSize), pageSize, meta.hwm)
	}
	w := &pageWalk{r: r, size: size, pageSize: pageSize, meta: meta, seen: make([]bool, meta.hwm)}
	w.seen[0], w.seen[1] = true, true
	return w, nil
}

// Paths (as the walk names them) of the buckets a bounded walk leaves for
// later.
var deferredBuckets = map[string]bool{
	fmt.Sprintf("root/%q", bucketEvents):  true,
	fmt.Sprintf("root/%q", bucketStreams): true,
	fmt.Sprintf("root/%q", bucketIDs):     true,
	fmt.Sprintf("root/%q", bucketChain):   true,
}

// walkBounded is the walk of a read-only Open (see above): the freelist,
// the root tree and every bucket but events, chain, streams and ids, and
// the seeks to events' and chain's last keys. It returns the root pages of
// events and of chain (0 when inline, so walked already, or missing, which
// checkLayout then says) and the pages read.
func walkBounded(r io.ReaderAt, size int64, pageSize int, meta boltMeta) (evRoot, chainRoot uint64, pages int, err error) {
	w, err := newPageWalk(r, size, pageSize, meta)
	if err != nil {
		return 0, 0, 0, err
	}
	if meta.freelist != noFreelist {
		if err := w.freelist(meta.freelist); err != nil {
			return 0, 0, w.pages, err
		}
	}
	w.deferred = map[string]uint64{}
	if err := w.trees([]subtree{{meta.root, 0, "root"}}); err != nil {
		return 0, 0, w.pages, err
	}
	evRoot = w.deferred[evPath]
	chainRoot = w.deferred[chainPath]
	if evRoot == 0 && chainRoot != 0 {
		// events walked (inline) or missing: no lazy walk follows, so chain
		// now, whole.
		return 0, 0, w.pages, w.trees([]subtree{{chainRoot, 1, chainPath}})
	}
	if evRoot != 0 {
		if err := w.seekWalk(evRoot, u64key(math.MaxUint64), evPath); err != nil {
			return 0, 0, w.pages, err
		}
	}
	if chainRoot != 0 {
		if err := w.seekWalk(chainRoot, u64key(math.MaxUint64), chainPath); err != nil {
			return 0, 0, w.pages, err
		}
	}
	return evRoot, chainRoot, w.pages, nil
}

// The walk's names of the two buckets keyed by position.
var (
	evPath    = fmt.Sprintf("root/%q", bucketEvents)
	chainPath = fmt.Sprintf("root/%q", bucketChain)
)

// lazyCheck is what a read-only store walks of its file when a read needs
// it (see the comment at the top of this file).
type lazyCheck struct {
	f        *os.File // the store's file, open until Close
	size     int64
	pageSize int
	meta     boltMeta
	events   uint64 // root page of events
	chain    uint64 // root page of chain (0: inline, missing, or walked at Open)

	// from: a seek in events to a position at or after from reaches only
	// pages walked. whole: the whole file is walked.
	from  atomic.Uint64
	whole atomic.Bool

	mu    sync.Mutex // one walk at a time
	spans []span     // ranges walked by bounded reads (walkrange.go); under mu

	// bg, when set, is closed once the background walk of the whole file
	// (walkInBackground) has ended; bgErr is then its verdict.
	bg    chan struct{}
	bgErr error
}

// walkInBackground starts the walk of the whole file on a goroutine of its
// own: all waits for it instead of walking. Reads meanwhile walk what they
// reach (eventsFrom, eventsBetween), beside it.
func (l *lazyCheck) walkInBackground() {
	l.bg = make(chan struct{})
	go func() {
		defer close(l.bg)
		_, err := walkPages(l.f, l.size, l.pageSize, l.meta)
		switch {
		case errors.Is(err, os.ErrClosed):
			l.bgErr = events.ErrClosed
		case err != nil:
			l.bgErr = fmt.Errorf("%w: %w", events.ErrDamaged, err)
		default:
			l.whole.Store(true)
		}
	}()
}

// eventsFrom makes sure the pages a ReadAll from position pos reaches are
// walked. Damage is an error wrapping events.ErrDamaged.
func (l *lazyCheck) eventsFrom(pos uint64) error {
	if l.whole.Load() || pos >= l.from.Load() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.whole.Load() || pos >= l.from.Load() {
		return nil
	}
	w, err := newPageWalk(l.f, l.size, l.pageSize, l.meta)
	if err == nil {
		err = w.seekWalk(l.events, u64key(pos), evPath)
	}
	if err == nil && l.chain != 0 {
		err = w.seekWalk(l.chain, u64key(pos), chainPath)
	}
	if errors.Is(err, os.ErrClosed) {
		return events.ErrClosed
	}
	if err != nil {
		return fmt.Errorf("%w: %w", events.ErrDamaged, err)
	}
	l.from.Store(pos)
	return nil
}

// all makes sure the whole file is walked: by the background walk, when
// one was started, waited for.
func (l *lazyCheck) all() error {
	if l.whole.Load() {
		return nil
	}
	if l.bg != nil {
		<-l.bg
		return l.bgErr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.whole.Load() {
		return nil
	}
	_, err := walkPages(l.f, l.size, l.pageSize, l.meta)
	if errors.Is(err, os.ErrClosed) {
		return events.ErrClosed
	}
	if err != nil {
		return fmt.Errorf("%w: %w", events.ErrDamaged, err)
	}
	l.whole.Store(true)
	return nil
}

// close closes the file, and waits for the background walk, which that
// ends; l may be nil.
func (l *lazyCheck) close() {
	if l != nil {
		l.f.Close()
		if l.bg != nil {
			<-l.bg
		}
	}
}
