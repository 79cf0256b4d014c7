package snapstore

import (
	"errors"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/projections"
)

// FuzzDecodeTimelineRecord: whatever bytes entries holds under a key,
// decodeRecord never panics, and refuses (ErrTimelineDB and
// events.ErrDamaged) anything but a record encodeRecord made for that
// key; what it accepts is the entry at that key, and decodes again from
// its own encoding.
func FuzzDecodeTimelineRecord(f *testing.F) {
	en := projections.Entry{Position: 7, At: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC), Stream: "node-novox",
		Type: "apply.reported", Node: "novox", Modules: []string{"route-proxy"}, Resources: []string{"ca"}, Summary: "applied 2 resource(s)"}
	good, err := encodeRecord(be64(7), projections.EntryRecord{Entry: en})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint64(7), good)
	f.Add(uint64(8), good)
	f.Add(uint64(7), good[:len(good)-1])
	f.Add(uint64(0), []byte{})
	f.Add(uint64(1), []byte(`{"entry":{"position":1}}`))
	f.Fuzz(func(t *testing.T, pos uint64, v []byte) {
		r, err := decodeRecord(be64(pos), v)
		if err != nil {
			if !errors.Is(err, ErrTimelineDB) || !errors.Is(err, events.ErrDamaged) {
				t.Fatalf("decode: %v, want ErrTimelineDB and ErrDamaged", err)
			}
			return
		}
		if r.Entry.Position != pos {
			t.Fatalf("accepted the entry at %d under key %d", r.Entry.Position, pos)
		}
		again, err := encodeRecord(be64(pos), r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeRecord(be64(pos), again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
