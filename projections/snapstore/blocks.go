package snapstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"

	"meshplane/internal/crcframe"
	"meshplane/projections"
)

// The blocks timeline.db keeps (see the package doc): an entries block is
// the records of up to entriesBlock consecutive entries, a postings block
// the positions of up to postingsBlock entries of one name. Each is a
// uvarint count, then its items, then the CRC-32C (Castagnoli) of its key
// and the bytes before, 4 bytes big-endian: a block read under another key
// is damage too.
const (
	entriesBlock  = 256
	postingsBlock = 1024
)

// rec is an entry as an entries block keeps it: its position, its time
// (Unix nanoseconds) and what the fold knew of it.
type rec struct {
	pos  uint64
	at   int64
	fold projections.EntryFold
}

// Flags of a record in an entries block.
const (
	flagHeavy  = 1 << iota // fold.Heavy
	flagDecl               // fold.Decl follows, as pos - Decl
	flagDigest             // fold.Digest follows, its length then its bytes
	flagHeld               // fold.Held follows, as pos - Held
)

// seal appends the checksum of key and body to body.
func seal(key, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum(key, crcframe.Table), crcframe.Table, body)
	return binary.BigEndian.AppendUint32(body, sum)
}

// unseal checks v's checksum under key and returns its body; what names
// the block in an error.
func unseal(what string, key, v []byte) ([]byte, error) {
	if len(v) < 5 {
		return nil, damagedf("%s: %d bytes", what, len(v))
	}
	body := v[:len(v)-4]
	if sum := crc32.Update(crc32.Checksum(key, crcframe.Table), crcframe.Table, body); sum != binary.BigEndian.Uint32(v[len(v)-4:]) {
		return nil, damagedf("%s: checksum mismatch", what)
	}
	return body, nil
}

// encodeEntries is the entries block of rs (ascending, at least one),
// stored under be64(rs[0].pos).
func encodeEntries(rs []rec) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 8*len(rs)+8), uint64(len(rs)))
	prev, at := rs[0].pos, int64(0)
	for _, r := range rs {
		b = binary.AppendUvarint(b, r.pos-prev)
		b = binary.AppendVarint(b, r.at-at)
		prev, at = r.pos, r.at
		var fl byte
		if r.fold.Heavy {
			fl |= flagHeavy
		}
		if r.fold.Decl != 0 && r.fold.Decl < r.pos {
			fl |= flagDecl
		}
		if r.fold.Digest != "" {
			fl |= flagDigest
		}
		if r.fold.Held != 0 && r.fold.Held < r.pos {
			fl |= flagHeld
		}
		b = append(b, fl)
		if fl&flagDecl != 0 {
			b = binary.AppendUvarint(b, r.pos-r.fold.Decl)
		}
		if fl&flagHeld != 0 {
			b = binary.AppendUvarint(b, r.pos-r.fold.Held)
		}
		if fl&flagDigest != 0 {
			b = binary.AppendUvarint(b, uint64(len(r.fold.Digest)))
			b = append(b, r.fold.Digest...)
		}
	}
	return seal(be64(rs[0].pos), b)
}

// decodeEntries decodes and checks the entries block v stored under key:
// its checksum, its count, positions ascending from the key's.
func decodeEntries(key, v []byte) ([]rec, error) {
	if len(key) != 8 {
		return nil, damagedf("entries: key %x is not a position", key)
	}
	first := binary.BigEndian.Uint64(key)
	body, err := unseal(fmt.Sprintf("entries block at %d", first), key, v)
	if err != nil {
		return nil, err
	}
	bad := func(why string) ([]rec, error) { return nil, damagedf("entries block at %d: %s", first, why) }
	n, k := binary.Uvarint(body)
	if k <= 0 || n == 0 || n > entriesBlock {
		return bad("bad count")
	}
	body = body[k:]
	out := make([]rec, 0, n)
	pos, at := first, int64(0)
	for i := range n {
		d, k := binary.Uvarint(body)
		if k <= 0 || (i == 0) != (d == 0) || pos+d < pos {
			return bad("bad position")
		}
		body = body[k:]
		da, k := binary.Varint(body)
		if k <= 0 || len(body) == k {
			return bad("bad time")
		}
		body = body[k:]
		pos, at = pos+d, at+da
		r := rec{pos: pos, at: at}
		fl := body[0]
		body = body[1:]
		if fl&^(flagHeavy|flagDecl|flagDigest|flagHeld) != 0 {
			return bad("bad flags")
		}
		r.fold.Heavy = fl&flagHeavy != 0
		if fl&flagDecl != 0 {
			back, k := binary.Uvarint(body)
			if k <= 0 || back == 0 || back >= pos {
				return bad("bad declaration")
			}
			body, r.fold.Decl = body[k:], pos-back
		}
		if fl&flagHeld != 0 {
			back, k := binary.Uvarint(body)
			if k <= 0 || back == 0 || back >= pos {
				return bad("bad held list")
			}
			body, r.fold.Held = body[k:], pos-back
		}
		if fl&flagDigest != 0 {
			l, k := binary.Uvarint(body)
			if k <= 0 || l == 0 || l > uint64(len(body)-k) {
				return bad("bad digest")
			}
			r.fold.Digest = string(body[k : k+int(l)])
			body = body[k+int(l):]
		}
		out = append(out, r)
	}
	if len(body) != 0 {
		return bad("bytes after its records")
	}
	return out, nil
}

// find is the record at pos in rs, if any.
func find(rs []rec, pos uint64) (rec, bool) {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].pos >= pos })
	if i < len(rs) && rs[i].pos == pos {
		return rs[i], true
	}
	return rec{}, false
}

// postingKey is the key of a postings block of name from position first.
func postingKey(name []byte, first uint64) []byte {
	return binary.BigEndian.AppendUint64(append(append(make([]byte, 0, len(name)+9), name...), 0), first)
}

// encodePostings is the postings block of ps (ascending, at least one),
// stored under postingKey(name, ps[0]).
func encodePostings(key []byte, ps []uint64) []byte {
	b := binary.AppendUvarint(make([]byte, 0, 2*len(ps)+8), uint64(len(ps)))
	for i := 1; i < len(ps); i++ {
		b = binary.AppendUvarint(b, ps[i]-ps[i-1])
	}
	return seal(key, b)
}

// decodePostings decodes and checks the postings block v stored under key
// in index ix: its checksum, its count, positions ascending from the
// key's.
func decodePostings(ix string, key, v []byte) ([]uint64, error) {
	if len(key) < 9 || key[len(key)-9] != 0 {
		return nil, damagedf("%s: key %q is not a name and a position", ix, key)
	}
	body, err := unseal(fmt.Sprintf("%s block %q", ix, key), key, v)
	if err != nil {
		return nil, err
	}
	pos := binary.BigEndian.Uint64(key[len(key)-8:])
	n, k := binary.Uvarint(body)
	if k <= 0 || n == 0 || n > postingsBlock {
		return nil, damagedf("%s block %q: bad count", ix, key)
	}
	body = body[k:]
	out := make([]uint64, 1, n)
	out[0] = pos
	for range n - 1 {
		d, k := binary.Uvarint(body)
		if k <= 0 || d == 0 || pos+d < pos {
			return nil, damagedf("%s block %q: bad position", ix, key)
		}
		body, pos = body[k:], pos+d
		out = append(out, pos)
	}
	if len(body) != 0 {
		return nil, damagedf("%s block %q: bytes after its positions", ix, key)
	}
	return out, nil
}
