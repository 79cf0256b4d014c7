package events

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeAgreesWithStdlib holds the fast payload decoder to what
// encoding/json makes of the same bytes, for every type of the vocabulary:
// both accept or both refuse, and what they accept decodes equal.
func FuzzDecodeAgreesWithStdlib(f *testing.F) {
	reg := NewRegistry()
	f.Add(0, []byte(`{"node":"novox"}`))
	f.Add(8, []byte(`{"node":"novox","declaration":"novox/1","digest":"sha256:aa","roster":["a.b"],"resources":[{"name":"ca","kind":"container","module":"m","digest":"sha256:01"}],"specs":{"sha256:01":{"image":"x"}}}`))
	f.Add(12, []byte(`{"node":"novox","declaration":"novox/1","sent":4,"applied":3,"created":["a"],"replaced":[{"name":"b","fields":["mounts./data"]}],"removed":[],"held":[{"name":"ca","module":"route-proxy","reason":"would mount"}],"failed":[{"name":"x","error":"boom"}],"unchanged":1}`))
	f.Add(3, []byte(`{"module":"forge","spec":{"routes":["f.z"],"containers":[{"name":"web","image":"i","env":{"A":"b"},"mounts":[{"source":"/d"}],"ports":[{"port":"store","env":"P"}]}]}}`))
	f.Add(12, []byte(`{"node":"a","sent":1e2}`))
	f.Add(12, []byte(`{"Node":"a","NODE":"b"}`))
	f.Add(0, []byte(`{"node":"\ud800"}`))
	f.Add(0, []byte(`{"node":"a"}x`))
	types := reg.Types()
	f.Fuzz(func(t *testing.T, which int, data []byte) {
		if which < 0 {
			which = -which
		}
		typ := reg.types[types[which%len(types)]].typ
		std, fast := reflect.New(typ), reflect.New(typ)
		errStd := json.Unmarshal(data, std.Interface())
		errFast := unmarshal(data, fast.Interface())
		if (errStd == nil) != (errFast == nil) {
			t.Fatalf("%s %q: encoding/json says %v, the fast decoder %v", typ, data, errStd, errFast)
		}
		if errStd == nil && !reflect.DeepEqual(std.Interface(), fast.Interface()) {
			t.Fatalf("%s %q decodes differently:\nencoding/json %+v\nfast          %+v", typ, data, std.Elem(), fast.Elem())
		}
	})
}
