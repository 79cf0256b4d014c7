package docker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"meshplane/agent"
	"meshplane/declaration"
	"meshplane/internal/freeport"
)

// get asks url until it answers 200 or within passes; it returns the body
// and how long it took.
func get(t *testing.T, url string, within time.Duration) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	cl := &http.Client{Timeout: 2 * time.Second}
	var last error
	for time.Since(start) < within {
		resp, err := cl.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return string(b), time.Since(start)
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: no answer within %s: %v", url, within, last)
	return "", 0
}

// TestPublishedServiceIsReachable: on the real engine, a container that
// publishes a port (the node's setting, bound to the node's address, here
// loopback) answers on that address and port from the host, and one on the
// node's network answers on the port it listens on; what the module file
// said of health, restart, limits and the rest is what the engine runs.
func TestPublishedServiceIsReachable(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r.Runtime, r.node)
	pub, hostNet := freeport.Port(t), freeport.Port(t)
	web := declaration.Container{
		Image:       testRef,
		Entrypoint:  []string{"/mesh-demo"},
		Mounts:      []declaration.Mount{{Source: "data", Target: "/data", Volume: true}, {Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true}},
		Publish:     []declaration.Published{{HostIP: "127.0.0.1", HostPort: pub, ContainerPort: 8080}},
		Healthcheck: &declaration.Healthcheck{Test: []string{"CMD", "/mesh-demo", "cat", "/etc/hosts"}, Interval: time.Second, Timeout: 2 * time.Second, Retries: 2},
		Restart:     "on-failure", StopGracePeriod: 3 * time.Second, Memory: 64 << 20, NanoCPUs: 500_000_000,
		User: "65534", CapAdd: []string{"NET_ADMIN"}, Tmpfs: []string{"/scratch"}, ReadOnly: true,
	}
	host := declaration.Container{
		Image:       testRef,
		Env:         []string{"MESH_DEMO_LISTEN=127.0.0.1:" + strconv.Itoa(hostNet)},
		NetworkMode: "host",
		Mounts:      []declaration.Mount{{Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true}},
	}
	o := apply(t, ag, decl(r.node, "1", hosts1, ctrRes("web", "forge", web), ctrRes("cron", "forge", host)))
	if len(o.Created) != 2 || len(o.Failed) != 0 {
		t.Fatalf("apply: %+v", o)
	}
	body, took := get(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", pub), 30*time.Second)
	if strings.TrimSpace(body) != "ok" {
		t.Fatalf("published port answers %q", body)
	}
	t.Logf("published 127.0.0.1:%d answered %s after the apply", pub, took.Round(time.Millisecond))
	if body, _ := get(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", hostNet), 30*time.Second); strings.TrimSpace(body) != "ok" {
		t.Fatalf("the host network's container answers %q", body)
	}

	in := r.inspect(t, "web")
	hc, cfg := in.HostConfig, in.Config
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"restart", string(hc.RestartPolicy.Name), "on-failure"},
		{"memory", hc.Memory, int64(64 << 20)},
		{"cpus", hc.NanoCPUs, int64(500_000_000)},
		{"user", cfg.User, "65534"},
		{"cap_add", strings.TrimPrefix(strings.Join(hc.CapAdd, ","), "CAP_"), "NET_ADMIN"}, // the engine may write CAP_
		{"tmpfs", fmt.Sprint(hc.Tmpfs), "map[/scratch:]"},
		{"read_only", hc.ReadonlyRootfs, true},
		{"stop timeout", fmt.Sprint(*cfg.StopTimeout), "3"},
		{"entrypoint", strings.Join(cfg.Entrypoint, " "), "/mesh-demo"},
		{"health test", strings.Join(cfg.Healthcheck.Test, " "), "CMD /mesh-demo cat /etc/hosts"},
		{"health interval", cfg.Healthcheck.Interval, time.Second},
		{"binding", fmt.Sprint(hc.PortBindings["8080/tcp"]), fmt.Sprintf("[{127.0.0.1 %d}]", pub)},
		{"host network", string(r.inspect(t, "cron").HostConfig.NetworkMode), "host"},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s: the engine runs %v, want %v", c.what, c.got, c.want)
		}
	}
	if v, err := eng.VolumeInspect(context.Background(), r.prefix+"data"); err != nil || v.Labels[agent.LabelNode] != r.node {
		t.Errorf("named volume: %+v, %v", v, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		in := r.inspect(t, "web")
		if in.State.Health != nil && in.State.Health.Status == container.Healthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web is not healthy within 30 s: %+v", in.State.Health)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The same declaration again changes nothing: the options are read back
	// from the spec label, not from the engine's defaults.
	noChange(t, apply(t, ag, decl(r.node, "2", hosts1, ctrRes("web", "forge", web), ctrRes("cron", "forge", host))))
}

// TestDependsOnWaitsForHealth: on the real engine, a container that depends
// on another as service_healthy starts once the engine calls that one
// healthy; one whose dependency turns unhealthy is not started, and its
// failure names the dependency and the probe.
func TestDependsOnWaitsForHealth(t *testing.T) {
	r := newRT(t)
	ag := newAgent(t, r.Runtime, r.node)
	db := func(test ...string) declaration.Container {
		return declaration.Container{Image: testRef, Healthcheck: &declaration.Healthcheck{Test: test, Interval: 500 * time.Millisecond, Retries: 1}}
	}
	app := declaration.Container{Image: testRef, Command: []string{"app"}, DependsOn: []declaration.Dependency{{Container: "db", Condition: "service_healthy"}}}
	// "app" sorts before "db": only depends_on puts db first.
	o := apply(t, ag, decl(r.node, "1", hosts1, ctrRes("app", "forge", app), ctrRes("db", "forge", db("CMD", "/mesh-demo", "cat", "/etc/hostname"))))
	if len(o.Created) != 2 || len(o.Failed) != 0 {
		t.Fatalf("apply: %+v", o)
	}
	dbIn, appIn := r.inspect(t, "db"), r.inspect(t, "app")
	var healthyAt time.Time
	for _, l := range dbIn.State.Health.Log {
		if l.ExitCode == 0 {
			healthyAt = l.End
			break
		}
	}
	started, _ := time.Parse(time.RFC3339Nano, appIn.State.StartedAt)
	if healthyAt.IsZero() || started.Before(healthyAt) {
		t.Fatalf("app started at %s, db's first passing check ended at %s: app did not wait", started, healthyAt)
	}

	app.Command = []string{"app", "v2"} // replaced with db, so started again after it
	o = apply(t, ag, decl(r.node, "2", hosts1, ctrRes("app", "forge", app), ctrRes("db", "forge", db("CMD", "/mesh-demo", "cat", "/no/such/file"))))
	if len(o.Failed) != 1 || o.Failed[0].Name != "app" || !strings.Contains(o.Failed[0].Error, "depends on db being healthy") ||
		!strings.Contains(o.Failed[0].Error, "no such file") {
		t.Fatalf("apply with an unhealthy db: %+v", o)
	}
}
