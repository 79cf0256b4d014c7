package nodeplan_test

import (
	"reflect"
	"testing"
	"time"

	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
)

// TestOptionChanges: every option of a container is a change the plan and
// why name field by field, in the module file's words, with what it was and
// what it becomes.
func TestOptionChanges(t *testing.T) {
	base := declaration.Container{Image: "a"}
	with := func(f func(*declaration.Container)) declaration.Container {
		c := base
		f(&c)
		return c
	}
	hc := &declaration.Healthcheck{Test: []string{"CMD-SHELL", "curl -f http://localhost:8080/"}, Interval: 10 * time.Second, Retries: 3}
	tests := []struct {
		name       string
		have, want declaration.Container
		out        []nodeplan.Change
	}{
		{"a health check added", base, with(func(c *declaration.Container) { c.Healthcheck = hc }), []nodeplan.Change{
			{Field: "healthcheck.test", To: "CMD-SHELL curl -f http://localhost:8080/"},
			{Field: "healthcheck.interval", To: "10s"},
			{Field: "healthcheck.retries", To: "3"}}},
		{"a health check's interval", with(func(c *declaration.Container) { c.Healthcheck = hc }),
			with(func(c *declaration.Container) { h := *hc; h.Interval = 5 * time.Second; c.Healthcheck = &h }),
			[]nodeplan.Change{{Field: "healthcheck.interval", From: "10s", To: "5s"}}},
		{"a publish moved to another host port", with(func(c *declaration.Container) {
			c.Publish = []declaration.Published{{HostIP: "10.1.0.3", HostPort: 8443, ContainerPort: 8080}}
		}), with(func(c *declaration.Container) {
			c.Publish = []declaration.Published{{HostPort: 9443, ContainerPort: 8080}}
		}), []nodeplan.Change{{Field: "publish.8080", From: "10.1.0.3:8443", To: "*:9443"}}},
		{"network, restart, limits", base, with(func(c *declaration.Container) {
			c.NetworkMode, c.Restart, c.Memory, c.NanoCPUs, c.StopGracePeriod = "host", "always", 512<<20, 1_500_000_000, 90*time.Second
		}), []nodeplan.Change{{Field: "network", To: "host"}, {Field: "restart", To: "always"}, {Field: "stop_grace_period", To: "1m30s"},
			{Field: "memory", To: "512m"}, {Field: "cpus", To: "1.5"}}},
		{"the rest", base, with(func(c *declaration.Container) {
			c.Entrypoint, c.User, c.CapAdd, c.Tmpfs, c.ReadOnly = []string{"/bin/sh", "-c"}, "999", []string{"NET_ADMIN"}, []string{"/tmp"}, true
			c.DependsOn = []declaration.Dependency{{Container: "db", Condition: "service_healthy"}}
		}), []nodeplan.Change{{Field: "entrypoint", To: "/bin/sh -c"}, {Field: "user", To: "999"}, {Field: "cap_add", To: "NET_ADMIN"},
			{Field: "tmpfs", To: "/tmp"}, {Field: "read_only", To: "true"}, {Field: "depends_on", To: "db (service_healthy)"}}},
		{"the update block", base, with(func(c *declaration.Container) {
			c.Rollout = &declaration.Rollout{Order: "start-first", MinHealthy: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
		}), []nodeplan.Change{{Field: "update.order", To: "start-first"}, {Field: "update.min_healthy", To: "10s"}, {Field: "update.healthy_deadline", To: "5m0s"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeplan.ContainerChanges(tt.have, tt.want); !reflect.DeepEqual(got, tt.out) {
				t.Errorf("ContainerChanges = %+v\nwant %+v", got, tt.out)
			}
			if declaration.Digest(tt.have) == declaration.Digest(tt.want) {
				t.Errorf("the digest does not cover the change: the container would not be replaced")
			}
			fields := make([]string, len(tt.out))
			for i, c := range tt.out {
				fields[i] = c.Field
			}
			h := declaration.Resource{Name: "web", Kind: declaration.KindContainer, Container: &tt.have}
			w := declaration.Resource{Name: "web", Kind: declaration.KindContainer, Container: &tt.want}
			if got := nodeplan.DeclaredChanges(h, w, fields); !reflect.DeepEqual(got, tt.out) {
				t.Errorf("DeclaredChanges (why) = %+v\nwant %+v", got, tt.out)
			}
		})
	}
}
