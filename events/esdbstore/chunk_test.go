package esdbstore

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"meshplane/events"
)

func testChunk() (uint64, *chunk, []chunkRef) {
	c := &chunk{first: 9}
	for i := range 3 {
		c.at = append(c.at, esdb.Position{Commit: math.MaxUint64 - 10 + uint64(i), Prepare: uint64(i)})
		c.ids = append(c.ids, uuid.New())
	}
	dir := []chunkRef{{first: 1, at: esdb.Position{Commit: 0, Prepare: 0}}, {first: 5, at: esdb.Position{Commit: 7, Prepare: 7}}}
	return 2, c, dir
}

func TestChunkRoundTrip(t *testing.T) {
	k, c, dir := testChunk()
	b := encodeChunk(k, c, dir)
	if len(b) != chunkHeader+3*chunkEntry+2*chunkDirEntry {
		t.Fatalf("%d bytes", len(b))
	}
	gk, gc, gdir, err := decodeChunk(b)
	if err != nil {
		t.Fatal(err)
	}
	if gk != k || gc.first != c.first || !slices.Equal(gc.at, c.at) || !slices.Equal(gc.ids, c.ids) || !slices.Equal(gdir, dir) {
		t.Errorf("decoded chunk %d %+v %v, want chunk %d %+v %v", gk, gc, gdir, k, c, dir)
	}
	if _, _, _, err := decodeChunk(encodeChunk(0, &chunk{first: 1, at: c.at[:1], ids: c.ids[:1]}, nil)); err != nil {
		t.Errorf("chunk 0: %v", err)
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
	cases := map[string][]byte{
		"empty":                        nil,
		"short":                        good[:chunkHeader-1],
		"other magic":                  edit(func(b []byte) []byte { b[3] = '2'; return resum(b) }),
		"a flipped bit":                edit(func(b []byte) []byte { b[chunkHeader+5] ^= 1; return b }),
		"truncated":                    resum(slices.Clone(good[:len(good)-1])),
		"more entries":                 edit(func(b []byte) []byte { be.PutUint32(b[20:], 4); return resum(b) }),
		"no entry":                     resum(encodeChunk(k, &chunk{first: 9}, dir)),
		"directory short":              resum(encodeChunk(k, c, dir[:1])),
		"entries out of $all order":    resum(encodeChunk(k, &chunk{first: 9, at: []esdb.Position{c.at[1], c.at[0]}, ids: c.ids[:2]}, dir)),
		"chunk 0 not at 1":             resum(encodeChunk(0, &chunk{first: 2, at: c.at[:1], ids: c.ids[:1]}, nil)),
		"begins inside the one before": resum(encodeChunk(k, &chunk{first: 5, at: c.at, ids: c.ids}, dir)),
		"directory out of order":       resum(encodeChunk(k, c, []chunkRef{dir[1], dir[0]})),
		"position overflow":            resum(encodeChunk(k, &chunk{first: math.MaxUint64 - 1, at: c.at, ids: c.ids}, dir)),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := decodeChunk(b); !errors.Is(err, events.ErrDamaged) {
				t.Errorf("decodeChunk: %v, want ErrDamaged", err)
			}
		})
	}
}
