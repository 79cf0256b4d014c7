package commands_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
)

const importDigest = "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"

// importIDs hands out distinct, valid UUIDv7 ids, in order.
type importIDs struct{ n int }

func (g *importIDs) next() uuid.UUID {
	g.n++
	return uuid.MustParse(fmt.Sprintf("0192f1d2-3a4b-7c5d-8e6f-%012x", g.n))
}

// importLine is p as mesh export writes it, on stream, by actor.
func importLine(t testing.TB, ids *importIDs, stream, actor string, p events.Payload) string {
	t.Helper()
	ev, err := events.NewRegistry().New(stream, p, events.Meta{
		ID: ids.next(), At: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC), Actor: actor, Correlation: "c",
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.MarshalJSONLine(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// importPreamble is a good start of a file: novox registered, forge
// defined.
func importPreamble(t testing.TB, ids *importIDs) []string {
	return []string{
		importLine(t, ids, "node-novox", "operator:test", events.NodeRegistered{Node: "novox"}),
		importLine(t, ids, "module-forge", "operator:test", events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{
			Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1"}}}}),
	}
}

func goodApply() events.ApplyReported {
	return events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 2, Created: []string{"web"}, Unchanged: 1}
}

// TestImportRefusesBadLines: each bad line, after a good preamble, is
// refused with its line number and the reason; the preamble is not.
func TestImportRefusesBadLines(t *testing.T) {
	ids := &importIDs{n: 100}
	line := func(stream, actor string, p events.Payload) string { return importLine(t, ids, stream, actor, p) }
	apply := func(f func(*events.ApplyReported)) string {
		a := goodApply()
		f(&a)
		return line("node-novox", "agent:novox", a)
	}
	good := line("node-novox", "agent:novox", goodApply())
	for _, tc := range []struct {
		name, line, want string
	}{
		{"schema 999", strings.Replace(line("module-photos", "operator:test", events.ModuleDefined{Module: "photos"}), `"schema":1`, `"schema":999`, 1),
			"module.defined schema 999 is newer than this build's 1"},
		{"a payload of the wrong type", strings.Replace(good, `"sent":2`, `"sent":"two"`, 1), "apply.reported: json: cannot unmarshal string into Go struct field ApplyReported.sent"},
		{"type twice", strings.Replace(good, `"type":"apply.reported"`, `"type":"apply.reported","type":"node.registered"`, 1), "type: given twice"},
		{"type in another case", strings.Replace(good, `"type":"apply.reported"`, `"Type":"apply.reported"`, 1), `Type: not a field: the field is "type"`},
		{"a payload key twice", strings.Replace(good, `"node":"novox"`, `"node":"novox","node":"g14"`, 1), "data.node: given twice"},
		{"a payload key in another case", strings.Replace(good, `"node":"novox"`, `"Node":"g14","node":"novox"`, 1), `data.Node: not a field: the field is "node"`},
		{"an unknown envelope field", strings.Replace(good, `"stream"`, `"strem"`, 1), `strem: unknown field`},
		{"an unknown type", strings.Replace(good, `"apply.reported"`, `"apply.forged"`, 1), `"apply.forged": unknown event type`},
		{"an apply naming another node than its stream", line("node-g14", "agent:novox", goodApply()),
			"apply.reported of node novox on stream node-g14: a node's events are on its own stream, node-novox"},
		{"an apply by another node's agent", line("node-novox", "agent:g14", goodApply()),
			"apply.reported on node-novox by agent:g14: an agent writes only its own node's events"},
		{"negative counts", apply(func(a *events.ApplyReported) { a.Unchanged = -1; a.Applied = 0 }), "unchanged: -1 is below zero"},
		{"counts that do not add up", apply(func(a *events.ApplyReported) { a.Applied = 5 }), "applied: 5, but unchanged (1), created (1)"},
		{"a declaration of another node", apply(func(a *events.ApplyReported) { a.Declaration = "g14/1" }), `declaration "g14/1" is not one of node novox's`},
		{"an apply id that is not the event's", apply(func(a *events.ApplyReported) { a.ApplyID = "01a22bc2-e0ac-7db6-b30e-93a609b41e53" }), "is not the event's id"},
		{"a module named Bad Name/../x", line("module-Bad Name/../x", "operator:test", events.ModuleDefined{Module: "Bad Name/../x"}),
			`module.defined: module name "Bad Name/../x": byte 0 is 'B'`},
		{"a node named x..y", line("node-x..y", "operator:test", events.NodeRegistered{Node: "x..y"}), `node.registered: node name "x..y": byte 1 is '.'`},
		{"a node named with '_'", line("node-web_a", "operator:test", events.NodeRegistered{Node: "web_a"}), `node name "web_a": byte 3 is '_'`},
		{"a setting that is not one", line("node-novox", "operator:test", events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "99999"}),
			`node.setting-set: setting port.store: "99999" is not a port`},
		{"a spec that is not valid", line("module-photos", "operator:test", events.ModuleDefined{Module: "photos", Spec: events.ModuleSpec{
			Containers: []events.ContainerSpec{{Name: "web.a", Image: "x"}}}}), `module.defined: spec: containers[0].name: "web.a"`},
		{"a secret on another secret's stream", line("secret-other", "operator:test", events.SecretSet{Name: "forge-db", Digest: "hmac-sha256:" + strings.Repeat("a", 64), Sealed: "x", KeyID: "k"}),
			"secret.set of secret forge-db on stream secret-other: a secret's events are on its own stream, secret-forge-db"},
		{"a secret with a plain digest", line("secret-forge-db", "operator:test", events.SecretSet{Name: "forge-db", Digest: importDigest, Sealed: "x", KeyID: "k"}),
			"secret.set: secret forge-db: a digest is hmac-sha256: and 64 hex digits"},
		{"a short digest", line("module-forge", "operator:test", events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: "sha256:ab"}),
			`artifact.recorded: digest "sha256:ab"`},
		{"a deploy of nothing", line("module-forge", "operator:test", events.ModuleDeployed{Module: "forge", By: events.DeployedByOperator}),
			"module.deployed: deploys no build"},
		{"a module event before its definition", line("module-photos", "operator:test", events.ArtifactRecorded{Module: "photos", Name: "photos/web", Digest: importDigest}),
			"artifact.recorded on module-photos: module photos is not defined, in the store or earlier in the file"},
		{"a node event before its registration", line("node-g14", "operator:test", events.NodeAdopted{Node: "g14"}),
			"node.adopted on node-g14: node g14 is not registered, in the store or earlier in the file"},
		{"an id twice", strings.Replace(good, good[7:43], importPreambleID, 1), "id " + importPreambleID + " is also on line 1"},
		{"no id", strings.Replace(good, `"id":"`+good[7:43]+`",`, "", 1), "no id"},
		{"no time", strings.Replace(good, `"at":"2026-09-29T22:46:00Z",`, "", 1), "no time"},
		{"not JSON", "{nope", "invalid character"},
		{"data not an object", strings.Replace(good, good[strings.Index(good, `"data":`):len(good)-1], `"data":[1]`, 1), "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre := importPreamble(t, &importIDs{})
			for _, settle := range []bool{false, true} {
				im := commands.NewImport(events.NewRegistry())
				for i, l := range pre {
					if _, err := im.Line([]byte(l), i+1); err != nil {
						t.Fatalf("preamble line %d refused: %v", i+1, err)
					}
				}
				n := len(pre) + 1
				if settle { // a checker that knows the store already: refused at once
					if _, err := im.Settle(context.Background(), emptyReader(t)); err != nil {
						t.Fatal(err)
					}
				}
				_, err := im.Line([]byte(tc.line), n)
				if err == nil && !settle {
					refused, serr := im.Settle(context.Background(), emptyReader(t))
					if serr != nil {
						t.Fatal(serr)
					}
					if len(refused) == 1 {
						err = refused[0]
					}
				}
				var le *commands.ImportLineError
				if !errors.As(err, &le) || !errors.Is(err, commands.ErrImportLine) || le.Line != n {
					t.Fatalf("settled %v: got %v, want line %d refused", settle, err, n)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: not an event to import: ", n)) {
					t.Fatalf("settled %v: got %q, want it to say %q", settle, err, tc.want)
				}
			}
		})
	}
}

// importPreambleID is the id of the preamble's first line.
var importPreambleID = (&importIDs{}).next().String()

func emptyReader(t testing.TB) commands.Reader {
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	return commands.NewHandler(store, events.NewRegistry())
}

// TestImportAcceptsWhatTheLivePathAppends: a mesh's events, exported, all
// pass; what a line needs of the store is met by the store (Settle); and
// Replay hands over the accepted events, and passes over the refused ones.
func TestImportAcceptsWhatTheLivePathAppends(t *testing.T) {
	ctx := context.Background()
	src, store := setup(t)
	mesh(t, src)
	must(t, src, commands.SetSecret{Name: "forge-db", Digest: digestOf('a'), Sealed: "c2VhbGVk", KeyID: "k1", By: op})
	must(t, src, commands.SetNodeSetting{Node: "novox", Key: "port.store", Value: "6852"})
	all, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, ev := range all {
		// Without the chain values: a line is added by hand below
		// (importchain_test.go checks them).
		ev.Chain = events.Hash{}
		b, err := events.MarshalJSONLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	ids := &importIDs{n: 500}
	// A setting of a node the store holds and the file does not register.
	lines = append(lines, []byte(importLine(t, ids, "node-g14", op, events.NodeSettingSet{Node: "g14", Key: "port.x", Value: "1"})))

	for _, tc := range []struct {
		name    string
		from    int // the first line of the file (0: the whole export)
		reader  func() commands.Reader
		refused []int
	}{
		{"the whole export", 0, func() commands.Reader { return emptyReader(t) }, nil},
		{"the tail, on the store it came from", len(all) - 1, func() commands.Reader { return src }, nil},
		{"the tail, on an empty store", len(all) - 1, func() commands.Reader { return emptyReader(t) }, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := lines[tc.from:]
			im := commands.NewImport(events.NewRegistry())
			for i, l := range file {
				if _, err := im.Line(l, i+1); err != nil {
					t.Fatalf("line %d refused: %v", i+1, err)
				}
			}
			refused, err := im.Settle(ctx, tc.reader())
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, r := range refused {
				got = append(got, r.Line)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.refused) {
				t.Fatalf("refused lines %v (%v), want %v", got, refused, tc.refused)
			}
			for i, l := range file {
				ev, ok, err := im.Replay(l, i+1)
				want := !slices.Contains(tc.refused, i+1)
				if err != nil || ok != want {
					t.Fatalf("replay of line %d: %v, %v; want ok %v", i+1, ok, err, want)
				}
				if ok && i+1 < len(file) && ev.ID != all[tc.from+i].ID {
					t.Fatalf("replay of line %d: event %s, want %s", i+1, ev.ID, all[tc.from+i].ID)
				}
			}
			if n := im.Unreplayed(); n != 0 {
				t.Fatalf("%d line(s) not replayed", n)
			}
		})
	}
}

// TestImportReplayRefusesAChangedFile: the pass that appends refuses a
// line that is not, byte for byte, the line checked at its place.
func TestImportReplayRefusesAChangedFile(t *testing.T) {
	pre := importPreamble(t, &importIDs{})
	for _, tc := range []struct {
		name string
		n    int
		line string
	}{
		{"another line", 1, pre[1]},
		{"a line changed", 1, strings.ReplaceAll(pre[0], "novox", "novoy")},
		{"a line moved", 2, pre[0]},
		{"a line added", 3, pre[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := commands.NewImport(events.NewRegistry())
			for i, l := range pre {
				if _, err := im.Line([]byte(l), i+1); err != nil {
					t.Fatal(err)
				}
			}
			for i := 1; i < tc.n; i++ {
				if _, ok, err := im.Replay([]byte(pre[i-1]), i); !ok || err != nil {
					t.Fatalf("replay of line %d: %v, %v", i, ok, err)
				}
			}
			if _, ok, err := im.Replay([]byte(tc.line), tc.n); ok || !errors.Is(err, commands.ErrImportChanged) {
				t.Fatalf("replay: %v, %v; want ErrImportChanged", ok, err)
			}
		})
	}
}
