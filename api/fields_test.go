package api_test

import (
	"context"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"meshplane/api"
)

var update = flag.Bool("update", false, "rewrite testdata/fields.golden")

// TestFieldNames pins the JSON of the API: every field of every request
// and response of Service and Rebuilder (and Tokens, Secrets, Logs: a
// callback's arguments are responses), and of every struct they hold (the
// event payloads included), by its JSON name, its Go type and its
// omitempty/omitzero, as encoding/json writes them (embedded structs
// inlined). A rename, a removal or a new field anywhere in what `mesh ...
// -o json` prints and /v1 answers is then a diff of
// testdata/fields.golden, reviewed as the change of a public API
// (go test ./api -run TestFieldNames -update rewrites it).
func TestFieldNames(t *testing.T) {
	roots := []reflect.Type{
		reflect.TypeFor[api.Service](),
		reflect.TypeFor[api.Rebuilder](),
		reflect.TypeFor[api.Tokens](),
		reflect.TypeFor[api.Secrets](),
		reflect.TypeFor[api.Logs](),
	}
	w := &fieldWalker{seen: map[reflect.Type]bool{}}
	for _, it := range roots {
		for i := range it.NumMethod() {
			m := it.Method(i).Type
			for j := range m.NumIn() {
				w.walk(m.In(j))
			}
			for j := range m.NumOut() {
				w.walk(m.Out(j))
			}
		}
	}
	slices.SortFunc(w.structs, func(a, b reflect.Type) int { return strings.Compare(a.String(), b.String()) })
	var b strings.Builder
	b.WriteString("# The JSON of meshplane's API: every struct a Service or Rebuilder call takes\n")
	b.WriteString("# or returns, its fields by JSON name (go test ./api -run TestFieldNames -update).\n")
	for _, st := range w.structs {
		fmt.Fprintf(&b, "\n%s\n", st)
		for _, f := range jsonFields(st) {
			fmt.Fprintf(&b, "\t%s\n", f)
		}
	}
	got := b.String()
	const path = "testdata/fields.golden"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./api -run TestFieldNames -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the API's JSON fields differ from %s (a public API: if the change is meant, -update and say so in the commit):\n%s",
			path, lineDiff(string(want), got))
	}
	for _, must := range []string{"api.StatusResponse\n", "api.NodeStatus\n", "api.Episode\n", "api.NodePlan\n", "events.ApplyReported\n"} {
		if !strings.Contains(got, "\n"+must) {
			t.Errorf("the walk missed %s", strings.TrimSpace(must))
		}
	}
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	contextType   = reflect.TypeFor[context.Context]()
	errorType     = reflect.TypeFor[error]()
)

// fieldWalker collects every named struct type reachable from a type.
type fieldWalker struct {
	seen    map[reflect.Type]bool
	structs []reflect.Type
}

// leaf reports whether encoding/json writes t by a method of its own
// (time.Time, uuid.UUID), not field by field.
func leaf(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

func (w *fieldWalker) walk(t reflect.Type) {
	if t == contextType || t == errorType || w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		w.walk(t.Elem())
	case reflect.Map:
		w.walk(t.Key())
		w.walk(t.Elem())
	case reflect.Func: // a callback's arguments are answers too (api.Logs)
		for i := range t.NumIn() {
			w.walk(t.In(i))
		}
	case reflect.Struct:
		if leaf(t) {
			return
		}
		if t.Name() != "" {
			w.structs = append(w.structs, t)
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() || f.Anonymous {
				w.walk(f.Type)
			}
		}
	}
}

// jsonFields are t's fields as encoding/json writes them: "name type
// [omitempty] [omitzero]", embedded structs without a tag inlined, fields
// tagged "-" and unexported ones left out.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !leaf(ft) {
				for _, inner := range jsonFields(ft) {
					out = append(out, inner+" (from "+ft.String()+")")
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if !hasTag || name == "" {
			name = f.Name
		}
		line := name + " " + ft.String()
		for o := range strings.SplitSeq(opts, ",") {
			if o != "" {
				line += " " + o
			}
		}
		out = append(out, line)
	}
	return out
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
