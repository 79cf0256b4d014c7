package render_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/render"
)

// hostile is what a node, a file or history may hand a printer: a screen
// clear and a colour, a newline starting a forged timeline line, a C1
// control (NEL), a bidi override, DEL, a tab, a carriage return, NUL and
// a byte that is not UTF-8.
const hostile = "\u001b[2J\u001b[31mFAKE\n999 2026-11-30 10:00:00 n2 node.removed operator:admin\u0085\u202e\u007f\tx\ry\x00z\xff"

// printers is every exported function of the package a test walks with
// hostile strings: every string field of every argument set to hostile.
var printers = map[string]any{
	"AsOf": render.AsOf, "AsOfAnswer": render.AsOfAnswer, "ChainHead": render.ChainHead, "ChainReport": render.ChainReport,
	"Churn": render.Churn, "Diff": render.Diff, "ImportBad": render.ImportBad, "Imported": render.Imported,
	"Info": render.Info, "NodeList": render.NodeList, "ModuleList": render.ModuleList, "ModuleShow": render.ModuleShow,
	"Version": render.Version, "Partial": render.Partial, "Noted": render.Noted, "Skipped": render.Skipped,
	"Plan": render.Plan, "WriteJSON": render.WriteJSON, "Health": render.Health, "Replay": render.Replay,
	"Reverted": render.Reverted, "Roster": render.Roster, "RosterHistory": render.RosterHistory, "RosterDiff": render.RosterDiff,
	"SecretList": render.SecretList, "Status": render.Status, "StatusAnswer": render.StatusAnswer, "NodeShow": render.NodeShow,
	"EventLine": render.EventLine, "HeldUnresolved": render.HeldUnresolved, "Timeline": render.Timeline, "Why": render.Why, "ChangeWords": render.ChangeWords, "BindingWords": render.BindingWords, "Tokens": render.Tokens,
	"TokenCreated": render.TokenCreated, "TokenRevoked": render.TokenRevoked, "JoinToken": render.JoinToken, "Revoked": render.Revoked,
	"Migrated": render.Migrated, "Joined": render.Joined, "CommandResult": render.CommandResult, "Push": render.Push,
	"ArtifactPushed": render.ArtifactPushed, "Rebuild": render.Rebuild, "RebuildLocal": render.RebuildLocal, "SnapshotSaved": render.SnapshotSaved,
	"Escape": render.Escape, "LogChunk": render.LogChunk,
}

// notWalked are the exported functions the walk leaves out, and why.
var notWalked = map[string]string{
	"NewProgress":   "draws only on a terminal (never on a test's buffer); its description is Escape'd",
	"ProgressFunc":  "draws only on a terminal, through NewProgress",
	"PassBar":       "draws only on a terminal, and no string of anyone's",
	"Text":          "keeps newlines by design (CLI errors); TestText checks it",
	"SafeWriter":    "Text on a stream; TestText checks it",
	"AnchorDiffers": "a predicate on a chain report: it prints nothing",
}

// TestHostileStringsEveryPrinter: every exported printer, in table and in
// JSON, given answers whose every string is hostile (bools all true, then
// all false), writes no raw control character but newline and tab, no C1
// control, no bidi control, no invalid UTF-8, and no line that starts the
// forged "999 " timeline line. A printer added later fails the test until
// it is walked (or said not to be, with a reason).
func TestHostileStringsEveryPrinter(t *testing.T) {
	for _, name := range exportedFuncs(t) {
		_, walked := printers[name]
		if _, why := notWalked[name]; !walked && !why {
			t.Errorf("render.%s is not walked with hostile strings: add it to printers (or to notWalked, saying why)", name)
		}
	}
	for name, fn := range printers {
		for _, flag := range []bool{true, false} {
			for _, f := range []render.Format{render.Table, render.JSON} {
				var out bytes.Buffer
				results := call(t, fn, &out, f, flag)
				got := out.String()
				for _, r := range results {
					if s, ok := r.Interface().(string); ok {
						got += s
					}
				}
				if bad := rawControl(got); bad != "" {
					t.Errorf("render.%s (%s, bools %v) wrote %s:\n%s", name, f, flag, bad, got)
				}
			}
		}
	}
}

