package commands

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"meshplane/events"
)

// stream makes a module's stream of payloads, one a second from t0, at
// positions 10, 20, 30, ... (other streams' events between them).
func stream(t0 time.Time, ps ...events.Payload) ([]events.Event, map[uint64]events.Payload) {
	evs := make([]events.Event, len(ps))
	byPos := map[uint64]events.Payload{}
	for i, p := range ps {
		pos := uint64(10 * (i + 1))
		evs[i] = events.Event{Stream: "module-forge", Version: uint64(i + 1), Position: pos, Type: p.EventType(), At: t0.Add(time.Duration(i) * time.Second)}
		byPos[pos] = p
	}
	return evs, byPos
}

// TestFoldThen: a module's stream folded up to a moment, by position (the
// event at or before it) and by time, and where it was first defined.
func TestFoldThen(t *testing.T) {
	t0 := time.Date(2026, 9, 29, 22, 0, 0, 0, time.UTC)
	v2 := webSpec
	v2.Containers = []events.ContainerSpec{{Name: "web", Image: "forge:2"}}
	evs, byPos := stream(t0,
		events.ModuleDefined{Module: "forge", Spec: webSpec},                                                           // 10, t0
		events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: fullDigest, Upgrade: events.UpgradeManual}, // 20, +1s
		events.ModuleDeployed{Module: "forge", Builds: []events.Build{{Name: "forge/web", Digest: fullDigest}}},        // 30, +2s
		events.ModuleDefined{Module: "forge", Spec: v2},                                                                // 40, +3s
	)
	decode := func(ev events.Event) (events.Payload, error) { return byPos[ev.Position], nil }
	for _, c := range []struct {
		name     string
		to       Moment
		defined  bool
		image    string
		deployed string
		position uint64
	}{
		{"before anything", Moment{Position: 5}, false, "", "", 0},
		{"at the definition", Moment{Position: 10}, true, "forge:1", "", 10},
		{"between events: the one before", Moment{Position: 34}, true, "forge:1", fullDigest, 30},
		{"at the head", Moment{Position: 40}, true, "forge:2", fullDigest, 40},
		{"by time, exactly an event's", Moment{At: t0.Add(2 * time.Second)}, true, "forge:1", fullDigest, 30},
		{"by time, between", Moment{At: t0.Add(1500 * time.Millisecond)}, true, "forge:1", "", 20},
		{"by time, before", Moment{At: t0.Add(-time.Second)}, false, "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			th, err := FoldThen(evs, c.to, decode)
			if err != nil {
				t.Fatal(err)
			}
			image := ""
			if th.Module.Defined {
				image = th.Module.Spec.Containers[0].Image
			}
			if th.Module.Defined != c.defined || image != c.image || th.Module.Deployed["forge/web"] != c.deployed || th.Position != c.position {
				t.Errorf("defined %v image %q deployed %q at %d, want %v %q %q at %d",
					th.Module.Defined, image, th.Module.Deployed["forge/web"], th.Position, c.defined, c.image, c.deployed, c.position)
			}
			if th.First != 10 || !th.FirstAt.Equal(t0) {
				t.Errorf("first defined at %d %s, want 10 %s", th.First, th.FirstAt, t0)
			}
		})
	}
	// A type this build does not know advances the fold; one that does not
	// decode is an error.
	bad := func(ev events.Event) (events.Payload, error) { return nil, errors.New("garbled") }
	if _, err := FoldThen(evs, Moment{Position: 40}, bad); err == nil || !strings.Contains(err.Error(), "garbled") {
		t.Errorf("an undecodable event: %v", err)
	}
	unknown := func(ev events.Event) (events.Payload, error) {
		if ev.Position == 40 {
			return nil, events.ErrUnknownType
		}
		return byPos[ev.Position], nil
	}
	if th, err := FoldThen(evs, Moment{Position: 40}, unknown); err != nil || th.Position != 40 || th.Module.Spec.Containers[0].Image != "forge:1" {
		t.Errorf("an unknown type: %v, at %d", err, th.Position)
	}
}

// TestParseMoment: a whole number is a position, RFC 3339 a time (in
// UTC), anything else is refused naming both forms.
func TestParseMoment(t *testing.T) {
	for in, want := range map[string]Moment{
		"0":                         {},
		"41":                        {Position: 41},
		"2026-09-29T22:46:00Z":      {At: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)},
		"2026-09-30T00:46:00+02:00": {At: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)},
		"2026-09-29T22:46:00.5Z":    {At: time.Date(2026, 9, 29, 22, 46, 0, 5e8, time.UTC)},
	} {
		got, err := ParseMoment(in)
		if err != nil || !got.At.Equal(want.At) || got.Position != want.Position || got.At.Location() != time.UTC {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
		if again, err := ParseMoment(got.String()); err != nil || again != got {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), again, err)
		}
	}
	for _, in := range []string{"", "-1", "yesterday", "2026-09-29", "99999999999999999999999", "4 1"} {
		_, err := ParseMoment(in)
		var rej *Rejection
		if !errors.As(err, &rej) || rej.Code != CodeInvalid {
			t.Errorf("%q: %v, want an invalid rejection", in, err)
		}
	}
	if !strings.Contains(func() string { _, err := ParseMoment("yesterday"); return err.Error() }(), "RFC 3339") {
		t.Error("the refusal does not name RFC 3339")
	}
}

