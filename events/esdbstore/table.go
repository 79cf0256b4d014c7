package esdbstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"meshplane/events"
	"meshplane/internal/crcframe"
)

// TableStream is the contract stream name the position table takes: its
// KurrentDB stream is the prefix followed by it ("mesh-$positions-chained").
// Append and ReadStream refuse it, and LegacyTableStream.
const TableStream = "$positions-chained"

// LegacyTableStream is the stream of the table an older build kept, in
// chunks of the format before the chain (chunkV1), and keeps while it runs:
// this build reads its last chunk once, to check it against $all, and never
// writes it.
const LegacyTableStream = "$positions"

// chunkType is the event type of the table's chunks: a $ type, so that no
// store counts them among its events (see ours), this build or an older one.
const chunkType = "$mesh-positions"

// defaultChunk is how many positions a chunk holds: 256 KiB of entries.
const defaultChunk = 4096

// maxChunkData bounds a chunk's bytes below KurrentDB's default
// MaxAppendSize (1 MiB), with room for the append's framing. A chunk grows
// with the directory it carries (56 bytes a chunk before it): past about
// 13,000 chunks (53 million positions, at 4096 a chunk) the store writes no
// more, and an open reads $all from the last chunk written.
const maxChunkData = 1_000_000

// The chunk format, a persisted format (a new format takes a new magic), is
// the binary data of one KurrentDB event of type chunkType, content type
// binary, at revision k of the table stream. All integers are big-endian.
//
//	header, 64 bytes:
//	  [0:4]   "mpt2"
//	  [4:12]  k, the chunk's index: its revision in the table stream
//	  [12:20] first, the store position of its first entry (chunk 0: 1)
//	  [20:24] n, its entries, at least 1
//	  [24:28] d, its directory's entries: k
//	  [28:32] CRC-32C (Castagnoli) of the header's first 28 bytes and all
//	          that follows them from byte 32
//	  [32:64] prev, the chain value of position first-1 (chunk 0: zero)
//	n entries, 64 bytes each, for positions first .. first+n-1:
//	  the event's $all commit position (8), prepare position (8), id (16),
//	  and the chain value of the position (32; events/chain.go)
//	d directory entries, 56 bytes each, one for each chunk before this one:
//	  its first (8), the commit (8) and prepare (8) positions of its first
//	  entry, and its prev (32)
//
// Chunks follow each other with no gap or overlap (chunk k+1's first is
// chunk k's first plus n, its prev chunk k's last chain value), and entries
// are in $all order. The directory lets the last chunk alone tell an open
// where every chunk begins, and with which chain value.
//
// The format before it, "mpt1" (chunkV1), is the same with no chain: a
// header of 32 bytes (no prev), entries of 32 (no chain value), directory
// entries of 24 (no prev). Its chunks are in LegacyTableStream, never in
// TableStream.
type chunkFormat struct {
	magic                   string
	header, entry, dirEntry int
	chained                 bool
}

var (
	chunkV1 = chunkFormat{magic: "mpt1", header: 32, entry: 32, dirEntry: 24}
	chunkV2 = chunkFormat{magic: "mpt2", header: 64, entry: 64, dirEntry: 56, chained: true}
)

// chunk is a run of consecutive positions of the table.
type chunk struct {
	first uint64          // the position of at[0]
	prev  events.Hash     // the chain value of position first-1
	at    []esdb.Position // where in $all each event is
	ids   []uuid.UUID     // and its id
	chain []events.Hash   // and its chain value (nil in a chunkV1 chunk)
}

// next is the position after the chunk's last.
func (c *chunk) next() uint64 { return c.first + uint64(len(c.at)) }

// last is the chain value of the chunk's last position (prev if it has
// none).
func (c *chunk) last() events.Hash {
	if len(c.chain) == 0 {
		return c.prev
	}
	return c.chain[len(c.chain)-1]
}

// chunkRef is a directory entry: where a chunk begins.
type chunkRef struct {
	first uint64
	at    esdb.Position // of its first entry
	prev  events.Hash   // the chain value before its first entry
}

// encodeChunk is the chunk k in the current format.
func encodeChunk(k uint64, c *chunk, dir []chunkRef) []byte { return encodeChunkAs(chunkV2, k, c, dir) }

