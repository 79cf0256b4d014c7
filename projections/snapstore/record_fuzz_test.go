package snapstore

import (
	"errors"
	"slices"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/projections"
)

// damaged fails t unless err says timeline.db is damaged.
func damaged(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrTimelineDB) || !errors.Is(err, events.ErrDamaged) {
		t.Fatalf("decode: %v, want ErrTimelineDB and ErrDamaged", err)
	}
}

// FuzzDecodeTimelineRecord: whatever bytes entries holds under a key,
// decodeEntries never panics, and refuses (ErrTimelineDB and
// events.ErrDamaged) anything but a block encodeEntries made for that key;
// what it accepts starts at that key, ascends, and decodes again from its
// own encoding to the same records.
func FuzzDecodeTimelineRecord(f *testing.F) {
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC).UnixNano()
	good := encodeEntries([]rec{
		{pos: 7, at: at},
		{pos: 9, at: at - 5, fold: projections.EntryFold{Decl: 3, Heavy: true, Digest: "sha256:ab"}},
		{pos: 12, at: at + 1e9, fold: projections.EntryFold{Decl: 9}},
	})
	f.Add(uint64(7), good)
	f.Add(uint64(8), good)
	f.Add(uint64(7), good[:len(good)-1])
	f.Add(uint64(0), []byte{})
	f.Add(uint64(1), []byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, pos uint64, v []byte) {
		rs, err := decodeEntries(be64(pos), v)
		if err != nil {
			damaged(t, err)
			return
		}
		if rs[0].pos != pos {
			t.Fatalf("accepted a block from %d under key %d", rs[0].pos, pos)
		}
		for i := 1; i < len(rs); i++ {
			if rs[i].pos <= rs[i-1].pos {
				t.Fatalf("accepted positions %d then %d", rs[i-1].pos, rs[i].pos)
			}
		}
		again, err := decodeEntries(be64(pos), encodeEntries(rs))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !slices.Equal(again, rs) {
			t.Fatalf("re-decoded %v, want %v", again, rs)
		}
	})
}

// FuzzDecodePostings: the same for a postings block under a name's key.
func FuzzDecodePostings(f *testing.F) {
	key := postingKey([]byte("novox"), 7)
	good := encodePostings(key, []uint64{7, 8, 1000, 1 << 40})
	f.Add([]byte("novox"), uint64(7), good)
	f.Add([]byte("novox"), uint64(8), good)
	f.Add([]byte("novo"), uint64(7), good[:len(good)-1])
	f.Add([]byte{}, uint64(0), []byte{})
	f.Fuzz(func(t *testing.T, name []byte, pos uint64, v []byte) {
		k := postingKey(name, pos)
		ps, err := decodePostings("node", k, v)
		if err != nil {
			damaged(t, err)
			return
		}
		if ps[0] != pos || !slices.IsSorted(ps) {
			t.Fatalf("accepted %v under key %d", ps, pos)
		}
		again, err := decodePostings("node", k, encodePostings(k, ps))
		if err != nil || !slices.Equal(again, ps) {
			t.Fatalf("re-decode: %v, %v, want %v", again, err, ps)
		}
	})
}
