package esdbstore

import (
	"errors"
	"testing"
	"time"
)

func TestMetaRoundTrip(t *testing.T) {
	cases := []struct {
		name                          string
		schema                        int
		at                            time.Time
		actor, causation, correlation string
	}{
		{"every field", 3, time.Date(2026, 9, 29, 22, 46, 1, 987654321, time.FixedZone("EDT", -4*3600)), "agent:novox", "018f2b6c", "push-17"},
		{"round second, no names", 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "", "", ""},
		{"one nanosecond", 1, time.Unix(0, 1), "a", "", ""},
		{"earliest instant", 1, time.Unix(0, -1<<63), "", "", ""},
		{"latest instant", 1, time.Unix(0, 1<<63-1), "", "", "c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := encodeMeta(tc.schema, tc.at, tc.actor, tc.causation, tc.correlation)
			if err != nil {
				t.Fatal(err)
			}
			m, at, err := decodeMeta(b)
			if err != nil {
				t.Fatalf("decodeMeta(%s): %v", b, err)
			}
			if !at.Equal(tc.at) || at.Location() != time.UTC || m.Schema != tc.schema ||
				m.Actor != tc.actor || m.Causation != tc.causation || m.Correlation != tc.correlation {
				t.Errorf("decodeMeta(%s) = %+v at %s, want schema %d at %s actor %q causation %q correlation %q",
					b, m, at, tc.schema, tc.at, tc.actor, tc.causation, tc.correlation)
			}
		})
	}
}

func TestMetaRefused(t *testing.T) {
	cases := map[string]string{
		"not JSON":          `{"mesh":1,`,
		"empty":             ``,
		"another format":    `{"mesh":2,"schema":1,"at":"2026-01-01T00:00:00Z"}`,
		"no format":         `{"schema":1,"at":"2026-01-01T00:00:00Z"}`,
		"schema 0":          `{"mesh":1,"schema":0,"at":"2026-01-01T00:00:00Z"}`,
		"no time":           `{"mesh":1,"schema":1}`,
		"time without zone": `{"mesh":1,"schema":1,"at":"2026-01-01T00:00:00"}`,
		"schema a string":   `{"mesh":1,"schema":"1","at":"2026-01-01T00:00:00Z"}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := decodeMeta([]byte(in)); !errors.Is(err, errMeta) {
				t.Errorf("decodeMeta(%q): got %v, want errMeta", in, err)
			}
		})
	}
}

// FuzzDecodeMeta: decodeMeta never panics, and what it accepts encodes back
// to metadata that decodes to the same fields.
func FuzzDecodeMeta(f *testing.F) {
	f.Add([]byte(`{"mesh":1,"schema":3,"at":"2026-09-30T02:46:01.987654321Z","actor":"agent:novox","$causationId":"x","$correlationId":"push-17"}`))
	f.Add([]byte(`{"mesh":1,"schema":1,"at":"2026-01-01T00:00:00+02:00"}`))
	f.Add([]byte(`{"mesh":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, at, err := decodeMeta(b)
		if err != nil {
			return
		}
		again, err := encodeMeta(m.Schema, at, m.Actor, m.Causation, m.Correlation)
		if err != nil {
			t.Fatalf("encodeMeta of decoded %+v: %v", m, err)
		}
		m2, at2, err := decodeMeta(again)
		if err != nil {
			t.Fatalf("decodeMeta(%s), re-encoded from %q: %v", again, b, err)
		}
		if !at2.Equal(at) || m2.Schema != m.Schema || m2.Actor != m.Actor || m2.Causation != m.Causation || m2.Correlation != m.Correlation {
			t.Fatalf("round trip of %q: %+v %s, then %+v %s", b, m, at, m2, at2)
		}
	})
}
