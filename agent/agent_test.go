package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/agent"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
	"meshplane/events"
)

// sink is a delivery target that can be cut, and records each report
// delivered by apply id, as an idempotent append would.
type sink struct {
	mu        sync.Mutex
	cut       error
	delivered []agent.Report // in delivery order, duplicates included
}

func (s *sink) deliver(_ context.Context, r agent.Report) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut != nil {
		return s.cut
	}
	s.delivered = append(s.delivered, r)
	return nil
}

func (s *sink) setCut(err error) { s.mu.Lock(); s.cut = err; s.mu.Unlock() }

func (s *sink) reports() []agent.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.delivered)
}

// ids returns a deterministic UUIDv7 source.
func ids() func() (uuid.UUID, error) {
	var mu sync.Mutex
	n := 0
	return func() (uuid.UUID, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		var u uuid.UUID
		u[0], u[15] = 0x01, byte(n)
		u[14] = byte(n >> 8)
		u[6] = 0x70 // version 7
		u[8] = 0x80 // RFC 4122 variant
		return u, nil
	}
}

var epoch = time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)

type fixture struct {
	rt   *simruntime.Runtime
	box  *agent.Outbox
	sink *sink
	ag   *agent.Agent
}

func newFixture(t *testing.T) *fixture { return newBenchFixture(t) }

func newBenchFixture(t testing.TB) *fixture {
	t.Helper()
	fx := &fixture{rt: simruntime.New(), box: agent.NewMemOutbox(), sink: &sink{}}
	fx.ag = fx.agent(t, fx.box)
	return fx
}

func (fx *fixture) agent(t testing.TB, box *agent.Outbox) *agent.Agent {
	t.Helper()
	tick := 0
	ag, err := agent.New(agent.Config{
		Node: "novox", Runtime: fx.rt, Outbox: box, Deliver: fx.sink.deliver,
		Now:   func() time.Time { tick++; return epoch.Add(time.Duration(tick) * time.Minute) },
		NewID: ids(),
	})
	if err != nil {
		t.Fatalf("new agent: %v", err)
	}
	return ag
}

func (fx *fixture) apply(t *testing.T, d declaration.Declaration) agent.Report {
	t.Helper()
	r, err := fx.ag.Apply(context.Background(), d)
	if err != nil {
		t.Fatalf("apply %s: %v", d.ID, err)
	}
	return r
}

func web(mount string) declaration.Container {
	return declaration.Container{
		Image: "127.0.0.1:5000/forge/web@sha256:ab12", Env: []string{"STORE_PORT=6852"},
		Mounts: []declaration.Mount{{Source: mount, Target: "/data"}, {Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true}},
	}
}

func forge(mount string) []declaration.Resource {
	return []declaration.Resource{
		ctr("web", "forge", web(mount)),
		dir("forge-data", "forge", mount, 0o700),
		file("forge-conf", "forge", "/etc/forge/app.ini", "[server]\nport=3000\n", 0o640),
	}
}

func TestApplyTwiceReportsNoChanges(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/1", append(forge("/srv/forge"), routeProxy()...)...)
	first := fx.apply(t, d)
	if got, want := first.Summary(), "applied 7 resource(s)"; got != want {
		t.Fatalf("first apply reads %q, want %q", got, want)
	}
	if len(first.Outcome.Created) != 7 || first.Outcome.Unchanged != 0 {
		t.Fatalf("first apply: created %v, unchanged %d", first.Outcome.Created, first.Outcome.Unchanged)
	}
	second := fx.apply(t, d)
	o := second.Outcome
	if got, want := second.Summary(), "applied 7 resource(s)"; got != want {
		t.Fatalf("second apply reads %q, want %q", got, want)
	}
	if o.Changes() != 0 || len(o.Updated) != 0 || len(o.Held) != 0 || len(o.Failed) != 0 || o.Unchanged != 7 || o.Sent != 7 {
		t.Fatalf("second apply is not a no-op: %+v", o)
	}
	if second.Outcome.ApplyID == first.Outcome.ApplyID {
		t.Fatal("two applies share an apply id")
	}
	if fx.rt.Creates("web") != 1 {
		t.Fatalf("web created %d times", fx.rt.Creates("web"))
	}
}

