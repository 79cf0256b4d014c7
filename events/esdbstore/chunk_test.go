package esdbstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"meshplane/events"
)

// hashOf is a chain value for tests: n in every byte.
func hashOf(n byte) events.Hash { return events.Hash(bytes.Repeat([]byte{n}, len(events.Hash{}))) }

func testChunk() (uint64, *chunk, []chunkRef) {
	c := &chunk{first: 9, prev: hashOf(8)}
	for i := range 3 {
		c.at = append(c.at, esdb.Position{Commit: math.MaxUint64 - 10 + uint64(i), Prepare: uint64(i)})
		c.ids = append(c.ids, uuid.New())
		c.chain = append(c.chain, hashOf(9+byte(i)))
	}
	dir := []chunkRef{{first: 1, at: esdb.Position{Commit: 0, Prepare: 0}}, {first: 5, at: esdb.Position{Commit: 7, Prepare: 7}, prev: hashOf(4)}}
	return 2, c, dir
}

// sameChunk reports whether two chunks hold the same entries.
func sameChunk(a, b *chunk) bool {
	return a.first == b.first && a.prev == b.prev && slices.Equal(a.at, b.at) && slices.Equal(a.ids, b.ids) && slices.Equal(a.chain, b.chain)
}

func TestChunkRoundTrip(t *testing.T) {
	k, c, dir := testChunk()
	b := encodeChunk(k, c, dir)
	if len(b) != 64+3*64+2*56 {
		t.Fatalf("%d bytes, want a 64-byte header, 64 bytes an entry, 56 a directory entry", len(b))
	}
	gk, gc, gdir, err := decodeChunk(b)
	if err != nil {
		t.Fatal(err)
	}
	if gk != k || !sameChunk(gc, c) || !slices.Equal(gdir, dir) {
		t.Errorf("decoded chunk %d %+v %v, want chunk %d %+v %v", gk, gc, gdir, k, c, dir)
	}
	if _, _, _, err := decodeChunk(encodeChunk(0, &chunk{first: 1, at: c.at[:1], ids: c.ids[:1], chain: c.chain[:1]}, nil)); err != nil {
		t.Errorf("chunk 0: %v", err)
	}
}

// TestChunkV1RoundTrip: a chunk of the format before the chain (an older
// build's table) still decodes, with no chain values.
func TestChunkV1RoundTrip(t *testing.T) {
	k, c, dir := testChunk()
	b := encodeChunkAs(chunkV1, k, c, dir)
	if len(b) != 32+3*32+2*24 || string(b[:4]) != "mpt1" {
		t.Fatalf("%d bytes, magic %q", len(b), b[:4])
	}
	gk, gc, gdir, err := decodeChunk(b)
	if err != nil {
		t.Fatal(err)
	}
	dir[1].prev = events.Hash{}
	want := &chunk{first: c.first, at: c.at, ids: c.ids}
	if gk != k || !sameChunk(gc, want) || gc.chain != nil || !slices.Equal(gdir, dir) {
		t.Errorf("decoded chunk %d %+v %v, want chunk %d %+v %v", gk, gc, gdir, k, want, dir)
	}
}

// TestChunkDamage: every way a chunk can be wrong is ErrDamaged, never a
// table with wrong positions.
func TestChunkDamage(t *testing.T) {
	k, c, dir := testChunk()
	good := encodeChunk(k, c, dir)
	be := binary.BigEndian
	resum := func(b []byte) []byte { be.PutUint32(b[28:], chunkCRC(b)); return b }
	edit := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	with := func(f func(c *chunk)) *chunk {
		d := *c
		f(&d)
		return &d
	}
	cases := map[string][]byte{
		"empty":                     nil,
		"short":                     good[:63],
		"other magic":               edit(func(b []byte) []byte { b[3] = '3'; return resum(b) }),
		"a flipped bit":             edit(func(b []byte) []byte { b[64+5] ^= 1; return b }),
		"a flipped chain bit":       edit(func(b []byte) []byte { b[64+40] ^= 1; return b }),
		"a flipped prev bit":        edit(func(b []byte) []byte { b[40] ^= 1; return b }),
		"truncated":                 resum(slices.Clone(good[:len(good)-1])),
		"more entries":              edit(func(b []byte) []byte { be.PutUint32(b[20:], 4); return resum(b) }),
		"no entry":                  encodeChunk(k, &chunk{first: 9}, dir),
		"directory short":           encodeChunk(k, c, dir[:1]),
		"entries out of $all order": encodeChunk(k, with(func(d *chunk) { d.at = []esdb.Position{c.at[1], c.at[0]}; d.ids, d.chain = c.ids[:2], c.chain[:2] }), dir),
		"chunk 0 not at 1": encodeChunk(0, with(func(d *chunk) {
			d.first, d.at, d.ids, d.chain, d.prev = 2, c.at[:1], c.ids[:1], c.chain[:1], events.Hash{}
		}), nil),
		"chunk 0 with a prev":          encodeChunk(0, with(func(d *chunk) { d.first, d.at, d.ids, d.chain = 1, c.at[:1], c.ids[:1], c.chain[:1] }), nil),
		"directory 0 with a prev":      encodeChunk(k, c, []chunkRef{{first: 1, prev: hashOf(1)}, dir[1]}),
		"begins inside the one before": encodeChunk(k, with(func(d *chunk) { d.first = 5 }), dir),
		"directory out of order":       encodeChunk(k, c, []chunkRef{dir[1], dir[0]}),
		"position overflow":            encodeChunk(k, with(func(d *chunk) { d.first = math.MaxUint64 - 1 }), dir),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := decodeChunk(b); !errors.Is(err, events.ErrDamaged) {
				t.Errorf("decodeChunk: %v, want ErrDamaged", err)
			}
		})
	}
}

// BenchmarkChainPerEvent is what numbering one event costs with the chain
// beyond without it: decoding the event of $all (its metadata JSON) and
// events.ChainOf (its record and SHA-256), in process, no server.
func BenchmarkChainPerEvent(b *testing.B) {
	at := time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.UTC)
	md, err := encodeMeta(1, at, "agent:novox", "", "push-17")
	if err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"node":"novox","apply":"a-17","resources":[{"name":"route-proxy","digest":"sha256:0123456789abcdef"}]}`)
	rec := &esdb.RecordedEvent{EventID: uuid.New(), EventType: "apply.reported", StreamID: "mesh-node-novox",
		EventNumber: 41, Position: esdb.Position{Commit: 1 << 20, Prepare: 1 << 20}, Data: data, UserMetadata: md}
	s := &Store{prefix: DefaultPrefix}
	var prev events.Hash
	for b.Loop() {
		e, err := s.decode(rec, 42)
		if err != nil {
			b.Fatal(err)
		}
		prev = events.ChainOf(prev, e)
	}
}
