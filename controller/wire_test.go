package controller

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/projections"
)

// fill sets every exported field of v (a pointer) reachable from it to a
// value that is not zero: strings, numbers and bools, one element in each
// slice, one key in each map, every pointer allocated. A field a
// conversion forgets then shows in the JSON.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x" + v.Type().Name())
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(3 + depth))
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(uint64(5 + depth))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		if depth > 6 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		if depth > 6 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 9, 29, 23, 2, depth, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

func filled[T any](t *testing.T) T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), 0)
	return v
}

// sameJSON checks that the API's view of a value writes the very bytes the
// value itself wrote when the API served it as it was.
func sameJSON(t *testing.T, what string, from, to any) {
	t.Helper()
	a, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(to)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("%s: the API's JSON differs from the source's\nsource %s\napi    %s", what, a, b)
	}
}

// TestWireSameJSON: each conversion to the API's own structs (wire.go)
// carries every field: with every field of the source set, the view
// writes the same JSON byte for byte, so the API answers what it answered
// when it served the projections' and the agent's structs themselves. And
// a nil slice stays null, an empty one [].
func TestWireSameJSON(t *testing.T) {
	st := filled[projections.NodeStatus](t)
	sameJSON(t, "NodeStatus", st, statusOf(st))
	sameJSON(t, "NodeStatus zero", projections.NodeStatus{}, statusOf(projections.NodeStatus{}))
	h := filled[projections.Hold](t)
	sameJSON(t, "Hold", h, holdOf(h))
	en := filled[projections.Entry](t)
	sameJSON(t, "Entry", en, entryOf(en))
	sameJSON(t, "Entry zero", projections.Entry{}, entryOf(projections.Entry{}))
	tc := filled[projections.Touch](t)
	sameJSON(t, "Touch", tc, touchOf(tc))
	d := filled[projections.ComposedDecl](t)
	sameJSON(t, "ComposedDecl", d, composedOf(d))
	ep := filled[projections.Episode](t)
	sameJSON(t, "Episode", ep, episodeOf(ep))
	sameJSON(t, "Episode zero", projections.Episode{}, episodeOf(projections.Episode{}))
	c := filled[projections.Compared](t)
	sameJSON(t, "Compared", c, comparedOf(c))
	f := filled[projections.Failure](t)
	sameJSON(t, "Failure", f, failureOf(f))
	pv := filled[agent.Preview](t)
	sameJSON(t, "Preview", pv, previewOf(pv))
	sameJSON(t, "Preview zero", agent.Preview{}, previewOf(agent.Preview{}))
	// The roster diff was always the API's own struct: every field carried
	// (but AsOf, which At sets on the answer: at.go).
	dv := reflect.ValueOf(diffOf(filled[projections.Diff](t)))
	for i := range dv.NumField() {
		if dv.Field(i).IsZero() && dv.Type().Field(i).Name != "AsOf" {
			t.Errorf("diffOf drops %s", dv.Type().Field(i).Name)
		}
	}
	for _, es := range [][]projections.Entry{nil, {}} {
		sameJSON(t, "entries", es, entriesOf(es))
	}
}
