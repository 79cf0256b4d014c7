package events_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"meshplane/events"
)

// widget is a test payload at schema 3. Schema 1 called the name "title";
// schema 2 renamed it; schema 3 added a size, 1 by default.
type widget struct {
	Name string `json:"name"`
	Size int    `json:"size"`
}

func (widget) EventType() string { return "test.widget" }

// widgetRegistry returns a fresh registry knowing widget at schema 3, with
// upcasters 1→2 and 2→3 that record the order they ran in.
func widgetRegistry(t *testing.T, ran *[]string) *events.Registry {
	t.Helper()
	r := events.NewRegistry()
	r.Register(widget{}, 3)
	r.Upcast("test.widget", 1, func(d json.RawMessage) (json.RawMessage, error) {
		*ran = append(*ran, "1→2")
		var v1 struct{ Title string }
		if err := json.Unmarshal(d, &v1); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"name": v1.Title})
	})
	r.Upcast("test.widget", 2, func(d json.RawMessage) (json.RawMessage, error) {
		*ran = append(*ran, "2→3")
		var v2 map[string]any
		if err := json.Unmarshal(d, &v2); err != nil {
			return nil, err
		}
		if v2["name"] == "refuse" {
			return nil, errors.New("cannot upcast a refused widget")
		}
		v2["size"] = 1
		return json.Marshal(v2)
	})
	return r
}

func TestRegistryDecode(t *testing.T) {
	cases := []struct {
		name    string
		typ     string
		schema  int
		data    string
		want    events.Payload
		ran     []string
		wantErr error
	}{
		{"current schema", "test.widget", 3, `{"name":"gear","size":4}`, widget{"gear", 4}, nil, nil},
		{"schema 2, one upcaster", "test.widget", 2, `{"name":"gear"}`, widget{"gear", 1}, []string{"2→3"}, nil},
		{"schema 1, the chain in order", "test.widget", 1, `{"title":"gear"}`, widget{"gear", 1}, []string{"1→2", "2→3"}, nil},
		{"schema 0 reads as 1", "test.widget", 0, `{"title":"gear"}`, widget{"gear", 1}, []string{"1→2", "2→3"}, nil},
		{"vocabulary type", events.TypeModuleTaken, 1, `{"module":"route-proxy","node":"novox"}`,
			events.ModuleTaken{Module: "route-proxy", Node: "novox"}, nil, nil},
		{"unknown field is ignored", events.TypeNodeRegistered, 1, `{"node":"novox","later":true}`,
			events.NodeRegistered{Node: "novox"}, nil, nil},
		{"unknown type", "future.thing-happened", 1, `{}`, nil, nil, events.ErrUnknownType},
		{"schema newer than known", "test.widget", 4, `{"name":"gear"}`, nil, nil, events.ErrInvalid},
		{"data that does not decode", "test.widget", 3, `{"name":7}`, nil, nil, events.ErrInvalid},
		{"data not JSON", events.TypeNodeRegistered, 1, `{`, nil, nil, events.ErrInvalid},
		{"upcaster fails", "test.widget", 2, `{"name":"refuse"}`, nil, []string{"2→3"}, errUpcast},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			r := widgetRegistry(t, &ran)
			ev := events.Event{ID: idA, Stream: "module-m", Position: 12, Type: tc.typ, Schema: tc.schema, Data: json.RawMessage(tc.data)}
			got, err := r.Decode(ev)
			if !reflect.DeepEqual(ran, tc.ran) {
				t.Errorf("upcasters ran %v, want %v", ran, tc.ran)
			}
			if tc.wantErr != nil {
				if err == nil || (tc.wantErr == errUpcast && !strings.Contains(err.Error(), "cannot upcast a refused widget")) ||
					(tc.wantErr != errUpcast && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("Decode: got %v, %v; want %v", got, err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), "12") || !strings.Contains(err.Error(), tc.typ) {
					t.Errorf("error %q names neither the position nor the type", err)
				}
				if got != nil {
					t.Errorf("Decode returned %v beside its error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decode = %#v, want %#v", got, tc.want)
			}
		})
	}
}

// errUpcast marks a case whose error is the upcaster's own, wrapped.
var errUpcast = errors.New("upcaster's error")

func TestRegistryMissingUpcaster(t *testing.T) {
	r := events.NewRegistry()
	r.Register(widget{}, 3)
	r.Upcast("test.widget", 2, func(d json.RawMessage) (json.RawMessage, error) { return d, nil })
	_, err := r.Decode(events.Event{Type: "test.widget", Schema: 1, Data: json.RawMessage(`{}`)})
	if !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), "no upcaster") {
		t.Errorf("Decode of schema 1 without a 1→2 upcaster: got %v, want ErrInvalid naming the missing upcaster", err)
	}
}

