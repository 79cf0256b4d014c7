package events

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// FuzzDecodeAgreesWithStdlib holds the registry's payload decoding (goccy,
// and the intern cache for composed declarations) to what encoding/json
// makes of the same bytes, for every type of the vocabulary: both accept or
// both refuse, and what they accept decodes equal.
func FuzzDecodeAgreesWithStdlib(f *testing.F) {
	reg := NewRegistry()
	types := reg.Types()
	composed, applied, defined := slices.Index(types, "declaration.composed"), slices.Index(types, "apply.reported"), slices.Index(types, "module.defined")
	f.Add(0, []byte(`{"node":"novox"}`))
	f.Add(composed, []byte(`{"node":"novox","declaration":"novox/1","digest":"sha256:aa","roster":["a.b"],"resources":[{"name":"ca","kind":"container","module":"m","digest":"sha256:01"}],"specs":{"sha256:01":{"image":"x"}}}`))
	f.Add(applied, []byte(`{"node":"novox","declaration":"novox/1","sent":4,"applied":3,"created":["a"],"replaced":[{"name":"b","fields":["mounts./data"]}],"removed":[],"held":[{"name":"ca","module":"route-proxy","reason":"would mount"}],"failed":[{"name":"x","error":"boom"}],"unchanged":1}`))
	f.Add(defined, []byte(`{"module":"forge","spec":{"routes":["f.z"],"containers":[{"name":"web","image":"i","env":{"A":"b"},"mounts":[{"source":"/d"}],"ports":[{"port":"store","env":"P"}]}]}}`))
	f.Add(applied, []byte(`{"node":"a","sent":1e2}`))
	f.Add(applied, []byte(`{"Node":"a","NODE":"b"}`))
	f.Add(0, []byte(`{"node":"\ud800"}`))
	f.Add(0, []byte(`{"node":"a"}x`))
	f.Add(composed, []byte(`{"node":"n","roster":null,"resources":[]}`))
	f.Add(composed, []byte(`{"node":"n","Roster":["a"],"roster":["b"],"resources":[{"Name":"x"}]}`))
	f.Add(composed, []byte(`{"node":"n","roster":5}`))
	// Split at the tail mark (the cache of tails): a whole one, and heads
	// and tails that set each other's fields, marks inside nested values,
	// trailing bytes.
	f.Add(composed, []byte(`{"node":"n","declaration":"n/1","digest":"sha256:a","roster":["a.b"],"resources":[{"name":"c","kind":"container","module":"m","digest":"sha256:01"}],"specs":{"sha256:01":{"image":"x"}}}`))
	f.Add(composed, []byte(`{"node":"n","warnings":["w"],"roster":["a"],"warnings":null}`))
	f.Add(composed, []byte(`{"node":"n","roster":["a"],"node":"m"}`))
	f.Add(composed, []byte(`{"node":"n","roster":["a"],"NODE":null,"Declaration":"d"}`))
	f.Add(composed, []byte(`{"node":"n","skipped":[{"node":"b","roster":[]}],"roster":["a"]}`))
	f.Add(composed, []byte(`{"node":"n","bindings":[{"container":"web","field":"env.A","module":"s","service":"st","node":"b","setting":"port.st"}],"roster":["a"]}`))
	f.Add(composed, []byte(`{"node":"n","roster":["a"],"bindings":[{"container":"web","roster":["b"]}],"bindings":null}`))
	f.Add(composed, []byte(`{"node":"n","roster":null,"resources":[],"roster":["x"]}`))
	f.Add(composed, []byte(`{"node":"n","roster":["a"]}x`))
	f.Add(composed, []byte(`{"node":"n","specs":{"a":1},"roster":["a"],"specs":{"b":2}}`))
	f.Add(composed, []byte(`{"Roster":["z"],"node":"n","roster":["a"]}`))
	f.Add(composed, []byte(`{,"roster":[]}`))
	f.Add(composed, []byte(`{"Roster":"0","roster":[]}`))
	f.Add(composed, []byte(`{"node":"n",,"roster":[]}`))
	f.Add(composed, []byte(`{"node":"n" ,"roster":[]}`))
	f.Add(composed, []byte(`{"node":"n","specs":{"a":1},"Specs":{"b":2}}`))
	f.Add(composed, []byte(`{"node":"n","specs":{"a":1,"a":[2]},"specs":null}`))
	f.Add(composed, []byte(`{"node":"n","specs":{"a":1},"specs":{"a":[2],"b":{}}}`))
	f.Add(composed, []byte(`{"node":"n","resources":[{"name":"x","digest":7}]}`))
	// Stored against a roster revision: no roster, split at resources.
	f.Add(composed, []byte(`{"node":"n","declaration":"n/2","digest":"sha256:a","roster_revision":3,"resources":[{"name":"c","kind":"container","module":"m","digest":"sha256:01"}]}`))
	f.Add(composed, []byte(`{"node":"n","roster_revision":3,"resources":[],"roster_revision":4}`))
	f.Add(composed, []byte(`{"node":"n","resources":[],"roster_revision":-1}`))
	f.Add(composed, []byte(`{"node":"n","roster_revision":"3","roster":["a"]}`))
	f.Add(slices.Index(types, "roster.changed"), []byte(`{"revision":2,"digest":"sha256:a","added":[{"name":"a.z","address":"10.0.0.1","node":"n"}],"removed":[{"name":"b.z","node":"m"}]}`))
	f.Fuzz(func(t *testing.T, which int, data []byte) {
		if which < 0 {
			which = -which
		}
		e := reg.types[types[which%len(types)]]
		typ := e.typ
		std := reflect.New(typ)
		errStd := json.Unmarshal(data, std.Interface())
		// Twice: the second decode of a composed declaration comes from the
		// intern cache.
		for i := 0; i < 2; i++ {
			fast, errFast := e.decode(data)
			if (errStd == nil) != (errFast == nil) {
				t.Fatalf("%s %q: encoding/json says %v, the registry %v", typ, data, errStd, errFast)
			}
			if errStd == nil && !reflect.DeepEqual(std.Elem().Interface(), fast) {
				t.Fatalf("%s %q decodes differently:\nencoding/json %+v\nregistry      %+v", typ, data, std.Elem(), fast)
			}
		}
	})
}
