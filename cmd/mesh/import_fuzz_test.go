package main

import (
	"errors"
	"testing"

	"meshplane/events"
)

// FuzzDecodeImportLine: a line either is refused (errImportLine, naming
// the line) or decodes to an event every store accepts, which exports to a
// line that decodes to the same event.
func FuzzDecodeImportLine(f *testing.F) {
	for _, s := range []string{
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"node-novox","version":3,"position":17,"type":"declaration.composed","schema":1,"at":"2026-09-29T22:46:00Z","actor":"controller","correlation":"c","data":{"node":"novox"}}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"s","type":"t","at":"2026-09-29T22:46:00.123456789+02:00","data":{}}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"s","type":"t","at":"2026-09-29T22:46:00Z"}`,
		`{"stream":"s","type":"t","at":"2026-09-29T22:46:00Z"}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","strem":"s"}`,
		`{}`, `[]`, `null`, `{"data":"x"}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := decodeImportLine(line, 7)
		if err != nil {
			if !errors.Is(err, errImportLine) {
				t.Fatalf("refusal %v does not wrap errImportLine", err)
			}
			return
		}
		if _, err := events.Prepare(ev.Stream, []events.Event{ev}, ev.At); err != nil {
			t.Fatalf("decoded %+v, which a store refuses: %v", ev, err)
		}
		out, err := events.MarshalJSONLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeImportLine(out, 7)
		if err != nil {
			t.Fatalf("exported %s, refused on import: %v", out, err)
		}
		if !again.SameContent(ev) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", ev, again)
		}
	})
}