func TestApplyReportFields(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/7", forge("/srv/forge")...)
	d.Correlation = "push-42"
	r := fx.apply(t, d)
	o := r.Outcome
	if o.Node != "novox" || o.Declaration != "novox/7" || o.Digest != d.Digest || r.Correlation != "push-42" {
		t.Fatalf("report names %s %s %s %s", o.Node, o.Declaration, o.Digest, r.Correlation)
	}
	if id, err := uuid.Parse(o.ApplyID); err != nil || id.Version() != 7 {
		t.Fatalf("apply id %q is not a UUIDv7 (%v)", o.ApplyID, err)
	}
	if !r.AppliedAt.After(epoch) || r.Kept || r.Attempts != 0 {
		t.Fatalf("applied at %v, kept %v, attempts %d", r.AppliedAt, r.Kept, r.Attempts)
	}
	if !slices.Equal(o.Created, []string{"forge-conf", "forge-data", "web"}) {
		t.Fatalf("created %v, want sorted names", o.Created)
	}
	if got := fx.sink.reports(); len(got) != 1 || got[0].Outcome.ApplyID != o.ApplyID {
		t.Fatalf("delivered %d reports", len(got))
	}
	if p, err := fx.ag.Pending(); err != nil || len(p) != 0 {
		t.Fatalf("pending after delivery: %d (%v)", len(p), err)
	}
	spec, ok := fx.rt.Container("web")
	if !ok || !slices.Contains(spec.Env, "STORE_PORT=6852") || spec.Image != "127.0.0.1:5000/forge/web@sha256:ab12" {
		t.Fatalf("web runs %+v", spec)
	}
	if content, mode, ok := fx.rt.File("/etc/forge/app.ini"); !ok || mode != 0o640 || string(content) != "[server]\nport=3000\n" {
		t.Fatalf("forge conf %q %o %v", content, mode, ok)
	}
	if mode, ok := fx.rt.Dir("/srv/forge"); !ok || mode != 0o700 {
		t.Fatalf("forge data %o %v", mode, ok)
	}
}

func TestChangedMountPathRecreatesAndSaysSo(t *testing.T) {
	fx := newFixture(t)
	fx.apply(t, decl("novox/1", forge("/srv/forge")...))
	r := fx.apply(t, decl("novox/2", forge("/var/lib/forge")...))
	want := []events.Replaced{{Name: "web", Fields: []string{"mounts./data"}}}
	if !equalReplaced(r.Outcome.Replaced, want) {
		t.Fatalf("replaced %+v, want %+v", r.Outcome.Replaced, want)
	}
	if !slices.Equal(r.Outcome.Created, []string{"forge-data"}) {
		t.Fatalf("created %v, want the new data directory", r.Outcome.Created)
	}
	if fx.rt.Creates("web") != 2 {
		t.Fatalf("web created %d times, want 2", fx.rt.Creates("web"))
	}
	if spec, _ := fx.rt.Container("web"); spec.Mounts[0].Source != "/var/lib/forge" {
		t.Fatalf("web mounts %+v", spec.Mounts)
	}
	// The old directory is data: never removed.
	if _, ok := fx.rt.Dir("/srv/forge"); !ok {
		t.Fatal("old data directory removed")
	}
}

func equalReplaced(a, b []events.Replaced) bool {
	return slices.EqualFunc(a, b, func(x, y events.Replaced) bool { return x.Name == y.Name && slices.Equal(x.Fields, y.Fields) })
}

func TestHostsChangeIsNotCounted(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/1", forge("/srv/forge")...)
	fx.apply(t, d)
	d2 := d
	d2.ID, d2.Hosts = "novox/2", d.Hosts+"10.1.0.4 photos.zurag.be\n"
	r := fx.apply(t, d2)
	if got, want := r.Summary(), "applied 3 resource(s)"; got != want || r.Outcome.Changes() != 0 || r.Outcome.Unchanged != 3 || len(r.Outcome.Updated) != 0 {
		t.Fatalf("roster change reported as %q %+v", got, r.Outcome)
	}
	if content, _, _ := fx.rt.File(declaration.HostsPath); string(content) != d2.Hosts {
		t.Fatalf("hosts file %q, want %q", content, d2.Hosts)
	}
	if fx.rt.Creates("web") != 1 {
		t.Fatal("a roster change recreated a container")
	}
}

