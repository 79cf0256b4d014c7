package boltstore

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
)

// bbolt's page format (its file format version 2), as its internal/common
// package lays it down, in the machine's byte order. Should a bbolt upgrade
// change it, every Open fails (the conformance suite would say so at once).
// Walking the file ourselves, with ReadAt and every offset checked,
// is what makes a damaged file an error: bbolt trusts its pages, so a page id
// past the end of the file is a fault inside bbolt, and a page that is its
// own ancestor is a loop that never ends (in tx.Check, a stack overflow).
// Once this walk has passed, every page bbolt can reach is inside the file,
// reached once, and every element it reads lies inside its page.
//
//	page header   id uint64, flags uint16, count uint16, overflow uint32  (16 bytes)
//	branch elem   pos uint32, ksize uint32, pgid uint64                    (16 bytes; key at elem+pos)
//	leaf elem     flags uint32, pos uint32, ksize uint32, vsize uint32     (16 bytes; key at elem+pos, value after it)
//	bucket value  root uint64, sequence uint64, then an inline leaf page when root is 0
//	meta          magic, version, pageSize, flags uint32; root bucket (16 bytes);
//	              freelist, pgid (high water mark), txid, checksum uint64 (FNV-1a of the rest)
//	freelist      count in the header, or 0xFFFF and the count in the first uint64; then page ids
const (
	pageHeaderSize  = 16
	pageElemSize    = 16
	bucketHeader    = 16
	flagBranch      = 0x01
	flagLeaf        = 0x02
	flagMeta        = 0x04
	flagFreelist    = 0x10
	leafBucket      = 0x01
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	noFreelist      = ^uint64(0)
	metaChecksumOff = 56 // bytes of the meta that its checksum covers
	maxTreeDepth    = 64
)

// ne is bbolt's byte order: the machine's.
var ne = binary.NativeEndian

// boltMeta is the part of a meta page the walk needs.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64 // pages in use: every page id is below it
	txid     uint64
}

// readMeta reads and checks the meta page at off.
func readMeta(r io.ReaderAt, off int64) (boltMeta, error) {
	var b [pageHeaderSize + 64]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return boltMeta{}, fmt.Errorf("read meta page at %d: %w", off, err)
	}
	m := b[pageHeaderSize:]
	if ne.Uint16(b[8:]) != flagMeta {
		return boltMeta{}, fmt.Errorf("meta page at %d: flags %#x", off, ne.Uint16(b[8:]))
	}
	if ne.Uint32(m[0:]) != boltMagic || ne.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, fmt.Errorf("meta page at %d: not a bbolt version 2 meta", off)
	}
	h := fnv.New64a()
	h.Write(m[:metaChecksumOff])
	if h.Sum64() != ne.Uint64(m[metaChecksumOff:]) {
		return boltMeta{}, fmt.Errorf("meta page at %d: checksum mismatch", off)
	}
	return boltMeta{
		pageSize: ne.Uint32(m[8:]),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		hwm:      ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}, nil
}

// chooseMeta picks the meta bbolt uses: the valid one with the higher txid.
// One invalid meta page is damage too: bbolt would silently read the other,
// the state before the last commit, so an acknowledged append could vanish.
// (A power loss in the middle of writing a meta page would also leave one
// invalid; that commit was never acknowledged, but telling the two apart is
// not possible, so both are reported.)
func chooseMeta(r io.ReaderAt, pageSize int) (boltMeta, error) {
	m0, err0 := readMeta(r, 0)
	m1, err1 := readMeta(r, int64(pageSize))
	switch {
	case err0 != nil && err1 != nil:
		return boltMeta{}, fmt.Errorf("both meta pages are invalid: %v; %v", err0, err1)
	case err0 != nil:
		return m1, fmt.Errorf("%v (bbolt would read the other, from transaction %d: the state before the last commit)", err0, m1.txid)
	case err1 != nil:
		return m0, fmt.Errorf("%v (bbolt would read the other, from transaction %d: the state before the last commit)", err1, m0.txid)
	case m1.txid > m0.txid:
		return m1, nil
	default:
		return m0, nil
	}
}

// pageWalk checks the structure of a bbolt file (see the comment above).
type pageWalk struct {
	r        io.ReaderAt
	size     int64 // the file's size
	pageSize int
	meta     boltMeta
	seen     []bool // pages reached, by id
	pages    int    // pages read

	// A read window: the pages of a bucket written in order lie in order,
	// so one read of walkWindow bytes serves many pages.
	win    []byte
	winOff int64

	// deferred, when not nil, makes the walk leave the buckets named in
	// deferredBuckets, recording their root pages here (walkBounded).
	deferred map[string]uint64
}

