package commands_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
)

// doorLine is p as mesh export writes it, at a time.
func doorLine(t testing.TB, ids *importIDs, at time.Time, stream, actor string, p events.Payload) string {
	t.Helper()
	ev, err := events.NewRegistry().New(stream, p, events.Meta{ID: ids.next(), At: at, Actor: actor, Correlation: "c"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := events.MarshalJSONLine(ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkFile runs the lines through an Import, then settles them against
// store (nil: none) and returns every line refused, by number, with why.
func checkFile(t *testing.T, lines []string, store events.Store) map[int]string {
	t.Helper()
	ctx := context.Background()
	reg := events.NewRegistry()
	im := commands.NewImport(reg)
	bad := map[int]string{}
	add := func(err error) {
		var le *commands.ImportLineError
		if !errors.As(err, &le) || !errors.Is(err, commands.ErrImportLine) {
			t.Fatalf("not a line refused: %v", err)
		}
		if _, dup := bad[le.Line]; dup {
			t.Fatalf("line %d refused twice: %v", le.Line, err)
		}
		bad[le.Line] = err.Error()
	}
	for i, l := range lines {
		if _, err := im.Line([]byte(l), i+1); err != nil {
			add(err)
		}
	}
	var lookup func(string, string) ([]events.Held, error)
	if store == nil {
		empty := memstore.New()
		defer empty.Close()
		store = empty
	} else {
		lookup = commands.HeldLookup(ctx, store, reg)
	}
	refused, err := im.SettleHeld(lookup)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		add(r)
	}
	if refused, err = im.Settle(ctx, commands.NewHandler(store, reg)); err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		add(r)
	}
	return bad
}

// TestImportChecksWhatTheDoorChecks: after a good start (novox and g14
// registered, a node removed, declarations composed, pushed and applied,
// a token), each line the live door would refuse is refused, naming the
// line and what is wrong; each good one passes. Before, an import took
// reports naming declarations never composed, held_since naming nothing,
// pushes of declarations never composed, a declaration id composed
// twice, a take on a node not adopted, an assign after the node's removal
// and a NUL in the actor.
func TestImportChecksWhatTheDoorChecks(t *testing.T) {
	t0 := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	ids := &importIDs{n: 1000}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	line := func(s int, stream, actor string, p events.Payload) string {
		return doorLine(t, ids, at(s), stream, actor, p)
	}
	const opr = "operator:test"
	held := []events.Held{{Name: "forge-web", Module: "forge", Reason: "data"}}
	pre := []string{
		line(0, "node-novox", opr, events.NodeRegistered{Node: "novox"}),
		line(0, "node-g14", opr, events.NodeRegistered{Node: "g14"}),
		line(0, "node-gone", opr, events.NodeRegistered{Node: "gone"}),
		line(0, "module-forge", opr, events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{
			Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1"}}}}),
		line(1, "node-gone", opr, events.NodeRemoved{Node: "gone"}), // 5
		line(10, "node-novox", "controller", events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: importDigest,
			Resources: []events.ResourceRef{{Name: "forge-web", Kind: "container", Module: "forge", Digest: importDigest}}}), // 6
		line(11, "node-novox", "controller", events.DeclarationPushed{Node: "novox", Declaration: "novox/1", Digest: importDigest, Resources: 1}),
		line(12, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 1, Applied: 0, Held: held}),   // 8: held something
		line(13, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 1, Applied: 1, Unchanged: 1}), // 9: held nothing
		line(10, "node-g14", "controller", events.DeclarationComposed{Node: "g14", Declaration: "g14/1", Digest: importDigest}),
		line(11, "node-g14", "controller", events.DeclarationPushed{Node: "g14", Declaration: "g14/1", Digest: importDigest}),
		line(12, "node-g14", "agent:g14", events.ApplyReported{Node: "g14", Declaration: "g14/1", Held: held}), // 12
		line(20, "node-novox", "controller", events.DeclarationComposed{Node: "novox", Declaration: "novox/2", Digest: importDigest}),
		line(30, "node-novox", "controller", events.DeclarationComposed{Node: "novox", Declaration: "novox/3", Digest: importDigest}), // 14
		line(0, "token-ana", "controller", events.TokenCreated{Name: "ana", TokenID: strings.Repeat("ab", 8), SecretSHA256: strings.Repeat("ab", 32), By: "controller"}),
	}
	idOf := func(n int) string { return pre[n-1][7:43] }
	if bad := checkFile(t, pre, nil); len(bad) > 0 {
		t.Fatalf("the good start is refused: %v", bad)
	}
	compact := func(since string) string {
		return line(40, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/3", Sent: 1, Applied: 0, HeldSince: since})
	}
	for _, tc := range []struct {
		name, line, want string // want "": accepted
	}{
		{"a report of a declaration composed", line(31, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/3"}), ""},
		{"a container crash loop of a declaration composed", line(31, "node-novox", "agent:novox", events.ContainerPayload(events.ContainerChange{
			Node: "novox", Module: "forge", Container: "forge-web", Declaration: "novox/1", State: "crash-looping", At: at(31), ExitCode: 1, Restarts: 3})), ""},
		{"a container state with a negative count", line(31, "node-novox", "agent:novox", events.ContainerPayload(events.ContainerChange{
			Node: "novox", Container: "forge-web", Declaration: "novox/1", State: "crash-looping", At: at(31), Restarts: -3})), "restarts"},
		{"a container state of another node", line(31, "node-novox", "agent:novox", events.ContainerPayload(events.ContainerChange{
			Node: "g14", Container: "forge-web", State: "exited", At: at(31)})), "a node's events are on its own stream"},
		{"a container state of a declaration never composed", line(31, "node-novox", "agent:novox", events.ContainerPayload(events.ContainerChange{
			Node: "novox", Container: "forge-web", Declaration: "novox/9999", State: "exited", At: at(31)})), `declaration "novox/9999" was never composed`},
		{"a report of a declaration never composed", line(31, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/9999"}),
			`declaration "novox/9999" was never composed for node novox before this line (the file registers the node on line 1`},
		{"a report naming a path", line(31, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/../../x"}),
			`declaration "novox/../../x" is not one of node novox's: novox/N, N a number from 1`},
		{"a report of a declaration composed after it", line(31, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/4"}),
			`declaration "novox/4" was never composed for node novox before this line`},
		{"a report of a declaration never pushed", line(31, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/2"}),
			`declaration "novox/2" was never pushed to it`},
		{"a report applied before its compose", line(-3600, "node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/3"}),
			"before its declaration novox/3 was composed"},
		{"held_since naming a report that held something", compact(idOf(8)), ""},
		{"held_since naming a random id", compact("00000000-0000-4000-8000-000000000001"),
			`held_since 00000000-0000-4000-8000-000000000001 names no apply report of this node, earlier in the file or in the store`},
		{"held_since naming no id", compact("not-a-uuid"), `held_since: "not-a-uuid" is not an apply id`},
		{"held_since naming another node's report", compact(idOf(12)), "names a report on node-g14, not on node-novox"},
		{"held_since naming a report that held nothing", compact(idOf(9)), "names a report that held nothing"},
		{"held_since naming a compose", compact(idOf(6)), "names no apply report of this node"},
		{"held_since in the public form naming a report that held something", line(40, "node-novox", "agent:novox",
			events.ApplyReported{Node: "novox", Declaration: "novox/3", Sent: 1, HeldSince: idOf(8), Held: held}), ""},
		{"held_since in the public form naming a report that held nothing", line(40, "node-novox", "agent:novox",
			events.ApplyReported{Node: "novox", Declaration: "novox/3", Sent: 1, HeldSince: idOf(9), Held: held}), "names a report that held nothing"},
		{"a push of a declaration never composed", line(31, "node-novox", "controller", events.DeclarationPushed{Node: "novox", Declaration: "novox/7", Digest: importDigest}),
			`declaration.pushed on node-novox: declaration "novox/7" was never composed for node novox`},
		{"a declaration id composed again", line(31, "node-novox", "controller", events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: importDigest}),
			`declaration "novox/1" is composed already, on line 6`},
		{"a take on a node not adopted", line(31, "node-novox", opr, events.ModuleTaken{Module: "forge", Node: "novox"}),
			"module.taken on node-novox: node novox is not adopted (registered on line 1, not adopted since)"},
		{"an assign after the node's removal", line(31, "node-gone", opr, events.ModuleAssigned{Module: "forge", Node: "gone"}),
			"module.assigned on node-gone: node gone was removed on line 5"},
		{"a NUL in the actor", line(31, "node-novox", "operator:te\x00st", events.NodeAdopted{Node: "novox"}), `actor "operator:te\x00st": byte 11 is '\x00'`},
		{"a newline in the correlation", strings.Replace(line(31, "node-novox", opr, events.NodeAdopted{Node: "novox"}), `"correlation":"c"`, `"correlation":"c\nx"`, 1),
			`correlation "c\nx": byte 1 is '\n'`},
		{"a token created over a live one", line(31, "token-ana", opr, events.TokenCreated{Name: "ana", TokenID: strings.Repeat("cd", 8), SecretSHA256: strings.Repeat("cd", 32), By: opr}),
			"operator ana has a live token already (abababababababab)"},
		{"a token whose id is not its digest's", line(31, "token-bo", opr, events.TokenCreated{Name: "bo", TokenID: strings.Repeat("cd", 8), SecretSHA256: strings.Repeat("ab", 32), By: opr}),
			"token_id \"cdcdcdcdcdcdcdcd\" is not the first 16 hex digits of secret_sha256"},
		{"a token on another's stream", line(31, "token-ana", opr, events.TokenCreated{Name: "bo", TokenID: strings.Repeat("ab", 8), SecretSHA256: strings.Repeat("ab", 32), By: opr}),
			"an operator's tokens are on its own stream, token-bo"},
		{"a revoke of the live token", line(31, "token-ana", opr, events.TokenRevoked{Name: "ana", TokenID: strings.Repeat("ab", 8), By: opr}), ""},
		{"a revoke of another token", line(31, "token-ana", opr, events.TokenRevoked{Name: "ana", TokenID: strings.Repeat("cd", 8), By: opr}),
			`token "cdcdcdcdcdcdcdcd" is not operator ana's live token`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := checkFile(t, append(pre[:len(pre):len(pre)], tc.line), nil)
			n := len(pre) + 1
			got, refused := bad[n]
			switch {
			case len(bad) > 1 || len(bad) == 1 && !refused:
				t.Fatalf("refused %v; want at most line %d", bad, n)
			case tc.want == "" && refused:
				t.Fatalf("a good line refused: %s", got)
			case tc.want != "" && !refused:
				t.Fatalf("accepted; want line %d refused: %s", n, tc.want)
			case tc.want != "" && (!strings.Contains(got, tc.want) || !strings.HasPrefix(got, fmt.Sprintf("line %d: not an event to import: ", n))):
				t.Fatalf("got %q\nwant it to say %q", got, tc.want)
			}
		})
	}
}

// TestImportChecksWhatTheStoreHolds: for a node the file does not
// register, the declarations its lines name, and its adoption, are looked
// up in the store (its composes there): a declaration the store's node
// never composed, and a take on a node the store does not say adopted,
// are refused; what the store holds passes. A held_since naming a report
// of the store passes when that report held something.
func TestImportChecksWhatTheStoreHolds(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	ids := &importIDs{n: 2000}
	reg := events.NewRegistry()
	store := memstore.New()
	defer store.Close()
	held := []events.Held{{Name: "forge-web", Module: "forge", Reason: "data"}}
	var applyID string
	for _, p := range []events.Payload{
		events.NodeRegistered{Node: "g14"},
		events.DeclarationComposed{Node: "g14", Declaration: "g14/1", Digest: importDigest},
		events.DeclarationPushed{Node: "g14", Declaration: "g14/1", Digest: importDigest},
		events.ApplyReported{Node: "g14", Declaration: "g14/1", Held: held},
	} {
		ev, err := reg.New("node-g14", p, events.Meta{ID: ids.next(), At: t0, Actor: "controller"})
		if err != nil {
			t.Fatal(err)
		}
		applyID = ev.ID.String()
		if _, err := store.Append(ctx, "node-g14", events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	def, err := reg.New("module-forge", events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{
		Containers: []events.ContainerSpec{{Name: "web", Image: "forge:1"}}}}, events.Meta{ID: ids.next(), At: t0, Actor: "operator:test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, "module-forge", events.Any, def); err != nil {
		t.Fatal(err)
	}
	line := func(actor string, p events.Payload) string {
		return doorLine(t, ids, t0.Add(time.Minute), "node-g14", actor, p)
	}
	lines := []string{
		line("agent:g14", events.ApplyReported{Node: "g14", Declaration: "g14/1"}),
		line("agent:g14", events.ApplyReported{Node: "g14", Declaration: "g14/2"}),
		line("controller", events.DeclarationPushed{Node: "g14", Declaration: "g14/3", Digest: importDigest}),
		line("operator:test", events.ModuleTaken{Module: "forge", Node: "g14"}),
		line("agent:g14", events.ApplyReported{Node: "g14", Declaration: "g14/1", HeldSince: applyID}),
		line("controller", events.DeclarationComposed{Node: "g14", Declaration: "g14/2", Digest: importDigest}),
		line("agent:g14", events.ApplyReported{Node: "g14", Declaration: "g14/2"}),
	}
	bad := checkFile(t, lines, store)
	want := map[int]string{
		2: `apply.reported on node-g14: declaration "g14/2" was never composed for node g14, in the store or earlier in the file`,
		3: `declaration.pushed on node-g14: declaration "g14/3" was never composed for node g14, in the store or earlier in the file`,
		4: "module.taken on node-g14: node g14 is not adopted, in the store or earlier in the file",
	}
	if len(bad) != len(want) {
		t.Fatalf("refused %v\nwant %v", bad, want)
	}
	for n, w := range want {
		if !strings.Contains(bad[n], w) {
			t.Errorf("line %d: %q\nwant %q", n, bad[n], w)
		}
	}
}

// TestImportRefusesAReportAsTheDoor: an import refuses an apply report
// through the door's one check (CheckReport), so its refusal is the
// door's, with the same reason: one function checks a report, whatever
// it came through.
func TestImportRefusesAReportAsTheDoor(t *testing.T) {
	t0 := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		report events.ApplyReported
		reason string
	}{
		{"counts that disagree", events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 1, Applied: 1}, events.RefusedCounts},
		{"a NUL in a name", events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 1, Applied: 1, Created: []string{"a\x00b"}}, events.RefusedMalformed},
		{"a name over its bound", events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 1, Applied: 1, Created: []string{strings.Repeat("x", events.MaxReportName+1)}}, events.RefusedTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := &importIDs{n: 3000}
			line := doorLine(t, ids, t0, "node-novox", "agent:novox", tc.report)
			ev, err := events.UnmarshalJSONLine([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			door := commands.CheckReport(commands.Delivery{Report: tc.report, ApplyID: ev.ID, AppliedAt: ev.At, Correlation: ev.Correlation}, nil, time.Time{})
			var want *commands.Refusal
			if !errors.As(door, &want) || want.Reason != tc.reason {
				t.Fatalf("the door: %v, want a refusal for %s", door, tc.reason)
			}
			_, err = commands.NewImport(events.NewRegistry()).Line([]byte(line), 1)
			var got *commands.Refusal
			if !errors.As(err, &got) || got.Reason != want.Reason || !strings.Contains(err.Error(), want.Msg) {
				t.Fatalf("the import: %v, want the door's refusal %q (%s)", err, want.Msg, want.Reason)
			}
		})
	}
}