func TestDirectoryModeUpdatedOnce(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/1", dir("vault", "vault", "/var/lib/vault", 0o700))
	if err := fx.rt.MakeDirectory("/var/lib/vault", 0o755); err != nil {
		t.Fatal(err)
	}
	r := fx.apply(t, d)
	if !equalReplaced(r.Outcome.Updated, []events.Replaced{{Name: "vault", Fields: []string{"mode"}}}) {
		t.Fatalf("updated %+v", r.Outcome.Updated)
	}
	r = fx.apply(t, d)
	if len(r.Outcome.Updated) != 0 || r.Outcome.Unchanged != 1 {
		t.Fatalf("a directory already 700 reported as %+v", r.Outcome)
	}
}

const (
	holdCA  = "would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken"
	holdDir = "found on this adopted node; not touched until route-proxy is taken"
)

func TestHolds(t *testing.T) {
	tests := []struct {
		name    string
		outside uint32 // mode of the found directory; 0: none
		taken   bool
		summary string
		held    []events.Held
		running []string
	}{
		{"found and matching: directory and ca held (the worked count of docs/scenario-steps.md)", 0o755, false,
			"applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)",
			[]events.Held{{Name: "ca", Module: "route-proxy", Reason: holdCA}, {Name: "route-proxy-ca", Module: "route-proxy", Reason: holdDir}},
			[]string{"acme", "proxy"}},
		{"found at another mode: directory and ca held", 0o700, false,
			"applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)",
			[]events.Held{{Name: "ca", Module: "route-proxy", Reason: holdCA}, {Name: "route-proxy-ca", Module: "route-proxy", Reason: holdDir}},
			[]string{"acme", "proxy"}},
		{"taken: nothing held", 0o700, true, "applied 4 resource(s)", nil, []string{"acme", "ca", "proxy"}},
		{"nothing found: nothing held", 0, false, "applied 4 resource(s)", nil, []string{"acme", "ca", "proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			if tt.outside != 0 {
				if err := fx.rt.MakeDirectory(caPath, tt.outside); err != nil {
					t.Fatal(err)
				}
			}
			var taken []string
			if tt.taken {
				taken = []string{"route-proxy"}
			}
			d := adopted(decl("novox/1", routeProxy()...), taken...)
			for pass := 1; pass <= 2; pass++ { // a hold is a line in every report
				r := fx.apply(t, d)
				if got := r.Summary(); got != tt.summary {
					t.Fatalf("pass %d reads %q, want %q", pass, got, tt.summary)
				}
				if !slices.Equal(r.Outcome.Held, tt.held) && !(len(tt.held) == 0 && len(r.Outcome.Held) == 0) {
					t.Fatalf("pass %d held %+v, want %+v", pass, r.Outcome.Held, tt.held)
				}
			}
			if got := fx.rt.Names(); !slices.Equal(got, tt.running) {
				t.Fatalf("running %v, want %v", got, tt.running)
			}
			if tt.outside != 0 && !tt.taken {
				if mode, _ := fx.rt.Dir(caPath); mode != tt.outside {
					t.Fatalf("found directory touched: mode %o", mode)
				}
			}
		})
	}
}