func TestDecodeAs(t *testing.T) {
	r := events.NewRegistry()
	ev, err := r.New("node-novox", events.NodeSettingSet{Node: "novox", Key: "port.store", Value: "6852"}, events.Meta{ID: idA, At: testAt})
	if err != nil {
		t.Fatal(err)
	}
	got, err := events.DecodeAs[events.NodeSettingSet](r, ev)
	if err != nil || got.Value != "6852" || got.Key != "port.store" {
		t.Errorf("DecodeAs[NodeSettingSet] = %#v, %v", got, err)
	}
	if _, err := events.DecodeAs[events.NodeRegistered](r, ev); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("DecodeAs of the wrong type: got %v, want ErrInvalid", err)
	}
	ev.Type = "future.thing-happened"
	if _, err := events.DecodeAs[events.NodeSettingSet](r, ev); !errors.Is(err, events.ErrUnknownType) {
		t.Errorf("DecodeAs of an unknown type: got %v, want ErrUnknownType", err)
	}
}

func TestRegistryNew(t *testing.T) {
	var ran []string
	r := widgetRegistry(t, &ran)
	meta := events.Meta{ID: idA, At: testAt, Actor: "operator:ann", Causation: "c-1", Correlation: "push-1"}
	ev, err := r.New("module-gears", widget{"gear", 2}, meta)
	if err != nil {
		t.Fatal(err)
	}
	want := events.Event{ID: idA, Stream: "module-gears", Type: "test.widget", Schema: 3, At: testAt,
		Actor: "operator:ann", Causation: "c-1", Correlation: "push-1", Data: json.RawMessage(`{"name":"gear","size":2}`)}
	if !ev.SameContent(want) {
		t.Errorf("New = %#v\nwant %#v", ev, want)
	}
	if len(ran) != 0 {
		t.Errorf("New ran upcasters %v", ran)
	}
	if _, err := events.NewRegistry().New("s", widget{}, meta); !errors.Is(err, events.ErrUnknownType) {
		t.Errorf("New of an unregistered payload: got %v, want ErrUnknownType", err)
	}
}