// encodeChunkAs writes the chunk k in the format f (the chain values, in
// f.chained only).
func encodeChunkAs(f chunkFormat, k uint64, c *chunk, dir []chunkRef) []byte {
	b := make([]byte, f.header+len(c.at)*f.entry+len(dir)*f.dirEntry)
	be := binary.BigEndian
	copy(b, f.magic)
	be.PutUint64(b[4:], k)
	be.PutUint64(b[12:], c.first)
	be.PutUint32(b[20:], uint32(len(c.at)))
	be.PutUint32(b[24:], uint32(len(dir)))
	if f.chained {
		copy(b[32:64], c.prev[:])
	}
	o := f.header
	for i, at := range c.at {
		be.PutUint64(b[o:], at.Commit)
		be.PutUint64(b[o+8:], at.Prepare)
		copy(b[o+16:o+32], c.ids[i][:])
		if f.chained {
			copy(b[o+32:o+64], c.chain[i][:])
		}
		o += f.entry
	}
	for _, d := range dir {
		be.PutUint64(b[o:], d.first)
		be.PutUint64(b[o+8:], d.at.Commit)
		be.PutUint64(b[o+16:], d.at.Prepare)
		if f.chained {
			copy(b[o+24:o+56], d.prev[:])
		}
		o += f.dirEntry
	}
	be.PutUint32(b[28:], chunkCRC(b))
	return b
}

// chunkCRC is the checksum of a chunk of either format: its first 28 bytes
// and all from byte 32.
func chunkCRC(b []byte) uint32 {
	return crc32.Update(crc32.Checksum(b[:28], crcframe.Table), crcframe.Table, b[32:])
}

// formatOf is the format whose magic b starts with.
func formatOf(b []byte) (chunkFormat, bool) {
	for _, f := range [...]chunkFormat{chunkV1, chunkV2} {
		if len(b) >= f.header && string(b[:4]) == f.magic {
			return f, true
		}
	}
	return chunkFormat{}, false
}

// decodeChunk reads what encodeChunkAs wrote, in either format (c.chain is
// nil for chunkV1), and refuses anything else with an error wrapping
// events.ErrDamaged.
func decodeChunk(b []byte) (k uint64, c *chunk, dir []chunkRef, err error) {
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", events.ErrDamaged, fmt.Sprintf(format, args...))
	}
	be := binary.BigEndian
	f, ok := formatOf(b)
	if !ok {
		return 0, nil, nil, damaged("not a chunk of the position table (%d bytes)", len(b))
	}
	k = be.Uint64(b[4:])
	n, d := uint64(be.Uint32(b[20:])), uint64(be.Uint32(b[24:]))
	if want := uint64(f.header) + n*uint64(f.entry) + d*uint64(f.dirEntry); uint64(len(b)) != want {
		return 0, nil, nil, damaged("chunk of %d bytes, its header says %d", len(b), want)
	}
	if sum := be.Uint32(b[28:]); sum != chunkCRC(b) {
		return 0, nil, nil, damaged("chunk checksum %08x, its bytes sum to %08x", sum, chunkCRC(b))
	}
	c = &chunk{first: be.Uint64(b[12:]), at: make([]esdb.Position, n), ids: make([]uuid.UUID, n)}
	if f.chained {
		copy(c.prev[:], b[32:64])
		c.chain = make([]events.Hash, n)
	}
	switch {
	case n == 0:
		return 0, nil, nil, damaged("chunk %d holds no entry", k)
	case d != k:
		return 0, nil, nil, damaged("chunk %d carries a directory of %d chunks", k, d)
	case c.first == 0 || c.first > math.MaxUint64-n:
		return 0, nil, nil, damaged("chunk %d begins at position %d", k, c.first)
	}
	o := f.header
	for i := range c.at {
		c.at[i] = esdb.Position{Commit: be.Uint64(b[o:]), Prepare: be.Uint64(b[o+8:])}
		copy(c.ids[i][:], b[o+16:o+32])
		if f.chained {
			copy(c.chain[i][:], b[o+32:o+64])
		}
		if i > 0 && comparePos(c.at[i-1], c.at[i]) >= 0 {
			return 0, nil, nil, damaged("chunk %d: position %d is not after %d in $all", k, c.first+uint64(i), c.first+uint64(i)-1)
		}
		o += f.entry
	}
	dir = make([]chunkRef, d)
	for j := range dir {
		dir[j] = chunkRef{first: be.Uint64(b[o:]), at: esdb.Position{Commit: be.Uint64(b[o+8:]), Prepare: be.Uint64(b[o+16:])}}
		if f.chained {
			copy(dir[j].prev[:], b[o+24:o+56])
		}
		if j == 0 && (dir[j].first != 1 || !dir[j].prev.IsZero()) ||
			j > 0 && (dir[j].first <= dir[j-1].first || comparePos(dir[j-1].at, dir[j].at) >= 0) {
			return 0, nil, nil, damaged("chunk %d: directory entry %d (position %d) is out of order", k, j, dir[j].first)
		}
		o += f.dirEntry
	}
	switch {
	case d == 0 && c.first != 1:
		return 0, nil, nil, damaged("chunk 0 begins at position %d, not 1", c.first)
	case d == 0 && !c.prev.IsZero():
		return 0, nil, nil, damaged("chunk 0 has a chain value before position 1")
	case d > 0 && (dir[d-1].first >= c.first || comparePos(dir[d-1].at, c.at[0]) >= 0):
		return 0, nil, nil, damaged("chunk %d begins before the chunk before it", k)
	}
	return k, c, dir, nil
}