// Seed 002: assign, take, release, re-assign without take: the leftovers
// are found again and held, and the report says so.
func TestReassignAfterReleaseFindsLeftovers(t *testing.T) {
	fx := newFixture(t)
	rp := routeProxy()
	rp[3] = dir("route-proxy-ca", "route-proxy", caPath, 0o700)
	steps := []struct {
		d       declaration.Declaration
		summary string
	}{
		{adopted(decl("novox/1", rp...), "route-proxy"), "applied 4 resource(s)"},
		{adopted(decl("novox/2", rp...)), "applied 4 resource(s)"}, // made by the agent: not found
		{adopted(decl("novox/3")), "applied 0 resource(s)"},        // released
		{adopted(decl("novox/4", rp...)), "applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)"},
		{adopted(decl("novox/5", rp...), "route-proxy"), "applied 4 resource(s)"},
	}
	for _, s := range steps {
		if s.d.ID == "novox/4" {
			// Something outside the mesh changed the leftover meanwhile.
			if err := fx.rt.Chmod(context.Background(), caPath, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		r := fx.apply(t, s.d)
		if got := r.Summary(); got != s.summary {
			t.Fatalf("%s reads %q, want %q (state %v)", s.d.ID, got, s.summary, fx.ag.State())
		}
		if s.d.ID == "novox/3" && !slices.Equal(r.Outcome.Removed, []string{"acme", "ca", "proxy"}) {
			t.Fatalf("release removed %v", r.Outcome.Removed)
		}
	}
}

func TestFailingResource(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/1", forge("/srv/forge")...)
	fx.rt.FailNext(simruntime.OpCreate, 1, errors.New("daemon busy"))
	r := fx.apply(t, d)
	if got, want := r.Summary(), "applied 2 resource(s), 1 failed"; got != want {
		t.Fatalf("reads %q, want %q", got, want)
	}
	if len(r.Outcome.Failed) != 1 || r.Outcome.Failed[0].Name != "web" ||
		!strings.Contains(r.Outcome.Failed[0].Error, "create web") || !strings.Contains(r.Outcome.Failed[0].Error, "daemon busy") {
		t.Fatalf("failed %+v", r.Outcome.Failed)
	}
	if !slices.Equal(r.Outcome.Created, []string{"forge-conf", "forge-data"}) {
		t.Fatalf("the rest not applied: created %v", r.Outcome.Created)
	}
	r = fx.apply(t, d)
	if got := r.Summary(); got != "applied 3 resource(s)" || !slices.Equal(r.Outcome.Created, []string{"web"}) {
		t.Fatalf("retry reads %q, created %v", got, r.Outcome.Created)
	}
}

func TestRemovedResource(t *testing.T) {
	fx := newFixture(t)
	fx.apply(t, decl("novox/1", append(forge("/srv/forge"), ctr("old", "legacy", image("legacy:1")))...))
	r := fx.apply(t, decl("novox/2", forge("/srv/forge")...))
	if !slices.Equal(r.Outcome.Removed, []string{"old"}) || r.Outcome.Sent != 3 || r.Summary() != "applied 3 resource(s)" {
		t.Fatalf("removal reported as %q %+v", r.Summary(), r.Outcome)
	}
	if _, ok := fx.rt.Container("old"); ok {
		t.Fatal("old still runs")
	}
}

func TestOutsideRemovalIsRecreated(t *testing.T) {
	fx := newFixture(t)
	d := decl("novox/1", forge("/srv/forge")...)
	fx.apply(t, d)
	fx.rt.RemoveAllContainers()
	r := fx.apply(t, d)
	if !slices.Equal(r.Outcome.Created, []string{"web"}) || r.Outcome.Unchanged != 2 {
		t.Fatalf("after outside removal: %+v", r.Outcome)
	}
}

func TestApplyRefusals(t *testing.T) {
	tests := []struct {
		name  string
		d     declaration.Declaration
		fault string
		want  error
	}{
		{"another node", func() declaration.Declaration { d := decl("g14/1"); d.Node = "g14"; return d }(), "", agent.ErrInvalid},
		{"no id", decl(""), "", agent.ErrInvalid},
		{"duplicate names", decl("novox/1", dir("x", "m", "/a", 0o755), dir("x", "m", "/b", 0o755)), "", agent.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			if tt.fault != "" {
				fx.rt.FailNext(tt.fault, 1, nil)
			}
			_, err := fx.ag.Apply(context.Background(), tt.d)
			if !errors.Is(err, tt.want) {
				t.Fatalf("apply: %v, want %v", err, tt.want)
			}
			if p, _ := fx.ag.Pending(); len(p) != 0 || len(fx.sink.reports()) != 0 || len(fx.rt.Names()) != 0 {
				t.Fatalf("a refused apply left a report or containers")
			}
		})
	}
}

// An engine that cannot be asked is no silent success and no silent
// absence: the apply is reported, every resource failed with the reason,
// nothing done; the next pass goes on as usual.
func TestApplyUnobservedReportsEveryResourceFailed(t *testing.T) {
	for _, op := range []string{simruntime.OpList, simruntime.OpStat} {
		t.Run(op, func(t *testing.T) {
			fx := newFixture(t)
			d := decl("novox/1", forge("/srv/forge")...)
			fx.rt.FailNext(op, 1, nil)
			r, err := fx.ag.Apply(context.Background(), d)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			o := r.Outcome
			if o.Applied != 0 || len(o.Failed) != len(d.Resources) || len(o.Created) != 0 || len(fx.rt.Names()) != 0 {
				t.Fatalf("unobserved apply: %+v, containers %v", o, fx.rt.Names())
			}
			for _, f := range o.Failed {
				if !strings.Contains(f.Error, "could not be observed") {
					t.Fatalf("failed %s: %q does not say why", f.Name, f.Error)
				}
			}
			if got := r.Summary(); got != fmt.Sprintf("applied 0 resource(s), %d failed", len(d.Resources)) {
				t.Fatalf("summary %q", got)
			}
			if rs := fx.sink.reports(); len(rs) != 1 {
				t.Fatalf("%d reports delivered, want 1", len(rs))
			}
			if r := fx.apply(t, d); r.Outcome.Applied != len(d.Resources) || len(r.Outcome.Failed) != 0 {
				t.Fatalf("the next pass: %+v", r.Outcome)
			}
		})
	}
}

func TestNewRequiresEverything(t *testing.T) {
	full := agent.Config{Node: "n", Runtime: simruntime.New(), Outbox: agent.NewMemOutbox(),
		Deliver: (&sink{}).deliver, Now: time.Now, NewID: uuid.NewV7}
	edits := map[string]func(*agent.Config){
		"node": func(c *agent.Config) { c.Node = "" }, "runtime": func(c *agent.Config) { c.Runtime = nil },
		"outbox": func(c *agent.Config) { c.Outbox = nil }, "deliver": func(c *agent.Config) { c.Deliver = nil },
		"clock": func(c *agent.Config) { c.Now = nil }, "id source": func(c *agent.Config) { c.NewID = nil },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			c := full
			edit(&c)
			if _, err := agent.New(c); err == nil {
				t.Fatalf("New without %s succeeded", name)
			}
		})
	}
	if _, err := agent.New(full); err != nil {
		t.Fatalf("New with everything: %v", err)
	}
}