// walkWindow is how much of the file one read brings in.
const walkWindow = 256 << 10

// readAt reads len(b) bytes at off, through the window.
func (w *pageWalk) readAt(b []byte, off int64) error {
	if len(b) > walkWindow {
		_, err := w.r.ReadAt(b, off)
		return err // whole or io.EOF
	}
	if off < w.winOff || off+int64(len(b)) > w.winOff+int64(len(w.win)) {
		if w.win == nil {
			w.win = make([]byte, walkWindow)
		}
		n, err := w.r.ReadAt(w.win[:cap(w.win)], off)
		w.win, w.winOff = w.win[:n], off
		if n < len(b) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	copy(b, w.win[off-w.winOff:])
	return nil
}

// walkPages checks the file's structure from meta: the freelist, then every
// bucket's tree. It returns the first damage found, or nil.
func walkPages(r io.ReaderAt, size int64, pageSize int, meta boltMeta) (int, error) {
	w, err := newPageWalk(r, size, pageSize, meta)
	if err != nil {
		return 0, err
	}
	if meta.freelist != noFreelist {
		if err := w.freelist(meta.freelist); err != nil {
			return w.pages, err
		}
	}
	return w.pages, w.trees([]subtree{{meta.root, 0, "root"}})
}

// subtree is a page to walk: a tree's root or a branch's child.
type subtree struct {
	id    uint64
	depth int
	path  string // the bucket, for errors
}

// page reads the header and element table of page id, checking that the
// page and its overflow are in the file, that the page says it is id and
// has one of want's flags, and that no page of it was reached before. It
// reads no keys or values: their bounds are checked from the table, and a
// bucket's value is read where it is needed (elems). It returns the bytes
// read, at least the header and the table, and the page's span in bytes.
func (w *pageWalk) page(id uint64, want uint16, path string) ([]byte, int64, error) {
	if id < 2 || id >= w.meta.hwm {
		return nil, 0, fmt.Errorf("%s: page %d out of range [2, %d)", path, id, w.meta.hwm)
	}
	off := int64(id) * int64(w.pageSize)
	buf := make([]byte, min(w.pageSize, 1024))
	if err := w.readAt(buf, off); err != nil {
		return nil, 0, fmt.Errorf("%s: read page %d: %w", path, id, err)
	}
	if got := ne.Uint64(buf); got != id {
		return nil, 0, fmt.Errorf("%s: page %d says it is page %d", path, id, got)
	}
	if flags := ne.Uint16(buf[8:]); flags&want == 0 || flags&^want != 0 {
		return nil, 0, fmt.Errorf("%s: page %d has flags %#x, want %#x", path, id, flags, want)
	}
	overflow := uint64(ne.Uint32(buf[12:]))
	if id+overflow >= w.meta.hwm {
		return nil, 0, fmt.Errorf("%s: page %d and its %d overflow pages run past the last page %d", path, id, overflow, w.meta.hwm-1)
	}
	for p := id; p <= id+overflow; p++ {
		if w.seen[p] {
			return nil, 0, fmt.Errorf("%s: page %d is reached twice", path, p)
		}
		w.seen[p] = true
	}
	w.pages++
	span := int64(1+overflow) * int64(w.pageSize)
	// The element table (or the freelist's ids), if longer than read.
	n := int64(ne.Uint16(buf[10:]))
	if ne.Uint16(buf[8:]) == flagFreelist {
		n = (n + 1) / 2 // 8-byte ids: the count is checked by freelist
		if ne.Uint16(buf[10:]) == 0xFFFF {
			n = min(int64(ne.Uint64(buf[pageHeaderSize:]))/2+1, span/pageElemSize)
		}
	}
	if need := pageHeaderSize + n*pageElemSize; need > int64(len(buf)) && need <= span {
		buf = make([]byte, need)
		if err := w.readAt(buf, off); err != nil {
			return nil, 0, fmt.Errorf("%s: read page %d: %w", path, id, err)
		}
	}
	return buf, span, nil
}

func (w *pageWalk) freelist(id uint64) error {
	p, span, err := w.page(id, flagFreelist, "freelist")
	if err != nil {
		return err
	}
	idx, count := uint64(0), uint64(ne.Uint16(p[10:]))
	if count == 0xFFFF {
		idx, count = 1, ne.Uint64(p[pageHeaderSize:])
	}
	if count > uint64(span-pageHeaderSize)/8 || pageHeaderSize+8*(idx+count) > uint64(len(p)) {
		return fmt.Errorf("freelist: page %d says %d free pages, more than it holds", id, count)
	}
	for i := idx; i < idx+count; i++ {
		if f := ne.Uint64(p[pageHeaderSize+8*i:]); f < 2 || f >= w.meta.hwm {
			return fmt.Errorf("freelist: page %d lists free page %d, out of range [2, %d)", id, f, w.meta.hwm)
		}
	}
	return nil
}

// trees checks the trees rooted at roots, and every bucket nested in them,
// a level at a time, each level in the order of its pages in the file, so
// that reads go forward through the read window.
func (w *pageWalk) trees(level []subtree) error {
	for len(level) > 0 {
		slices.SortFunc(level, func(a, b subtree) int { return cmp.Compare(a.id, b.id) })
		var next []subtree
		for _, t := range level {
			if t.depth > maxTreeDepth {
				return fmt.Errorf("%s: tree deeper than %d pages", t.path, maxTreeDepth)
			}
			p, span, err := w.page(t.id, flagBranch|flagLeaf, t.path)
			if err != nil {
				return err
			}
			if next, err = w.elems(next, p, span, int64(t.id)*int64(w.pageSize), t.id, t.depth, t.path); err != nil {
				return err
			}
		}
		level = next
	}
	return nil
}

// elems checks the elements of page p, whose header and element table are
// read, and which spans span bytes; base is its offset in the file (-1: an
// inline page, all of it in p). It appends the pages p refers to (children,
// roots of buckets) to next.
func (w *pageWalk) elems(next []subtree, p []byte, span, base int64, id uint64, depth int, path string) ([]subtree, error) {
	if len(p) < pageHeaderSize {
		return nil, fmt.Errorf("%s: inline page of %d bytes", path, len(p))
	}
	flags, count := ne.Uint16(p[8:]), int(ne.Uint16(p[10:]))
	if table := pageHeaderSize + count*pageElemSize; int64(table) > span || table > len(p) {
		return nil, fmt.Errorf("%s: page %d says %d elements, more than it holds", path, id, count)
	}
	for i := range count {
		e := pageHeaderSize + i*pageElemSize
		switch flags {
		case flagBranch:
			pos, ksize, child := int64(ne.Uint32(p[e:])), int64(ne.Uint32(p[e+4:])), ne.Uint64(p[e+8:])
			if int64(e)+pos+ksize > span {
				return nil, fmt.Errorf("%s: page %d element %d: key runs past the page", path, id, i)
			}
			next = append(next, subtree{child, depth + 1, path})
		case flagLeaf:
			eflags := ne.Uint32(p[e:])
			pos, ksize, vsize := int64(ne.Uint32(p[e+4:])), int64(ne.Uint32(p[e+8:])), int64(ne.Uint32(p[e+12:]))
			koff := int64(e) + pos
			if koff+ksize+vsize > span {
				return nil, fmt.Errorf("%s: page %d element %d: key and value run past the page", path, id, i)
			}
			if eflags&leafBucket == 0 {
				continue
			}
			// A bucket: its name and value, read from the page.
			kv := p[min(int64(len(p)), koff):min(int64(len(p)), koff+ksize+vsize)]
			if base >= 0 {
				kv = make([]byte, ksize+vsize)
				if err := w.readAt(kv, base+koff); err != nil {
					return nil, fmt.Errorf("%s: read page %d element %d: %w", path, id, i, err)
				}
			}
			name, v := kv[:ksize], kv[ksize:]
			sub := fmt.Sprintf("%s/%q", path, name)
			if len(v) < bucketHeader {
				return nil, fmt.Errorf("%s: bucket header of %d bytes", sub, len(v))
			}
			if root := ne.Uint64(v); root != 0 && w.deferred != nil && deferredBuckets[sub] {
				if _, twice := w.deferred[sub]; twice {
					return nil, fmt.Errorf("%s: bucket found twice", sub)
				}
				w.deferred[sub] = root
				continue
			}
			if root := ne.Uint64(v); root != 0 {
				next = append(next, subtree{root, depth + 1, sub})
				continue
			}
			inline := v[bucketHeader:]
			if len(inline) < pageHeaderSize || ne.Uint16(inline[8:]) != flagLeaf {
				return nil, fmt.Errorf("%s: inline bucket is not a leaf page", sub)
			}
			if depth+1 > maxTreeDepth {
				return nil, fmt.Errorf("%s: buckets nested deeper than %d", sub, maxTreeDepth)
			}
			var err error
			if next, err = w.elems(next, inline, int64(len(inline)), -1, 0, depth+1, sub); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s: page %d has flags %#x", path, id, flags)
		}
	}
	return next, nil
}
