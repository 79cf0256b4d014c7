package boltstore

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
)

// bbolt's page format, as its internal/common package lays it down (native
// byte order; every platform Go builds bbolt for that we ship is little
// endian). Walking the file ourselves, with ReadAt and every offset checked,
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

var ne = binary.LittleEndian

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
}

// walkPages checks the file's structure from meta: the freelist, then every
// bucket's tree. It returns the first damage found, or nil.
func walkPages(r io.ReaderAt, size int64, pageSize int, meta boltMeta) (int, error) {
	if pageSize < 1024 || pageSize > 1<<20 || int(meta.pageSize) != pageSize {
		return 0, fmt.Errorf("page size %d (meta says %d)", pageSize, meta.pageSize)
	}
	if meta.hwm < 2 || meta.hwm > uint64(size)/uint64(pageSize) {
		return 0, fmt.Errorf("file is %d bytes (%d pages of %d), its meta says %d pages: truncated",
			size, uint64(size)/uint64(pageSize), pageSize, meta.hwm)
	}
	w := &pageWalk{r: r, size: size, pageSize: pageSize, meta: meta, seen: make([]bool, meta.hwm)}
	w.seen[0], w.seen[1] = true, true
	if meta.freelist != noFreelist {
		if err := w.freelist(meta.freelist); err != nil {
			return w.pages, err
		}
	}
	return w.pages, w.tree(meta.root, 0, "root")
}

// page reads page id and its overflow, checking that they are in the file,
// that the page says it is id and has one of want's flags, and that no page
// of it was reached before.
func (w *pageWalk) page(id uint64, want uint16, path string) ([]byte, error) {
	if id < 2 || id >= w.meta.hwm {
		return nil, fmt.Errorf("%s: page %d out of range [2, %d)", path, id, w.meta.hwm)
	}
	var hdr [pageHeaderSize]byte
	if _, err := w.r.ReadAt(hdr[:], int64(id)*int64(w.pageSize)); err != nil {
		return nil, fmt.Errorf("%s: read page %d: %w", path, id, err)
	}
	if got := ne.Uint64(hdr[:]); got != id {
		return nil, fmt.Errorf("%s: page %d says it is page %d", path, id, got)
	}
	if flags := ne.Uint16(hdr[8:]); flags&want == 0 || flags&^want != 0 {
		return nil, fmt.Errorf("%s: page %d has flags %#x, want %#x", path, id, flags, want)
	}
	overflow := uint64(ne.Uint32(hdr[12:]))
	if id+overflow >= w.meta.hwm {
		return nil, fmt.Errorf("%s: page %d and its %d overflow pages run past the last page %d", path, id, overflow, w.meta.hwm-1)
	}
	for p := id; p <= id+overflow; p++ {
		if w.seen[p] {
			return nil, fmt.Errorf("%s: page %d is reached twice", path, p)
		}
		w.seen[p] = true
	}
	buf := make([]byte, (1+overflow)*uint64(w.pageSize))
	if _, err := w.r.ReadAt(buf, int64(id)*int64(w.pageSize)); err != nil {
		return nil, fmt.Errorf("%s: read page %d: %w", path, id, err)
	}
	w.pages++
	return buf, nil
}

func (w *pageWalk) freelist(id uint64) error {
	p, err := w.page(id, flagFreelist, "freelist")
	if err != nil {
		return err
	}
	idx, count := uint64(0), uint64(ne.Uint16(p[10:]))
	if count == 0xFFFF {
		if len(p) < pageHeaderSize+8 {
			return fmt.Errorf("freelist: page %d too short for its count", id)
		}
		idx, count = 1, ne.Uint64(p[pageHeaderSize:])
	}
	if count > uint64(len(p)-pageHeaderSize)/8 || pageHeaderSize+8*(idx+count) > uint64(len(p)) {
		return fmt.Errorf("freelist: page %d says %d free pages, more than it holds", id, count)
	}
	for i := idx; i < idx+count; i++ {
		if f := ne.Uint64(p[pageHeaderSize+8*i:]); f < 2 || f >= w.meta.hwm {
			return fmt.Errorf("freelist: page %d lists free page %d, out of range [2, %d)", id, f, w.meta.hwm)
		}
	}
	return nil
}

// tree checks the tree rooted at page id, and every bucket nested in it.
func (w *pageWalk) tree(id uint64, depth int, path string) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("%s: tree deeper than %d pages", path, maxTreeDepth)
	}
	p, err := w.page(id, flagBranch|flagLeaf, path)
	if err != nil {
		return err
	}
	return w.elems(p, id, depth, path)
}

// elems checks the elements of page p (id 0: an inline page).
func (w *pageWalk) elems(p []byte, id uint64, depth int, path string) error {
	if len(p) < pageHeaderSize {
		return fmt.Errorf("%s: inline page of %d bytes", path, len(p))
	}
	flags, count := ne.Uint16(p[8:]), int(ne.Uint16(p[10:]))
	if pageHeaderSize+count*pageElemSize > len(p) {
		return fmt.Errorf("%s: page %d says %d elements, more than it holds", path, id, count)
	}
	for i := range count {
		e := pageHeaderSize + i*pageElemSize
		switch flags {
		case flagBranch:
			pos, ksize, child := int64(ne.Uint32(p[e:])), int64(ne.Uint32(p[e+4:])), ne.Uint64(p[e+8:])
			if int64(e)+pos+ksize > int64(len(p)) {
				return fmt.Errorf("%s: page %d element %d: key runs past the page", path, id, i)
			}
			if err := w.tree(child, depth+1, path); err != nil {
				return err
			}
		case flagLeaf:
			eflags := ne.Uint32(p[e:])
			pos, ksize, vsize := int64(ne.Uint32(p[e+4:])), int64(ne.Uint32(p[e+8:])), int64(ne.Uint32(p[e+12:]))
			koff := int64(e) + pos
			if koff+ksize+vsize > int64(len(p)) {
				return fmt.Errorf("%s: page %d element %d: key and value run past the page", path, id, i)
			}
			if eflags&leafBucket == 0 {
				continue
			}
			name := p[koff : koff+ksize]
			v := p[koff+ksize : koff+ksize+vsize]
			sub := fmt.Sprintf("%s/%q", path, name)
			if len(v) < bucketHeader {
				return fmt.Errorf("%s: bucket header of %d bytes", sub, len(v))
			}
			if root := ne.Uint64(v); root != 0 {
				if err := w.tree(root, depth+1, sub); err != nil {
					return err
				}
				continue
			}
			inline := v[bucketHeader:]
			if len(inline) < pageHeaderSize || ne.Uint16(inline[8:]) != flagLeaf {
				return fmt.Errorf("%s: inline bucket is not a leaf page", sub)
			}
			if depth+1 > maxTreeDepth {
				return fmt.Errorf("%s: buckets nested deeper than %d", sub, maxTreeDepth)
			}
			if err := w.elems(inline, 0, depth+1, sub); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: page %d has flags %#x", path, id, flags)
		}
	}
	return nil
}
