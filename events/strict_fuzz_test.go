package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"

	"meshplane/events"
	"meshplane/internal/jsontest"
)

// FuzzCheckKeys: on any bytes CheckKeys answers (never panics); it accepts
// only valid JSON of UTF-8 strings, and any such JSON in which
// encoding/json's tokenizer finds no key given twice in one object, and
// only that; with a type, what it accepts decodes.
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `"x"`, `1`, `null`, `{"a":1,"b":[1,{"a":1}],"c":{"a":{"a":1}}}`,
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":1}}`, `[{"a":1},{"a":1,"a":1}]`, `{"a\u0062":1,"ab":2}`,
		`{"node":"a","declaration":"a/1","held":[{"name":"x"}]}`, `{"Node":"a"}`, `{"a":"\"}"}`, `{"a":1}x`,
		`{"module":"forge","spec":{"containers":[{"name":"web","env":{"A":"b"}}]}}`, "{\"\xff\":1,\"\xfe\":2}",
	} {
		f.Add([]byte(s))
	}
	typ := reflect.TypeFor[events.ModuleDefined]()
	f.Fuzz(func(t *testing.T, data []byte) {
		err := events.CheckKeys(data, nil, true)
		switch {
		case !json.Valid(data):
			if err == nil {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			return
		case err != nil && !errors.Is(err, events.ErrInvalid):
			t.Fatalf("a refusal that is not ErrInvalid: %v", err)
		}
		if !utf8.Valid(data) { // a string of it is not UTF-8
			if err == nil {
				t.Fatalf("accepted %q, not UTF-8", data)
			}
			return
		}
		dup, oerr := jsontest.HasDuplicateKey(data)
		if oerr != nil {
			t.Fatalf("oracle: %v", oerr)
		}
		if dup != (err != nil) {
			t.Fatalf("%q: duplicate key %v, CheckKeys said %v", data, dup, err)
		}
		// As an event's data, it is passed over by the envelope's check.
		line := append(append([]byte(`{"stream":"s","data":`), data...), '}')
		if _, err := events.UnmarshalJSONLineStrict(line); err != nil {
			var ie *events.InvalidError
			if errors.As(err, &ie) {
				t.Fatalf("%s: the envelope's check looked into the data: %v", line, err)
			}
		}
		var v events.ModuleDefined
		if events.CheckKeys(data, typ, false) == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			if err := events.UnmarshalStrict(data, &v); err != nil {
				var ute *json.UnmarshalTypeError
				if !errors.As(err, &ute) && !errors.Is(err, events.ErrInvalid) {
					t.Fatalf("%q: keys accepted, decode failed oddly: %v", data, err)
				}
			}
		}
	})
}
