package agent

import (
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
// time zones are one.
func normal(t *testing.T, e entry) string {
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
		{"other version", `{"version":2,"seq":1,"report":{"outcome":{"node":"n","declaration":"n/1","apply_id":"01927c1e-7a4b-7c3d-8e5f-0123456789ab"}}}`},
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
