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
)

// TableStream is the contract stream name the position table takes: its
// KurrentDB stream is the prefix followed by it ("mesh-$positions"). Append
// and ReadStream refuse it.
const TableStream = "$positions"

// chunkType is the event type of the table's chunks: a $ type, so that no
// store counts them among its events (see ours), this build or an older one.
const chunkType = "$mesh-positions"

// defaultChunk is how many positions a chunk holds: 128 KiB of entries.
const defaultChunk = 4096

// maxChunkData bounds a chunk's bytes below KurrentDB's default
// MaxAppendSize (1 MiB), with room for the append's framing. A chunk grows
// with the directory it carries (24 bytes a chunk before it): past about
// 40,000 chunks the store writes no more, and an open reads $all from the
// last chunk written.
const maxChunkData = 1_000_000

// The chunk format, a persisted format (change chunkMagic to change it), is
// the binary data of one KurrentDB event of type chunkType, content type
// binary, at revision k of the table stream. All integers are big-endian.
//
//	header, 32 bytes:
//	  [0:4]   "mpt1"
//	  [4:12]  k, the chunk's index: its revision in the table stream
//	  [12:20] first, the store position of its first entry (chunk 0: 1)
//	  [20:24] n, its entries, at least 1
//	  [24:28] d, its directory's entries: k
//	  [28:32] CRC-32C (Castagnoli) of the header's first 28 bytes and all
//	          that follows it
//	n entries, 32 bytes each, for positions first .. first+n-1:
//	  the event's $all commit position (8), prepare position (8), id (16)
//	d directory entries, 24 bytes each, one for each chunk before this one:
//	  its first (8), and the commit (8) and prepare (8) positions of its
//	  first entry
//
// Chunks follow each other with no gap or overlap (chunk k+1's first is
// chunk k's first plus n), and entries are in $all order. The directory lets
// the last chunk alone tell an open where every chunk begins.
const (
	chunkMagic    = "mpt1"
	chunkHeader   = 32
	chunkEntry    = 32
	chunkDirEntry = 24
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// chunk is a run of consecutive positions of the table.
type chunk struct {
	first uint64          // the position of at[0]
	at    []esdb.Position // where in $all each event is
	ids   []uuid.UUID     // and its id
}

// next is the position after the chunk's last.
func (c *chunk) next() uint64 { return c.first + uint64(len(c.at)) }

// chunkRef is a directory entry: where a chunk begins.
type chunkRef struct {
	first uint64
	at    esdb.Position // of its first entry
}

func encodeChunk(k uint64, c *chunk, dir []chunkRef) []byte {
	b := make([]byte, chunkHeader+len(c.at)*chunkEntry+len(dir)*chunkDirEntry)
	be := binary.BigEndian
	copy(b, chunkMagic)
	be.PutUint64(b[4:], k)
	be.PutUint64(b[12:], c.first)
	be.PutUint32(b[20:], uint32(len(c.at)))
	be.PutUint32(b[24:], uint32(len(dir)))
	o := chunkHeader
	for i, at := range c.at {
		be.PutUint64(b[o:], at.Commit)
		be.PutUint64(b[o+8:], at.Prepare)
		copy(b[o+16:o+32], c.ids[i][:])
		o += chunkEntry
	}
	for _, d := range dir {
		be.PutUint64(b[o:], d.first)
		be.PutUint64(b[o+8:], d.at.Commit)
		be.PutUint64(b[o+16:], d.at.Prepare)
		o += chunkDirEntry
	}
	be.PutUint32(b[28:], chunkCRC(b))
	return b
}

func chunkCRC(b []byte) uint32 {
	return crc32.Update(crc32.Checksum(b[:28], crcTable), crcTable, b[chunkHeader:])
}

// decodeChunk reads what encodeChunk wrote, and refuses anything else with
// an error wrapping events.ErrDamaged.
func decodeChunk(b []byte) (k uint64, c *chunk, dir []chunkRef, err error) {
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", events.ErrDamaged, fmt.Sprintf(format, args...))
	}
	be := binary.BigEndian
	if len(b) < chunkHeader || string(b[:4]) != chunkMagic {
		return 0, nil, nil, damaged("not a chunk of the position table (%d bytes)", len(b))
	}
	k = be.Uint64(b[4:])
	n, d := uint64(be.Uint32(b[20:])), uint64(be.Uint32(b[24:]))
	if want := chunkHeader + n*chunkEntry + d*chunkDirEntry; uint64(len(b)) != want {
		return 0, nil, nil, damaged("chunk of %d bytes, its header says %d", len(b), want)
	}
	if sum := be.Uint32(b[28:]); sum != chunkCRC(b) {
		return 0, nil, nil, damaged("chunk checksum %08x, its bytes sum to %08x", sum, chunkCRC(b))
	}
	c = &chunk{first: be.Uint64(b[12:]), at: make([]esdb.Position, n), ids: make([]uuid.UUID, n)}
	switch {
	case n == 0:
		return 0, nil, nil, damaged("chunk %d holds no entry", k)
	case d != k:
		return 0, nil, nil, damaged("chunk %d carries a directory of %d chunks", k, d)
	case c.first == 0 || c.first > math.MaxUint64-n:
		return 0, nil, nil, damaged("chunk %d begins at position %d", k, c.first)
	}
	o := chunkHeader
	for i := range c.at {
		c.at[i] = esdb.Position{Commit: be.Uint64(b[o:]), Prepare: be.Uint64(b[o+8:])}
		copy(c.ids[i][:], b[o+16:o+32])
		if i > 0 && comparePos(c.at[i-1], c.at[i]) >= 0 {
			return 0, nil, nil, damaged("chunk %d: position %d is not after %d in $all", k, c.first+uint64(i), c.first+uint64(i)-1)
		}
		o += chunkEntry
	}
	dir = make([]chunkRef, d)
	for j := range dir {
		dir[j] = chunkRef{first: be.Uint64(b[o:]), at: esdb.Position{Commit: be.Uint64(b[o+8:]), Prepare: be.Uint64(b[o+16:])}}
		if j == 0 && dir[j].first != 1 ||
			j > 0 && (dir[j].first <= dir[j-1].first || comparePos(dir[j-1].at, dir[j].at) >= 0) {
			return 0, nil, nil, damaged("chunk %d: directory entry %d (position %d) is out of order", k, j, dir[j].first)
		}
		o += chunkDirEntry
	}
	switch {
	case d == 0 && c.first != 1:
		return 0, nil, nil, damaged("chunk 0 begins at position %d, not 1", c.first)
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
// chunk, and the $all position from which the events not yet in a chunk
// follow. A store without a table (new, or written by an older build) reads
// $all from the start.
func (s *Store) loadLast(ctx context.Context) error {
	c := s.conn()
	rs, err := c.ReadStream(ctx, s.tableName(), esdb.ReadStreamOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
	if err = by(c, err); err != nil {
		return err
	}
	defer rs.Close()
	ev, err := rs.Recv()
	switch {
	case isNotFound(err) || isEOF(err):
		return nil
	case err != nil:
		return by(c, err)
	}
	k, last, dir, err := s.decodeRecorded(ev.OriginalEvent())
	if err != nil {
		return err
	}
	s.tab.Lock()
	defer s.tab.Unlock()
	s.dir = append(dir, chunkRef{first: last.first, at: last.at[0]})
	s.chunks = make([]*chunk, k+1)
	s.chunks[k] = last
	s.addIDs(last)
	n := len(last.at) - 1
	s.tail = chunk{first: last.next()}
	s.seen = last.at[n]
	s.check = &tableEntry{at: last.at[n], id: last.ids[n], p: last.first + uint64(n)}
	return nil
}

// tableEntry is one position of the table.
type tableEntry struct {
	at esdb.Position
	id uuid.UUID
	p  uint64
}

// decodeRecorded decodes a chunk read from the table stream.
func (s *Store) decodeRecorded(rec *esdb.RecordedEvent) (uint64, *chunk, []chunkRef, error) {
	where := fmt.Sprintf("%s@%d", rec.StreamID, rec.EventNumber)
	if rec.EventType != chunkType {
		return 0, nil, nil, fmt.Errorf("esdbstore: position table %s: %w: an event of type %q, not %q",
			where, events.ErrDamaged, rec.EventType, chunkType)
	}
	k, c, dir, err := decodeChunk(rec.Data)
	if err == nil && k != rec.EventNumber {
		err = fmt.Errorf("%w: chunk %d stored as revision %d", events.ErrDamaged, k, rec.EventNumber)
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
		j, ch, dir, err := s.decodeRecorded(ev.OriginalEvent())
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
	case s.dir[k] != (chunkRef{first: c.first, at: c.at[0]}):
		return bad("it does not begin where the directory says")
	case k+1 < uint64(len(s.dir)) && c.next() != s.dir[k+1].first,
		k+1 == uint64(len(s.dir)) && c.next() != s.tail.first:
		return bad("it does not end where the next chunk begins")
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

// entryAt returns where in $all the store's position p is, reading its
// chunk if need be; false if p is beyond the table.
func (s *Store) entryAt(ctx context.Context, p uint64) (esdb.Position, bool, error) {
	s.tab.Lock()
	at, ok := s.atLocked(p)
	k := -1
	if !ok && p < s.tail.first {
		k = s.chunkOf(p)
	}
	s.tab.Unlock()
	if ok || k < 0 {
		return at, ok, nil
	}
	c, err := s.chunkAt(ctx, k)
	if err != nil {
		return esdb.Position{}, false, err
	}
	return c.at[p-c.first], true, nil
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
		c := &chunk{first: s.tail.first, at: slices.Clone(s.tail.at[:s.chunk]), ids: slices.Clone(s.tail.ids[:s.chunk])}
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
	_, ch, dir, err := s.decodeRecorded(ev.OriginalEvent())
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
	s.dir = append(s.dir, chunkRef{first: c.first, at: c.at[0]})
	s.chunks = append(s.chunks, c)
	s.addIDs(c)
	s.retry = 0
	if len(c.at) <= len(t.at) {
		s.tail = chunk{first: c.next(), at: t.at[len(c.at):], ids: t.ids[len(c.at):]}
		return nil
	}
	s.tail = chunk{first: c.next()}
	if last := c.at[len(c.at)-1]; beyond(last, s.seen) {
		s.seen = last
	}
	return nil
}