// TestDecideRevert: given the module now and as it stood then, the events
// a revert appends, or its refusal.
func TestDecideRevert(t *testing.T) {
	v2 := webSpec
	v2.Containers = []events.ContainerSpec{{Name: "web", Artifact: "forge/web", Env: map[string]string{"V": "2"}}}
	v1 := webSpec
	v1.Containers = []events.ContainerSpec{{Name: "web", Artifact: "forge/web", Env: map[string]string{"V": "1"}}}
	build := func(d string) []events.Build { return []events.Build{{Name: "forge/web", Digest: d}} }
	def := func(s events.ModuleSpec) events.ModuleDefined { return events.ModuleDefined{Module: "forge", Spec: s} }
	rec := func(d string) events.ArtifactRecorded {
		return events.ArtifactRecorded{Module: "forge", Name: "forge/web", Digest: d, Upgrade: events.UpgradeManual}
	}
	dep := func(d string, by string) events.ModuleDeployed {
		return events.ModuleDeployed{Module: "forge", Builds: build(d), By: by}
	}
	mod := func(ps ...events.Payload) Module { return given(ps...).Module }
	then := func(pos uint64, ps ...events.Payload) Then { return Then{Module: mod(ps...), Position: pos, First: 1} }
	// The history: v1, build A, v2, build B deployed.
	now := mod(def(v1), rec(fullDigest), dep(fullDigest, events.DeployedByFirstBuild), def(v2), rec(otherDigest), dep(otherDigest, events.DeployedByOperator))
	afterA := then(3, def(v1), rec(fullDigest), dep(fullDigest, events.DeployedByFirstBuild))
	revertA := RevertModule{Module: "forge", To: Moment{Position: 3}}
	removed := Module{Name: "forge", Builds: now.Builds, Artifacts: now.Artifacts, Version: now.Version} // as a removal could leave it
	tests := []struct {
		name   string
		s      State
		c      RevertModule
		want   []events.Payload
		reject string // a rejection code
		says   string // in its message
	}{
		{"definition and build back", State{Module: now, Then: afterA}, revertA,
			[]events.Payload{def(v1), dep(fullDigest, events.DeployedByRevert)}, "", ""},
		{"only the build differs", State{Module: mod(def(v1), rec(fullDigest), dep(fullDigest, "first-build"), rec(otherDigest), dep(otherDigest, "operator")), Then: afterA}, revertA,
			[]events.Payload{dep(fullDigest, events.DeployedByRevert)}, "", ""},
		{"only the definition differs", State{Module: mod(def(v1), rec(fullDigest), dep(fullDigest, "first-build"), def(v2)), Then: afterA}, revertA,
			[]events.Payload{def(v1)}, "", ""},
		{"already so: nothing", State{Module: mod(def(v1), rec(fullDigest), dep(fullDigest, "first-build"), rec(otherDigest)), Then: afterA}, revertA,
			nil, "", ""},
		{"then, no build ran: the definition alone", State{Module: now, Then: then(1, def(v1))}, revertA,
			[]events.Payload{def(v1)}, "", ""},
		{"removed since: defined again, its builds again", State{Module: removed, Then: afterA}, revertA,
			[]events.Payload{def(v1), dep(fullDigest, events.DeployedByRevert)}, "", ""},
		{"not yet defined then", State{Module: now, Then: Then{First: 7, FirstAt: time.Date(2026, 9, 29, 22, 0, 0, 0, time.UTC)}}, RevertModule{Module: "forge", To: Moment{Position: 2}},
			nil, CodeModuleUnknown, "not defined yet then (first defined at position 7, 2026-09-29T22:00:00Z)"},
		{"never defined", State{}, revertA, nil, CodeModuleUnknown, "never defined"},
		{"not defined then, defined before", State{Module: now, Then: Then{First: 1, Position: 5, Module: Module{Name: "forge"}}}, revertA,
			nil, CodeModuleUnknown, "not defined then"},
		{"a route another module claims now", State{Module: now, Then: afterA, Claims: map[string]string{"forge.zurag.be": "gitea"}}, revertA,
			nil, CodeRouteClaimed, "which module gitea now routes"},
		{"a definition today refuses", State{Module: now, Then: then(1, def(events.ModuleSpec{Containers: []events.ContainerSpec{{Name: "web"}}}))}, revertA,
			nil, CodeInvalid, "not valid now"},
		{"a bad name", State{}, RevertModule{Module: "Forge"}, nil, CodeInvalid, "module name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(tt.s, tt.c)
			if tt.reject != "" {
				var rej *Rejection
				if !errors.As(err, &rej) || rej.Code != tt.reject || !strings.Contains(rej.Msg, tt.says) {
					t.Fatalf("err %v, want %s naming %q", err, tt.reject, tt.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if n := UnchangedNote(revertA); n != "module forge is already as it was at 3" {
		t.Errorf("note %q", n)
	}
	if c := RevertCause(RevertModule{Module: "forge", To: Moment{At: time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)}}); c != "revert forge --to 2026-09-29T22:46:00Z" {
		t.Errorf("cause %q", c)
	}
}
