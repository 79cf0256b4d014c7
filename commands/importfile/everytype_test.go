package importfile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/sim"
)

// everyTypeTail is a history after a simulated mesh's that holds, on a
// node and a module of their own, every type a simulation does not
// write: each as the command or report that appends it would have it.
func everyTypeTail(t *testing.T, store events.Store, at time.Time) {
	t.Helper()
	ctx := context.Background()
	reg := events.NewRegistry()
	const (
		node, mod = "every", "everymod"
		by        = "operator:ana"
	)
	sha := "sha256:" + strings.Repeat("ab", 32)
	hex64 := strings.Repeat("cd", 32)
	ns, ms := events.NodeStream(node), events.ModuleStream(mod)
	var applyID string
	for i, e := range []struct {
		stream, actor string
		p             events.Payload
	}{
		{ns, by, events.NodeRegistered{Node: node}},
		{ns, by, events.NodeAdopted{Node: node}},
		{ns, by, events.NodeSettingSet{Node: node, Key: events.SettingPrivateAddress, Value: "10.9.9.9"}},
		{ms, by, events.ModuleDefined{Module: mod, Spec: events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web", Artifact: mod + "/web"}}}}},
		{ns, by, events.ModuleAssigned{Module: mod, Node: node}},
		{ns, by, events.ModuleTaken{Module: mod, Node: node}},
		{ms, by, events.ArtifactRecorded{Module: mod, Name: mod + "/web", Digest: sha, Upgrade: events.UpgradeManual}},
		{ms, by, events.ModuleDeployed{Module: mod, Builds: []events.Build{{Name: mod + "/web", Digest: sha}}, By: events.DeployedByOperator}},
		{ns, "controller", events.DeclarationComposeFailed{Node: node, Read: "node " + node, Error: "a read failed"}},
		{ns, "controller", events.DeclarationComposed{Node: node, Declaration: node + "/1", Digest: sha,
			Resources: []events.ResourceRef{{Name: "everymod-web", Kind: "container", Module: mod, Digest: sha}}}},
		{ns, "controller", events.DeclarationPushFailed{Node: node, Declaration: node + "/1", Error: "the bus is down"}},
		{ns, "controller", events.DeclarationPushed{Node: node, Declaration: node + "/1", Digest: sha, Resources: 1}},
		{ns, "agent:" + node, events.ApplyReported{Node: node, Declaration: node + "/1", Sent: 1, Applied: 1, Created: []string{"everymod-web"}}},
		{ns, "agent:" + node, events.ReportDeliveredLate{Node: node, Declaration: node + "/1", Attempts: 2, LastError: "timeout"}},
		{ns, "agent:" + node, events.ContainerPayload(events.ContainerChange{Node: node, Module: mod, Container: "everymod-web", Declaration: node + "/1",
			State: events.WorkloadStarting, At: at})},
		{ns, "agent:" + node, events.ContainerPayload(events.ContainerChange{Node: node, Module: mod, Container: "everymod-web", Declaration: node + "/1",
			State: events.WorkloadCrashLooping, At: at.Add(time.Minute), ExitCode: 1, Restarts: 4, Since: at, Log: "cat: x: no such file\n"})},
		{ns, "agent:" + node, events.ContainerPayload(events.ContainerChange{Node: node, Module: mod, Container: "everymod-web", Declaration: node + "/1",
			State: events.WorkloadRunning, At: at.Add(2 * time.Minute), Restarts: 8, Since: at})},
		{ns, "agent:" + node, events.ContainerPayload(events.ContainerChange{Node: node, Module: mod, Container: "everymod-web", Declaration: node + "/1",
			State: events.WorkloadUnhealthy, At: at.Add(3 * time.Minute), Health: "unhealthy", Output: "refused"})},
		{ns, "agent:" + node, events.ContainerPayload(events.ContainerChange{Node: node, Module: mod, Container: "everymod-web", Declaration: node + "/1",
			State: events.WorkloadExited, At: at.Add(4 * time.Minute), ExitCode: 2, Log: "bye\n"})},
		{ns, "agent:" + node, events.ContainerPayload(events.ContainerChange{Node: node, Module: mod, Container: "everymod-web", Declaration: node + "/1",
			State: events.WorkloadOOMKilled, At: at.Add(5 * time.Minute), ExitCode: 137})},
		{ns, "agent:" + node, events.ContainerPayload(events.ContainerChange{Node: node, Module: mod, Container: "everymod-web", Declaration: node + "/1",
			State: events.WorkloadVanished, At: at.Add(6 * time.Minute)})},
		{ns, "controller", events.RolloutFailed{Node: node, Module: mod, Declaration: node + "/1", Action: events.RolloutGaveUp,
			Containers: []events.RolloutFailure{{Module: mod, Container: "everymod-web", Why: "exit code 1"}}}},
		{ns, "controller", events.ReportRefused{Node: node, Reason: events.RefusedMalformed, Detail: "does not decode", Digest: sha, Size: 12}},
		{ns, "controller", events.ReportThrottled{Node: node, Deferred: 3, From: at, To: at.Add(time.Second), Rate: 10, Burst: 20}},
		{ns, by, events.NodeJoinTokenIssued{Node: node, TokenID: hex64[:16], SecretSHA256: hex64, ExpiresAt: at.Add(time.Hour), By: by}},
		{ns, "controller", events.NodeJoined{Node: node, TokenID: hex64[:16], PublicKey: "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", From: "127.0.0.1:5000", AgentVersion: "0.19.0"}},
		{ns, by, events.NodeCredentialsIssued{Node: node, PublicKey: "UAXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", By: by}},
		{ns, "controller", events.NodeWentSilent{Node: node, LastSeen: at, Bound: "30s"}},
		{ns, "controller", events.NodeCameBack{Node: node, LastSeen: at.Add(time.Minute), SilentFor: "1m0s"}},
		{events.TokenStream("ana"), "controller", events.TokenCreated{Name: "ana", TokenID: hex64[:16], SecretSHA256: hex64, By: "controller"}},
		{events.TokenStream("ana"), by, events.TokenRevoked{Name: "ana", TokenID: hex64[:16], By: by}},
		{events.SecretStream("every-db"), by, events.SecretSet{Name: "every-db", Digest: "hmac-sha256:" + hex64, Sealed: "c2VhbGVk", KeyID: "k1", By: by}},
		{ns, by, events.ModuleReleased{Module: mod, Node: node}},
		{ns, by, events.NodeCredentialsRevoked{Node: node, PublicKeys: []string{"UAXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"}, By: by}},
		{ns, by, events.NodeRemoved{Node: node, Drained: []string{mod}}},
		{ms, by, events.ModuleRemoved{Module: mod}},
	} {
		p := e.p
		if late, ok := p.(events.ReportDeliveredLate); ok {
			late.ApplyID = applyID
			p = late
		}
		ev, err := reg.New(e.stream, p, events.Meta{ID: events.NewID(), At: at.Add(time.Duration(i) * time.Second), Actor: e.actor, Correlation: "every"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.(events.ApplyReported); ok {
			applyID = ev.ID.String()
		}
		if _, err := store.Append(ctx, e.stream, events.Any, ev); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
	}
}

// TestEveryTypeImports: a store holding every type of the event registry
// (a simulated mesh's history, and the rest by hand: a type added later
// without a line here fails this test, and so does one without an import
// rule), exported, imports into an empty store with no line refused, and
// the copy is the store: the same projections (status, timeline, ...),
// the same head of the chain (mesh store head), the same export. Before,
// token.created, which every controller records at its first start, was
// refused ("names no node and no module").
func TestEveryTypeImports(t *testing.T) {
	ctx := context.Background()
	src := memstore.New()
	defer src.Close()
	if err := sim.New(src).Generate(ctx, sim.DefaultWorkload, 300); err != nil {
		t.Fatal(err)
	}
	all, err := src.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	everyTypeTail(t, src, all[len(all)-1].At.Add(time.Minute))
	if all, err = src.ReadAll(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, ev := range all {
		held[ev.Type] = true
	}
	for _, typ := range events.NewRegistry().Types() {
		if !held[typ] {
			t.Errorf("the store holds no %s: add one to everyTypeTail (and an import rule, if it has none)", typ)
		}
	}
	wantHead, err := src.ChainHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := projected(t, src)
	for _, compact := range []bool{false, true} {
		body := exportOf(t, src, 0, compact)
		dst := memstore.New()
		defer dst.Close()
		if bad := importInto(t, dst, body); bad != nil {
			t.Fatalf("import of the export (compact %v): %d line(s) refused:\n%s", compact, len(bad), strings.Join(bad, "\n"))
		}
		sameStore(t, "every type", src, dst)
		if got := projected(t, dst); got != want {
			t.Errorf("compact %v: the import folds to other projections", compact)
		}
		if head, err := dst.ChainHead(ctx); err != nil || head != wantHead {
			t.Errorf("compact %v: the import's head %v (%v), want %v", compact, head, err, wantHead)
		}
		if again := exportOf(t, dst, 0, compact); again != body {
			t.Errorf("compact %v: the export of the import is not the export imported", compact)
		}
	}
}

// A file written by hand, its payloads with spaces and an unescaped <,
// imports; the store's export, which gives each payload in JSON's compact
// form with its chain value, imports again into an empty store, to the
// same bytes. Before, the import stored the payloads as written, and the
// export's first line was refused: its chain value did not follow.
func TestHandWrittenFileExportsAndImportsAgain(t *testing.T) {
	hand := `{"id":"0192f1d2-3a4b-7c5d-8e6f-000000000001","stream":"node-x","type":"node.registered","at":"2026-09-29T22:46:00Z","actor":"operator:a","data":{ "node": "x" }}
{"id":"0192f1d2-3a4b-7c5d-8e6f-000000000002","stream":"node-x","type":"declaration.compose-failed","at":"2026-09-29T22:46:01Z","actor":"controller","data":{"node": "x", "error": "exit <1> & 2"}}
`
	first := memstore.New()
	defer first.Close()
	if bad := importInto(t, first, hand); bad != nil {
		t.Fatalf("the file written by hand: %v", bad)
	}
	export := exportOf(t, first, 0, false)
	if !strings.Contains(export, `"chain":"sha256:`) {
		t.Fatal("the export carries no chain value: the test proves nothing")
	}
	again := memstore.New()
	defer again.Close()
	if bad := importInto(t, again, export); bad != nil {
		t.Fatalf("the export of what was imported: %v", bad)
	}
	sameStore(t, "again", first, again)
}