// A quiet apply's report is compact on the wire (Report.Wire): a held list
// the agent reported before in full is named by that report's apply id, and
// the digest is left out while the declaration stays the same; the report
// Apply returns, and its summary, stay whole. The agent remembers across a
// restart what it may name.
func TestQuietReportsAreCompact(t *testing.T) {
	fx := newFixture(t)
	if err := fx.rt.MakeDirectory(caPath, 0o700); err != nil {
		t.Fatal(err)
	}
	d1 := adopted(decl("novox/1", routeProxy()...))
	const line = "applied 2 resource(s), 2 held for untaken modules (route-proxy: 2)"
	first := fx.apply(t, d1)
	steps := []struct {
		name      string
		d         declaration.Declaration
		restart   bool
		heldSince string // "": the held list in full
		digest    bool   // the digest on the wire
		summary   string
	}{
		{"again: held list named, digest left out", d1, false, first.Outcome.ApplyID, false, line},
		{"after a restart, the same", d1, true, first.Outcome.ApplyID, false, line},
		{"a new declaration, the same holds: digest sent", adopted(decl("novox/2", append(routeProxy(), dir("logs", "logs", "/var/log/x", 0o755))...)), false, first.Outcome.ApplyID, true,
			"applied 3 resource(s), 2 held for untaken modules (route-proxy: 2)"},
		{"taken: nothing held, no list", adopted(decl("novox/3", routeProxy()...), "route-proxy"), false, "", true, "applied 4 resource(s)"},
	}
	if first.HeldSince != "" || len(first.Wire().Held) != 2 || first.Wire().Digest == "" {
		t.Fatalf("first report on the wire: %+v", first.Wire())
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.restart {
				fx.ag = fx.agent(t, fx.box)
			}
			r := fx.apply(t, st.d)
			w := r.Wire()
			if r.Summary() != st.summary {
				t.Fatalf("summary %q, want %q", r.Summary(), st.summary)
			}
			if w.HeldSince != st.heldSince || (st.heldSince != "" && len(w.Held) != 0) {
				t.Fatalf("on the wire: held %v, held_since %q; want held_since %q", w.Held, w.HeldSince, st.heldSince)
			}
			if (w.Digest != "") != st.digest || r.Outcome.Digest == "" {
				t.Fatalf("on the wire: digest %q (want one: %v); outcome digest %q", w.Digest, st.digest, r.Outcome.Digest)
			}
			b, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(":[]")) || bytes.Contains(b, []byte(":null")) {
				t.Fatalf("an empty list on the wire: %s", b)
			}
		})
	}
}
