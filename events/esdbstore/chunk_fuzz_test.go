package esdbstore

import (
	"bytes"
	"errors"
	"testing"

	"meshplane/events"
)

// FuzzDecodeChunk: whatever bytes a table stream holds, decodeChunk never
// panics, and refuses (events.ErrDamaged) anything but a chunk
// encodeChunkAs made; what it accepts is a consistent chunk (entries in
// $all order, a directory that begins at position 1 and ends before it),
// which encodes again to the same bytes in its format.
func FuzzDecodeChunk(f *testing.F) {
	k, c, dir := testChunk()
	for _, fm := range []chunkFormat{chunkV1, chunkV2} {
		good := encodeChunkAs(fm, k, c, dir)
		f.Add(good)
		f.Add(good[:len(good)-1])
		f.Add(encodeChunkAs(fm, 0, &chunk{first: 1, at: c.at[:1], ids: c.ids[:1], chain: []events.Hash{{}}}, nil))
	}
	f.Add([]byte{})
	f.Add([]byte("mpt2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, c, dir, err := decodeChunk(b)
		if err != nil {
			if !errors.Is(err, events.ErrDamaged) {
				t.Fatalf("decode: %v, want ErrDamaged", err)
			}
			return
		}
		if len(c.at) == 0 || len(c.ids) != len(c.at) || (c.chain != nil && len(c.chain) != len(c.at)) || uint64(len(dir)) != k {
			t.Fatalf("accepted chunk %d with %d entries, %d ids, %d chain values, %d directory entries", k, len(c.at), len(c.ids), len(c.chain), len(dir))
		}
		if len(dir) > 0 && (dir[0].first != 1 || dir[len(dir)-1].first >= c.first) || len(dir) == 0 && c.first != 1 {
			t.Fatalf("accepted chunk %d at %d with directory %v", k, c.first, dir)
		}
		fm := chunkV1
		if c.chain != nil {
			fm = chunkV2
		}
		if again := encodeChunkAs(fm, k, c, dir); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %d bytes differ from the %d decoded", len(again), len(b))
		}
	})
}