// comparePos orders $all positions: commit, then prepare.
func comparePos(a, b esdb.Position) int {
	switch {
	case a.Commit != b.Commit:
		return cmp(a.Commit, b.Commit)
	default:
		return cmp(a.Prepare, b.Prepare)
	}
}

// tableName is the KurrentDB stream of the position table.
func (s *Store) tableName() string { return s.prefix + TableStream }

// loadLast reads the table's last chunk, at Open: the directory of every
// chunk, and the $all position and chain value from which the events not yet
// in a chunk follow. A store without a table (new, or written by an older
// build: see loadLegacy) reads $all from the start.
func (s *Store) loadLast(ctx context.Context) error {
	rec, err := s.lastOf(ctx, s.tableName())
	if err != nil || rec == nil {
		if err == nil {
			err = s.loadLegacy(ctx)
		}
		return err
	}
	k, last, dir, err := decodeRecorded(rec, chunkV2)
	if err != nil {
		return err
	}
	s.tab.Lock()
	defer s.tab.Unlock()
	s.dir = append(dir, chunkRef{first: last.first, at: last.at[0], prev: last.prev})
	s.chunks = make([]*chunk, k+1)
	s.chunks[k] = last
	s.addIDs(last)
	n := len(last.at) - 1
	s.tail = chunk{first: last.next(), prev: last.last()}
	s.seen = last.at[n]
	s.check = &tableEntry{at: last.at[n], id: last.ids[n], p: last.first + uint64(n), chain: last.chain[n], prev: last.prev, chunk: k}
	if n > 0 {
		s.check.prev = last.chain[n-1]
	}
	return nil
}

// loadLegacy reads the last chunk of the table an older build kept
// (LegacyTableStream, chunkV1), which has no chain values: the open reads
// $all from the start, computing them from position 1, writes the table
// anew in the current format, and checks on the way that $all holds the old
// chunk's last event where it says (see catchUp).
func (s *Store) loadLegacy(ctx context.Context) error {
	rec, err := s.lastOf(ctx, s.prefix+LegacyTableStream)
	if err != nil || rec == nil {
		return err
	}
	k, last, _, err := decodeRecorded(rec, chunkV1)
	if err != nil {
		return err
	}
	n := len(last.at) - 1
	s.tab.Lock()
	s.legacy = &tableEntry{at: last.at[n], id: last.ids[n], p: last.first + uint64(n), chunk: k}
	s.tab.Unlock()
	return nil
}

