package prometheus_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"go.yaml.in/yaml/v3"

	"meshplane/agent"
	"meshplane/events/memstore"
	"meshplane/metrics"
	"meshplane/projections"
	"meshplane/sim"
)

// promtool returns promtool's path; missing, the test fails under CI=true
// and skips loudly elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("promtool is not on PATH under CI=true: run scripts/ensure-promtool.sh (Debian's prometheus package)")
	}
	t.Skip("SKIPPING the alerting rules' promtool tests: no promtool on PATH (run scripts/ensure-promtool.sh as root)")
	return ""
}

func run(t *testing.T, stdin []byte, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
}

// TestRules: the rules load, and their unit tests pass.
func TestRules(t *testing.T) {
	p := promtool(t)
	run(t, nil, p, "check", "rules", "alerts.yml")
	run(t, nil, p, "test", "rules", "alerts_test.yml")
}

// rules are the alerting rules of alerts.yml.
func rules(t *testing.T) []struct{ Alert, Expr string } {
	t.Helper()
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var out []struct{ Alert, Expr string }
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// seen is a controller's liveness over a simulated mesh: every node heard
// now, none unreachable.
type seen struct{ m *sim.Mesh }

func (s seen) Runner() *projections.Runner { return s.m.Runner }
func (s seen) Views() *projections.Set     { return s.m.Views }
func (s seen) LastSeen(string) (time.Time, bool, bool) {
	return time.Now(), false, true
}

type emptyOutbox struct{}

func (emptyOutbox) Pending() ([]agent.Report, error) { return nil, nil }

// scrapes gathers the controller's metrics (over a simulated mesh, so that
// every per-node series is there) and an agent's.
func scrapes(t *testing.T) map[string]*prometheus.Registry {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	mesh := sim.New(store)
	mesh.FollowContainers = true // the container series
	if err := mesh.Generate(ctx, sim.Workload{Nodes: 3, Modules: 3, Containers: 1, ModulesPerNode: 1, AdoptedEvery: 2}, 20); err != nil {
		t.Fatal(err)
	}
	if err := mesh.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	c := metrics.NewController(nil)
	c.SetVersion("test")
	c.Watch(seen{mesh}, store)
	return map[string]*prometheus.Registry{"controller": c.Registry(), "agent": metrics.NewAgent("n1", emptyOutbox{}).Registry()}
}

// TestRulesNameExportedMetrics: every meshplane_ metric a rule's expression
// names is one the controller or an agent exports, and each rule names one.
func TestRulesNameExportedMetrics(t *testing.T) {
	exported := map[string]bool{}
	for _, reg := range scrapes(t) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			exported[mf.GetName()] = true
		}
	}
	name := regexp.MustCompile(`\bmeshplane_[a-z0-9_]+`)
	rs := rules(t)
	if len(rs) < 6 {
		t.Fatalf("%d rules: want at least the six of the issue", len(rs))
	}
	for _, r := range rs {
		names := name.FindAllString(r.Expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: names no meshplane metric: %s", r.Alert, r.Expr)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s: %s is not a metric meshplane exports (have %v)", r.Alert, n, slices.Sorted(mapKeys(exported)))
			}
		}
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestScrapesPassPromtoolCheckMetrics: the controller's and an agent's
// scrapes pass `promtool check metrics` (Prometheus's naming lint).
func TestScrapesPassPromtoolCheckMetrics(t *testing.T) {
	p := promtool(t)
	for who, reg := range scrapes(t) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(who, func(t *testing.T) { run(t, b.Bytes(), p, "check", "metrics") })
	}
}