// TestVocabulary: every type constant is registered, and every payload
// survives New then Decode.
func TestVocabulary(t *testing.T) {
	r := events.NewRegistry()
	payloads := []events.Payload{
		events.NodeRegistered{Node: "novox"}, events.NodeAdopted{Node: "novox"},
		events.NodeSettingSet{Node: "novox", Key: "private-address", Value: "10.1.0.3"},
		events.ModuleDefined{Module: "forge", Spec: events.ModuleSpec{Routes: []string{"forge.zurag.be"},
			Containers: []events.ContainerSpec{{Name: "web", Artifact: "forge/web", Ports: []events.PortRead{{Port: "store", Env: "STORE_PORT"}}}}}},
		events.ModuleAssigned{Module: "forge", Node: "novox"}, events.ModuleReleased{Module: "forge", Node: "novox"},
		events.ModuleTaken{Module: "forge", Node: "novox"},
		events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: "sha256:ab12"},
		events.DeclarationComposed{Node: "novox", Declaration: "d1", Digest: "sha256:1", Roster: []string{"a.zurag.be"},
			Resources: []events.ResourceRef{{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:2"}}},
		events.DeclarationComposeFailed{Node: "novox", Read: "node g14", Error: "timeout"},
		events.DeclarationPushed{Node: "novox", Declaration: "d1", Digest: "sha256:1", Resources: 3},
		events.DeclarationPushFailed{Node: "novox", Declaration: "d1", Error: "bus cut"},
		events.ApplyReported{Node: "novox", Declaration: "d1", Sent: 4, Applied: 3, Held: held("ca", "route-proxy")},
		events.ReportDeliveredLate{Node: "novox", Declaration: "d1", ApplyID: "a1", Attempts: 3},
		events.ModuleDeployed{Module: "forge", Builds: []events.Build{{Name: "forge/web", Digest: "sha256:ab12"}}, By: events.DeployedByRollOut},
		events.ReportRefused{Node: "novox", Reason: events.RefusedCounts, Detail: "unchanged: -1 is below zero", Digest: "sha256:ab", Size: 52, ApplyID: "a2", Declaration: "d1"},
		events.ReportThrottled{Node: "novox", Deferred: 240, From: testAt.UTC(), To: testAt.UTC().Add(time.Minute), Rate: 1, Burst: 64},
		events.NodeJoinTokenIssued{Node: "novox", TokenID: "0123456789abcdef", SecretSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", ExpiresAt: testAt.UTC(), By: "operator:ana"},
		events.NodeJoined{Node: "novox", TokenID: "0123456789abcdef", PublicKey: "UABC", From: "10.0.0.4:5000", AgentVersion: "dev"},
		events.NodeCredentialsIssued{Node: "novox", PublicKey: "UABC", By: "operator:ana"},
		events.NodeCredentialsRevoked{Node: "novox", PublicKeys: []string{"UABC"}, By: "operator:ana"},
		events.ApplyReported{Node: "novox", Declaration: "d1", Sent: 1, Applied: 1, Unchanged: 1, ReceivedAt: testAt.UTC()},
		events.TokenCreated{Name: "alice", TokenID: "1a2b3c4d5e6f7a8b", SecretSHA256: strings.Repeat("1a2b3c4d", 8), ExpiresAt: testAt.UTC(), By: "operator:admin"},
		events.TokenRevoked{Name: "alice", TokenID: "1a2b3c4d5e6f7a8b", By: "operator:admin"},
		events.NodeWentSilent{Node: "novox", LastSeen: testAt.UTC(), Bound: "30s"},
		events.NodeCameBack{Node: "novox", LastSeen: testAt.UTC().Add(time.Minute), SilentFor: "1m0s"},
		events.ModuleRemoved{Module: "forge"},
		events.NodeRemoved{Node: "novox", Drained: []string{"forge"}},
		events.SecretSet{Name: "forge-db", Digest: "hmac-sha256:ab", Sealed: "c2VhbGVk", KeyID: "3f2a", By: "operator:ana"},
		events.RosterChanged{Revision: 2, Digest: "sha256:aa", Added: []events.RosterRoute{{Name: "forge.z", Address: "10.0.0.2", Node: "g14"}},
			Removed: []events.RosterRoute{{Name: "cache.z", Node: "novox"}}},
		events.DeclarationComposed{Node: "novox", Declaration: "novox/3", Digest: "sha256:01", RosterRevision: 2,
			Resources: []events.ResourceRef{{Name: "ca", Kind: "container", Module: "m", Digest: "sha256:02"}}},
		events.RolloutFailed{Node: "novox", Module: "forge", Declaration: "novox/3", Action: events.RolloutRevert, RevertTo: 41,
			Containers: []events.RolloutFailure{{Module: "forge", Container: "web", Why: "exited with code 1: cat: x"}}},
	}
	for _, state := range slices.Sorted(maps.Keys(events.WorkloadTypes)) {
		c := events.ContainerChange{Node: "novox", Module: "forge", Container: "web", Declaration: "novox/3", State: state, At: testAt.UTC(),
			ExitCode: 1, Restarts: 14, Since: testAt.Add(-time.Minute).UTC(), Health: "unhealthy", Output: "refused", Log: "cat: x\n"}
		payloads = append(payloads, events.ContainerPayload(c))
		if back, ok := events.ContainerOf(events.ContainerPayload(c)); !ok || back != c {
			t.Errorf("%s: ContainerOf(ContainerPayload) = %+v, %v", state, back, ok)
		}
	}
	var types []string
	for _, p := range payloads {
		types = append(types, p.EventType())
		ev, err := r.New(events.NodeStream("novox"), p, events.Meta{ID: idA, At: testAt})
		if err != nil {
			t.Errorf("New(%s): %v", p.EventType(), err)
			continue
		}
		got, err := r.Decode(ev)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Errorf("%s: New then Decode = %#v, %v; want %#v", p.EventType(), got, err, p)
		}
	}
	sort.Strings(types)
	types = slices.Compact(types)
	if got := r.Types(); !reflect.DeepEqual(got, types) {
		t.Errorf("Types() = %v\nwant %v", got, types)
	}
	for _, typ := range types {
		if !r.Known(typ) {
			t.Errorf("Known(%q) = false", typ)
		}
	}
	if r.Known("future.thing-happened") {
		t.Errorf("Known of an unregistered type")
	}
	if events.NodeStream("novox") != "node-novox" || events.ModuleStream("forge") != "module-forge" {
		t.Errorf("stream names: %q, %q", events.NodeStream("novox"), events.ModuleStream("forge"))
	}
}

func TestJSONLine(t *testing.T) {
	e := validEvent(idA)
	e.Stream, e.Version, e.Position, e.Schema = "node-novox", 3, 17, 2
	e.Actor, e.Causation, e.Correlation = "agent:novox", "c", "push-9"
	line, err := events.MarshalJSONLine(e)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(string(line), '\n') {
		t.Errorf("line has a newline: %s", line)
	}
	got, err := events.UnmarshalJSONLine(line)
	if err != nil {
		t.Fatalf("UnmarshalJSONLine(%s): %v", line, err)
	}
	if !got.SameContent(e) || got.Version != 3 || got.Position != 17 {
		t.Errorf("round trip:\n got %#v\nwant %#v", got, e)
	}

	cases := []struct {
		name string
		line string
		ok   bool
		want func(events.Event) bool
	}{
		{"scenario-steps doc string", `{"stream": "node-novox", "type": "declaration.composed", "at": "2026-09-29T22:46:00Z", "data": {"node":"novox"}}`, true,
			func(e events.Event) bool {
				return e.Stream == "node-novox" && e.Schema == 1 && e.At.Unix() == 1790721960 && string(e.Data) == `{"node":"novox"}`
			}},
		{"no at, no id", `{"stream":"s","type":"t","data":{}}`, true,
			func(e events.Event) bool { return e.At.IsZero() && e.ID == [16]byte{} }},
		{"schema kept", `{"stream":"s","type":"t","schema":4}`, true, func(e events.Event) bool { return e.Schema == 4 }},
		{"surrounding space", " \t{\"stream\":\"s\"}\n", true, func(e events.Event) bool { return e.Stream == "s" }},
		{"misspelt field", `{"strem":"s","type":"t"}`, false, nil},
		{"two values", `{"stream":"s"} {"stream":"t"}`, false, nil},
		{"trailing word", `{"stream":"s"} x`, false, nil},
		// dec.More() is false before a '}' or ']', so these two pass today:
		// regression tests until UnmarshalJSONLine checks for the end of input.
		{"trailing brace", `{"stream":"s"}}`, false, nil},
		{"trailing bracket", `{"stream":"s"}]`, false, nil},
		{"not JSON", `stream: s`, false, nil},
		{"empty", ``, false, nil},
		{"an array", `[{"stream":"s"}]`, false, nil},
		{"bad id", `{"id":"nope","stream":"s"}`, false, nil},
		{"bad time", `{"at":"yesterday","stream":"s"}`, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.UnmarshalJSONLine([]byte(tc.line))
			if !tc.ok {
				if !errors.Is(err, events.ErrInvalid) {
					t.Errorf("UnmarshalJSONLine(%s): got %#v, %v; want ErrInvalid", tc.line, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("UnmarshalJSONLine(%s): %v", tc.line, err)
			}
			if !tc.want(got) {
				t.Errorf("UnmarshalJSONLine(%s) = %s", tc.line, fmt.Sprintf("%#v", got))
			}
		})
	}
}

// TestDecodeComposedNotAliased: the registry decodes a composed
// declaration's roster and resources through a cache shared by every decode
// of the same bytes. An append through one decoded payload must never write
// into another's: each append below would land in the same spare capacity
// if the cached slices were handed out unclipped.
func TestDecodeComposedNotAliased(t *testing.T) {
	r := events.NewRegistry()
	ev, err := r.New("node-novox", events.DeclarationComposed{
		Node: "novox", Declaration: "novox/1", Digest: "sha256:d1",
		Roster: []string{"10.1.0.3 a.zurag.be", "10.1.0.3 b.zurag.be", "10.1.0.4 c.zurag.be"},
		Resources: []events.ResourceRef{
			{Name: "ca", Kind: "container", Module: "route-proxy", Digest: "sha256:1"},
			{Name: "proxy", Kind: "container", Module: "route-proxy", Digest: "sha256:2"},
			{Name: "acme", Kind: "container", Module: "route-proxy", Digest: "sha256:3"},
		},
	}, events.Meta{ID: idA, At: testAt})
	if err != nil {
		t.Fatal(err)
	}
	decode := func() events.DeclarationComposed {
		t.Helper()
		d, err := events.DecodeAs[events.DeclarationComposed](r, ev)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := decode(), decode()
	a.Roster = append(a.Roster, "10.9.9.9 mine.a")
	a.Resources = append(a.Resources, events.ResourceRef{Name: "mine-a"})
	b.Roster = append(b.Roster, "10.9.9.9 mine.b")
	b.Resources = append(b.Resources, events.ResourceRef{Name: "mine-b"})
	if got := a.Roster[len(a.Roster)-1]; got != "10.9.9.9 mine.a" {
		t.Errorf("an append to one decode's roster wrote into another's: it reads %q", got)
	}
	if got := a.Resources[len(a.Resources)-1].Name; got != "mine-a" {
		t.Errorf("an append to one decode's resources wrote into another's: it reads %q", got)
	}
	if c := decode(); len(c.Roster) != 3 || len(c.Resources) != 3 {
		t.Errorf("a later decode reads %d roster lines and %d resources, want 3 and 3", len(c.Roster), len(c.Resources))
	}
}