// lastOf reads the last event of a stream; nil if there is none.
func (s *Store) lastOf(ctx context.Context, stream string) (*esdb.RecordedEvent, error) {
	c := s.conn()
	rs, err := c.ReadStream(ctx, stream, esdb.ReadStreamOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
	if err = by(c, err); err != nil {
		return nil, err
	}
	defer rs.Close()
	ev, err := rs.Recv()
	switch {
	case isNotFound(err) || isEOF(err):
		return nil, nil
	case err != nil:
		return nil, by(c, err)
	}
	return ev.OriginalEvent(), nil
}

// tableEntry is one position of the table, with the chain value before it,
// and the chunk it was read from.
type tableEntry struct {
	at          esdb.Position
	id          uuid.UUID
	p           uint64
	prev, chain events.Hash
	chunk       uint64
}

// entry is where in $all a position's event is, and its chain value.
type entry struct {
	at    esdb.Position
	chain events.Hash
}

// decodeRecorded decodes a chunk read from a table stream, which holds
// chunks of the format f only.
func decodeRecorded(rec *esdb.RecordedEvent, f chunkFormat) (uint64, *chunk, []chunkRef, error) {
	where := fmt.Sprintf("%s@%d", rec.StreamID, rec.EventNumber)
	if rec.EventType != chunkType {
		return 0, nil, nil, fmt.Errorf("esdbstore: position table %s: %w: an event of type %q, not %q",
			where, events.ErrDamaged, rec.EventType, chunkType)
	}
	k, c, dir, err := decodeChunk(rec.Data)
	switch {
	case err != nil:
	case k != rec.EventNumber:
		err = fmt.Errorf("%w: chunk %d stored as revision %d", events.ErrDamaged, k, rec.EventNumber)
	case (c.chain != nil) != f.chained:
		err = fmt.Errorf("%w: a chunk of another format than %q", events.ErrDamaged, f.magic)
	}
	if err != nil {
		return 0, nil, nil, fmt.Errorf("esdbstore: position table %s: %w", where, err)
	}
	return k, c, dir, nil
}

// addIDs indexes c's ids. The caller holds s.tab.
func (s *Store) addIDs(c *chunk) {
	for i, id := range c.ids {
		p := c.first + uint64(i)
		if old, ok := s.ids[id]; !ok || p < old {
			s.ids[id] = p // the first, were an id stored twice
		}
	}
}

// readChunks reads n chunks of the table stream from chunk k on, checks each
// against the directory, and keeps them.
func (s *Store) readChunks(ctx context.Context, k, n uint64) ([]*chunk, error) {
	c := s.conn()
	rs, err := c.ReadStream(ctx, s.tableName(), esdb.ReadStreamOptions{From: esdb.Revision(k)}, n)
	if err = by(c, err); err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []*chunk
	for {
		ev, err := rs.Recv()
		if isEOF(err) || isNotFound(err) {
			break
		}
		if err != nil {
			return nil, by(c, err)
		}
		j, ch, dir, err := decodeRecorded(ev.OriginalEvent(), chunkV2)
		if err != nil {
			return nil, err
		}
		if err := s.keep(j, ch, dir); err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	if uint64(len(out)) != n {
		return nil, fmt.Errorf("esdbstore: position table %s: %w: read %d chunks from %d, want %d",
			s.tableName(), events.ErrDamaged, len(out), k, n)
	}
	return out, nil
}

// keep checks a chunk read back against the directory and the chunks around
// it, and keeps it.
func (s *Store) keep(k uint64, c *chunk, dir []chunkRef) error {
	s.tab.Lock()
	defer s.tab.Unlock()
	bad := func(why string) error {
		return fmt.Errorf("esdbstore: position table %s@%d: %w: %s", s.tableName(), k, events.ErrDamaged, why)
	}
	switch {
	case k >= uint64(len(s.dir)):
		return bad("beyond the directory")
	case s.dir[k] != (chunkRef{first: c.first, at: c.at[0], prev: c.prev}):
		return bad("it does not begin where the directory says, with its chain value")
	case k+1 < uint64(len(s.dir)) && (c.next() != s.dir[k+1].first || c.last() != s.dir[k+1].prev),
		k+1 == uint64(len(s.dir)) && (c.next() != s.tail.first || c.last() != s.tail.prev):
		return bad("it does not end where the next chunk begins, with the chain value it follows")
	case !slices.Equal(dir, s.dir[:k]):
		return bad("its directory is not the last chunk's")
	}
	if s.chunks[k] == nil {
		s.chunks[k] = c
		s.addIDs(c)
	}
	return nil
}

// chunkAt returns chunk k, reading it if it is not in memory.
func (s *Store) chunkAt(ctx context.Context, k int) (*chunk, error) {
	s.tab.Lock()
	c := s.chunks[k]
	s.tab.Unlock()
	if c != nil {
		return c, nil
	}
	got, err := s.readChunks(ctx, uint64(k), 1)
	if err != nil {
		return nil, err
	}
	return got[0], nil
}

// loadIDs reads every chunk not yet in memory, so that s.ids holds every id
// of the store: what an append's id check needs.
func (s *Store) loadIDs(ctx context.Context) error {
	s.tab.Lock()
	if s.idsAll {
		s.tab.Unlock()
		return nil
	}
	missing := -1
	for k, c := range s.chunks {
		if c == nil {
			missing = k
			break
		}
	}
	n := len(s.chunks)
	s.tab.Unlock()
	if missing >= 0 {
		if _, err := s.readChunks(ctx, uint64(missing), uint64(n-missing)); err != nil {
			return err
		}
	}
	s.tab.Lock()
	s.idsAll = true // chunks written from now on come from the tail, whose ids are in
	s.tab.Unlock()
	return nil
}

// entryAt returns where in $all the store's position p is, and its chain
// value, reading its chunk if need be; false if p is beyond the table.
// Position 0 is the zero entry.
func (s *Store) entryAt(ctx context.Context, p uint64) (entry, bool, error) {
	s.tab.Lock()
	en, ok := s.entryLocked(p)
	k := -1
	if !ok && p < s.tail.first {
		k = s.chunkOf(p)
	}
	s.tab.Unlock()
	if ok || k < 0 {
		return en, ok, nil
	}
	c, err := s.chunkAt(ctx, k)
	if err != nil {
		return entry{}, false, err
	}
	return entry{at: c.at[p-c.first], chain: c.chain[p-c.first]}, true, nil
}

// chunkOf returns the chunk that holds position p, -1 if none does (p is 0,
// or in the tail). The caller holds s.tab.
func (s *Store) chunkOf(p uint64) int {
	if p == 0 || p >= s.tail.first {
		return -1
	}
	k, _ := slices.BinarySearchFunc(s.dir, p, func(d chunkRef, p uint64) int { return cmp(d.first, p+1) })
	return k - 1 // the last chunk beginning at or before p
}

// find returns the store's position of the event at $all position at;
// false if the table does not hold it.
func (s *Store) find(ctx context.Context, at esdb.Position) (uint64, bool, error) {
	s.tab.Lock()
	if len(s.tail.at) > 0 && comparePos(at, s.tail.at[0]) >= 0 {
		defer s.tab.Unlock()
		i, ok := slices.BinarySearchFunc(s.tail.at, at, comparePos)
		return s.tail.first + uint64(i), ok, nil
	}
	k, _ := slices.BinarySearchFunc(s.dir, at, func(d chunkRef, at esdb.Position) int {
		if comparePos(d.at, at) <= 0 {
			return -1
		}
		return 1
	})
	k-- // the last chunk beginning at or before at
	s.tab.Unlock()
	if k < 0 {
		return 0, false, nil
	}
	c, err := s.chunkAt(ctx, k)
	if err != nil {
		return 0, false, err
	}
	i, ok := slices.BinarySearchFunc(c.at, at, comparePos)
	return c.first + uint64(i), ok, nil
}

// writeChunks writes the tail's full chunks to the table stream, so that
// the next open starts after them. It is called by catchUp, under s.sync.
// A chunk another store wrote first is read back and taken instead, if it
// agrees with the tail; one that does not is damage, and fails the call.
// Any other failure (a server that refuses the write, say) leaves the tail
// as it is, to be tried again once it has grown by another chunk: the table
// stream is a cache of what $all says, and the store works without it.
func (s *Store) writeChunks(ctx context.Context) error {
	for {
		s.tab.Lock()
		if len(s.tail.at) < s.chunk || len(s.tail.at) < s.retry {
			s.tab.Unlock()
			return nil
		}
		k := len(s.dir)
		t := &s.tail
		c := &chunk{first: t.first, prev: t.prev,
			at: slices.Clone(t.at[:s.chunk]), ids: slices.Clone(t.ids[:s.chunk]), chain: slices.Clone(t.chain[:s.chunk])}
		data := encodeChunk(uint64(k), c, s.dir)
		s.tab.Unlock()
		giveUp := func() {
			s.tab.Lock()
			s.retry = len(s.tail.at) + s.chunk
			s.tab.Unlock()
		}
		if len(data) > maxChunkData {
			giveUp()
			return nil
		}
		var expected esdb.ExpectedRevision = esdb.NoStream{}
		if k > 0 {
			expected = esdb.StreamRevision{Value: uint64(k - 1)}
		}
		cl := s.conn()
		_, err := cl.AppendToStream(ctx, s.tableName(), esdb.AppendToStreamOptions{ExpectedRevision: expected},
			esdb.EventData{EventID: uuid.New(), EventType: chunkType, ContentType: esdb.ContentTypeBinary, Data: data})
		var ee *esdb.Error
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.Code() == esdb.ErrorCodeWrongExpectedVersion:
			// Another store wrote chunk k first.
			if c, err = s.readWritten(ctx, k); err != nil {
				if errors.Is(err, events.ErrDamaged) {
					return err
				}
				giveUp()
				return nil
			}
		default:
			giveUp()
			return nil
		}
		if err := s.adopt(k, c); err != nil {
			return err
		}
	}
}

// readWritten reads chunk k, which another store wrote, without checking it
// against a directory that does not hold it yet (adopt checks it).
func (s *Store) readWritten(ctx context.Context, k int) (*chunk, error) {
	c := s.conn()
	rs, err := c.ReadStream(ctx, s.tableName(), esdb.ReadStreamOptions{From: esdb.Revision(uint64(k))}, 1)
	if err = by(c, err); err != nil {
		return nil, err
	}
	defer rs.Close()
	ev, err := rs.Recv()
	if err != nil {
		return nil, by(c, err)
	}
	_, ch, dir, err := decodeRecorded(ev.OriginalEvent(), chunkV2)
	if err != nil {
		return nil, err
	}
	s.tab.Lock()
	defer s.tab.Unlock()
	if !slices.Equal(dir, s.dir) {
		return nil, fmt.Errorf("esdbstore: position table %s@%d: %w: its directory is not this store's",
			s.tableName(), k, events.ErrDamaged)
	}
	return ch, nil
}

// adopt makes c, written as chunk k, the table's next chunk: the tail's
// entries it covers must be its own. A chunk another store wrote may reach
// past what this one has read of $all: the cursor then moves to its end.
func (s *Store) adopt(k int, c *chunk) error {
	s.tab.Lock()
	defer s.tab.Unlock()
	t := &s.tail
	n := min(len(c.at), len(t.at))
	if k != len(s.dir) || c.first != t.first ||
		!slices.Equal(c.at[:n], t.at[:n]) || !slices.Equal(c.ids[:n], t.ids[:n]) {
		return fmt.Errorf("esdbstore: position table %s@%d: %w: the chunk (positions %d to %d) disagrees with $all as this store read it",
			s.tableName(), k, events.ErrDamaged, c.first, c.next()-1)
	}
	if c.prev != t.prev || !slices.Equal(c.chain[:n], t.chain[:n]) {
		return fmt.Errorf("esdbstore: position table %s@%d: %w: the chunk's chain values (positions %d to %d) disagree with those this store computed from $all",
			s.tableName(), k, events.ErrDamaged, c.first, c.next()-1)
	}
	s.dir = append(s.dir, chunkRef{first: c.first, at: c.at[0], prev: c.prev})
	s.chunks = append(s.chunks, c)
	s.addIDs(c)
	s.retry = 0
	if m := len(c.at); m <= len(t.at) {
		s.tail = chunk{first: c.next(), prev: c.last(), at: t.at[m:], ids: t.ids[m:], chain: t.chain[m:]}
		return nil
	}
	s.tail = chunk{first: c.next(), prev: c.last()}
	if last := c.at[len(c.at)-1]; beyond(last, s.seen) {
		s.seen = last
	}
	return nil
}
