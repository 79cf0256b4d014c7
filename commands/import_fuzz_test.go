package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/internal/jsontest"
	"meshplane/projections"
)

// FuzzDecodeImportLine: after a good preamble (novox registered, forge
// defined), a line is either refused (an *ImportLineError naming it) or
// every rule of the door holds of it, each checked here without the
// checker's code: a store accepts it; the readers decode it and every
// projection folds it without a failure; no key is given twice in it; its
// node is its stream's and a valid name; an apply report's counts add up;
// it exports to a line accepted again as the same event; and the pass
// that appends (Replay) hands over that event.
func FuzzDecodeImportLine(f *testing.F) {
	ids := &importIDs{n: 1000}
	good := func(stream, actor string, p events.Payload) {
		f.Add([]byte(importLine(f, ids, stream, actor, p)))
	}
	good("node-novox", "agent:novox", goodApply())
	good("node-novox", "agent:novox", events.ApplyReported{Node: "novox", Declaration: "novox/2", Sent: 3, Applied: 1, Unchanged: 1,
		Updated: []events.Replaced{{Name: "f", Fields: []string{"content"}}}, Held: []events.Held{{Name: "ca", Module: "forge", Reason: "r"}}})
	good("node-novox", "operator:test", events.NodeAdopted{Node: "novox"})
	good("node-novox", "operator:test", events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"})
	good("node-novox", "operator:test", events.ModuleAssigned{Module: "forge", Node: "novox"})
	good("node-novox", "controller", events.DeclarationComposed{Node: "novox", Declaration: "novox/1", Digest: "sha256:aa", Roster: []string{"a.b"},
		Resources: []events.ResourceRef{{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:01"}}, Specs: map[string]json.RawMessage{"sha256:01": json.RawMessage(`{"image":"x"}`)}})
	good("node-novox", "controller", events.DeclarationPushed{Node: "novox", Declaration: "novox/1", Digest: "sha256:aa", Resources: 1})
	good("node-novox", "agent:novox", events.ReportDeliveredLate{Node: "novox", Declaration: "novox/1", ApplyID: "x", Attempts: 2})
	good("node-g14", "operator:test", events.NodeRegistered{Node: "g14"})
	good("module-forge", "operator:test", events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: importDigest, Upgrade: events.UpgradeManual})
	good("module-forge", "operator:test", events.ModuleDeployed{Module: "forge", Builds: []events.Build{{Name: "forge/web", Digest: importDigest}}, By: events.DeployedByOperator})
	for _, s := range []string{
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"node-novox","version":3,"position":17,"type":"declaration.composed","schema":1,"at":"2026-09-29T22:46:00Z","actor":"controller","correlation":"c","data":{"node":"novox","declaration":"novox/1"}}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"s","type":"t","at":"2026-09-29T22:46:00.123456789+02:00","data":{}}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"node-novox","type":"apply.reported","schema":999,"at":"2026-09-29T22:46:00Z","data":{"node":"novox"}}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"node-g14","type":"apply.reported","type":"node.adopted","at":"2026-09-29T22:46:00Z","data":{"node":"novox","declaration":"novox/1","unchanged":-1}}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"module-Bad Name/../x","type":"module.defined","at":"2026-09-29T22:46:00Z","data":{"module":"Bad Name/../x"}}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","stream":"node-novox","type":"node.adopted","at":"2026-09-29T22:46:00Z","data":{"node":"novox","Node":"g14"}}`,
		`{"stream":"s","type":"t","at":"2026-09-29T22:46:00Z"}`,
		`{"id":"0192f1d2-3a4b-7c5d-8e6f-0123456789ab","strem":"s"}`,
		`{}`, `[]`, `null`, `{"data":"x"}`, "",
	} {
		f.Add([]byte(s))
	}
	reg := events.NewRegistry()
	f.Fuzz(func(t *testing.T, line []byte) {
		ctx := context.Background()
		pre := importPreamble(t, &importIDs{})
		im := commands.NewImport(reg)
		var preEvents []events.Event
		for i, l := range pre {
			ev, err := im.Line([]byte(l), i+1)
			if err != nil {
				t.Fatalf("preamble line %d refused: %v", i+1, err)
			}
			preEvents = append(preEvents, ev)
		}
		n := len(pre) + 1
		ev, err := im.Line(line, n)
		if err == nil {
			var refused []*commands.ImportLineError
			if refused, err = im.Settle(ctx, emptyReader(t)); err != nil {
				t.Fatal(err)
			}
			if len(refused) > 0 {
				err = refused[0]
			}
		}
		if err != nil {
			var le *commands.ImportLineError
			if !errors.As(err, &le) || !errors.Is(err, commands.ErrImportLine) || le.Line != n {
				t.Fatalf("refusal %v does not name line %d as ErrImportLine", err, n)
			}
			return
		}

		// A store accepts it, and the readers read it.
		if _, err := events.Prepare(ev.Stream, []events.Event{ev}, ev.At); err != nil {
			t.Fatalf("accepted %s, which a store refuses: %v", line, err)
		}
		p, err := reg.Decode(ev)
		if err != nil {
			t.Fatalf("accepted %s, which the readers cannot decode: %v", line, err)
		}
		store := memstore.New()
		defer store.Close()
		for _, e := range append(preEvents, ev) {
			if _, err := store.Append(ctx, e.Stream, events.Any, e); err != nil {
				t.Fatalf("append %s: %v", e.Stream, err)
			}
		}
		set := projections.New()
		runner := projections.NewRunner(store, reg, set.All()...)
		if err := runner.CatchUp(ctx); err != nil {
			t.Fatalf("accepted %s, and the projections fail on it: %v", line, err)
		}
		if kept, total := runner.Failures(); total > 0 {
			t.Fatalf("accepted %s, and the projections could not fold it: %+v", line, kept)
		}

		// No key twice, anywhere in the line.
		if dup, err := jsontest.HasDuplicateKey(line); err != nil || dup {
			t.Fatalf("accepted %s, which gives a key twice (%v)", line, err)
		}
		// Its node is its stream's, and a name; or its module's.
		var fields map[string]any
		if err := json.Unmarshal(ev.Data, &fields); err != nil {
			t.Fatal(err)
		}
		if node, ok := fields["node"].(string); ok {
			if ev.Stream != "node-"+node || events.CheckName("node", node) != nil {
				t.Fatalf("accepted %s: node %q on stream %q", line, node, ev.Stream)
			}
		} else if module, ok := fields["module"].(string); !ok || ev.Stream != "module-"+module {
			t.Fatalf("accepted %s: module %q on stream %q", line, module, ev.Stream)
		}
		if module, ok := fields["module"].(string); ok && events.CheckName("module", module) != nil {
			t.Fatalf("accepted %s: module %q", line, module)
		}
		if a, ok := p.(events.ApplyReported); ok {
			if err := commands.CheckReport(commands.Delivery{Report: a, ApplyID: ev.ID, AppliedAt: ev.At, Correlation: ev.Correlation}, nil, time.Time{}); err != nil || !strings.HasPrefix(a.Declaration, a.Node+"/") {
				t.Fatalf("accepted %s: an apply report that does not hold (%v)", line, err)
			}
		}

		// It exports to a line accepted again as the same event.
		out, err := events.MarshalJSONLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		again := commands.NewImport(reg)
		for i, l := range pre {
			if _, err := again.Line([]byte(l), i+1); err != nil {
				t.Fatal(err)
			}
		}
		back, err := again.Line(out, n)
		if err != nil {
			t.Fatalf("exported %s, refused on import: %v", out, err)
		}
		if !back.SameContent(ev) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", ev, back)
		}
		// The pass that appends hands over the event Line accepted.
		for i, l := range pre {
			if _, ok, err := im.Replay([]byte(l), i+1); !ok || err != nil {
				t.Fatalf("replay of preamble line %d: %v, %v", i+1, ok, err)
			}
		}
		replayed, ok, err := im.Replay(line, n)
		if !ok || err != nil || !replayed.SameContent(ev) {
			t.Fatalf("replay of %s: %+v, %v, %v; want %+v", line, replayed, ok, err, ev)
		}
	})
}