// rawControl names the first thing in s that must not reach a terminal,
// or is "".
func rawControl(s string) string {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return "an invalid UTF-8 byte"
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Sprintf("a raw control character %U", r)
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return "a raw bidi control"
		}
		i += n
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "999 ") {
			return "a forged line: " + line
		}
	}
	return ""
}

// call calls fn with w for every io.Writer, f for the Format, and a value
// filled with hostile strings for every other argument.
func call(t *testing.T, fn any, w io.Writer, f render.Format, flag bool) []reflect.Value {
	t.Helper()
	v := reflect.ValueOf(fn)
	typ := v.Type()
	var args []reflect.Value
	for i := 0; i < typ.NumIn(); i++ {
		in := typ.In(i)
		if typ.IsVariadic() && i == typ.NumIn()-1 {
			s := reflect.New(in).Elem()
			fill(s, flag, 0)
			args = append(args, s.Index(0))
			continue
		}
		switch {
		case in == reflect.TypeOf((*io.Writer)(nil)).Elem():
			args = append(args, reflect.ValueOf(w))
		case in == reflect.TypeOf(render.Format("")):
			args = append(args, reflect.ValueOf(f))
		case in == reflect.TypeOf((*any)(nil)).Elem():
			a := reflect.New(reflect.TypeOf(api.StatusResponse{})).Elem()
			fill(a, flag, 0)
			args = append(args, a)
		default:
			a := reflect.New(in).Elem()
			fill(a, flag, 0)
			args = append(args, a)
		}
	}
	return v.Call(args)
}

var (
	timeType    = reflect.TypeOf(time.Time{})
	commandType = reflect.TypeOf((*commands.Command)(nil)).Elem()
)

// fill sets every settable string of v to hostile, numbers to 1, bools to
// flag, times to a fixed one, and gives every slice, map and pointer one
// element, down to a depth.
func fill(v reflect.Value, flag bool, depth int) {
	if depth > 8 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(hostile)
	case reflect.Bool:
		v.SetBool(flag)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), flag, depth+1)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage and other bytes: a JSON string
			v.SetBytes([]byte(`"\u001b[2J\n999 forged"`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), flag, depth+1)
		v.Set(s)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), flag, depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		e := reflect.New(v.Type().Elem()).Elem()
		fill(k, flag, depth+1)
		fill(e, flag, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), flag, depth+1)
		v.Set(p)
	case reflect.Interface:
		if v.Type() == commandType {
			v.Set(reflect.ValueOf(commands.AssignModule{Node: hostile, Module: hostile}))
		}
	}
}

// exportedFuncs is every exported function of the package's non-test
// files.
func exportedFuncs(t *testing.T) []string {
	t.Helper()
	var names []string
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.IsExported() {
				names = append(names, fd.Name.Name)
			}
		}
	}
	slices.Sort(names)
	if len(names) < 30 {
		t.Fatalf("found %d exported functions in render: is the test run in its directory?", len(names))
	}
	return names
}

// TestPrintersWriteThroughEscape: no file of the package but escape.go
// calls fmt.Fprint, Fprintf, Fprintln or io.WriteString: every printer
// writes through pf and pln, which escape every string argument.
func TestPrintersWriteThroughEscape(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "escape.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok {
				switch x.Name + "." + sel.Sel.Name {
				case "fmt.Fprint", "fmt.Fprintf", "fmt.Fprintln", "io.WriteString", "io.Copy":
					t.Errorf("%s: %s.%s writes around the escaping of pf and pln", fset.Position(n.Pos()), x.Name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// TestText: Text and SafeWriter keep a message's newlines and tabs and
// escape every other control.
func TestText(t *testing.T) {
	want := `\u001b[2J\u001b[31mFAKE` + "\n" + `999 2026-11-30 10:00:00 n2 node.removed operator:admin\u0085\u202e\u007f` + "\tx" + `\ry\u0000z\xff`
	if got := render.Text(hostile); got != want {
		t.Errorf("Text = %q\nwant   %q", got, want)
	}
	var b bytes.Buffer
	if _, err := io.WriteString(render.SafeWriter(&b), hostile); err != nil || b.String() != want {
		t.Errorf("SafeWriter wrote %q, %v\nwant %q", b.String(), err, want)
	}
	if got := render.Escape(hostile); strings.ContainsAny(got, "\n\t\r\x1b") || render.Escape(got) != got {
		t.Errorf("Escape = %q: a control left raw, or not the same escaped again", got)
	}
}
