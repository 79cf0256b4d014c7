package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"meshplane/events"
)

func FuzzDecodeEntry(f *testing.F) {
	good := entry{Seq: 3, Report: Report{
		Outcome: events.ApplyReported{
			Node: "novox", Declaration: "novox/3", Sent: 4, Applied: 3,
			Held:    []events.Held{{Name: "ca", Module: "route-proxy", Reason: "would mount /x, found on this adopted node; not run until route-proxy is taken"}},
			ApplyID: "01927c1e-7a4b-7c3d-8e5f-0123456789ab",
		},
		AppliedAt: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC), Attempts: 2, LastError: "nats: connection closed",
	}}
	b, err := encodeEntry(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)-18]) // the JSON of a version-2 entry, without its checksum line
	f.Add(append(bytes.Clone(b[:len(b)-18]), "crc32c 00000000\n"...))
	f.Add([]byte(`{"version":1,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"00000000-0000-0000-0000-000000000000"}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{} {}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// What decodes re-encodes to something that decodes to the same.
		b2, err := encodeEntry(e)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		e2, err := decodeEntry(b2)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b2, err)
		}
		if !reflect.DeepEqual(normal(t, e), normal(t, e2)) {
			t.Fatalf("round trip changed the entry:\n%+v\n%+v", e, e2)
		}
	})
}

// normal compares entries by their JSON, where nil and empty lists and
// time zones are one, and so are the format versions (a version-1 entry
// is written again as version 2).
func normal(t *testing.T, e entry) string {
	e.Version = 0
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDecodeEntryRefuses(t *testing.T) {
	tests := []struct{ name, in string }{
		{"not JSON", `{half`},
		{"two values", `{"version":1} {}`},
		{"version 2 without its checksum", `{"version":2,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"another version", `{"version":3,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"a checksum that fails", "{\"version\":2,\"seq\":1,\"report\":{\"outcome\":{\"node\":\"n\",\"declaration\":\"n/1\",\"apply_id\":\"01927c1e-7a4b-7c3d-8e5f-0123456789ab\"}}}\ncrc32c 00000000\n"},
		{"version 1 with a checksum", string(seal([]byte("{\"version\":1,\"seq\":1,\"report\":{\"outcome\":{\"node\":\"n\",\"declaration\":\"n/1\",\"apply_id\":\"01927c1e-7a4b-7c3d-8e5f-0123456789ab\"}}}\n")))},
		{"a bad checksum line", "{\"version\":2}\ncrc32c zz\n"},
		{"no seq", `{"version":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"no node", `{"version":1,"seq":1,"report":{"outcome":{"declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
		{"nil apply id", `{"version":1,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"00000000-0000-0000-0000-000000000000"}}}`},
		{"negative attempts", `{"version":1,"seq":1,"report":{"attempts":-1,"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeEntry([]byte(tt.in)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode: %v, want ErrCorrupt", err)
			}
		})
	}
}

// FuzzDecodeState: whatever state.json holds, decodeState never panics,
// and refuses with ErrCorrupt what is not a state; what it accepts saves
// and loads back the same.
func FuzzDecodeState(f *testing.F) {
	o := NewMemOutbox()
	if err := o.SaveState(State{Made: []string{"/srv/a", "/srv/b"}, Last: Last{Declaration: "novox/3", HeldIn: "0193a6c1-7b2e-7c00-8000-000000000009",
		Held: []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found"}}}}); err != nil {
		f.Fatal(err)
	}
	good, err := o.files.get(statePrefix)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(`{"version":1,"made":["/srv/b","/srv/a"]}`))
	f.Add([]byte(`{"version":2,"made":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		o := NewMemOutbox()
		if err := o.SaveState(st); err != nil {
			t.Fatal(err)
		}
		back, err := o.LoadState()
		if err != nil || !reflect.DeepEqual(normalState(t, back), normalState(t, st)) || o.PassedOver() != 0 {
			t.Fatalf("saved %+v, loaded %+v (%v)", st, back, err)
		}
	})
}

func normalState(t *testing.T, s State) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
