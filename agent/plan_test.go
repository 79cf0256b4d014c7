package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"meshplane/agent"
	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
)

type want struct {
	name   string
	action agent.Action
	fields []string
	reason string // checked when not empty
}

func running(rs ...declaration.Resource) map[string]agent.Container {
	m := map[string]agent.Container{}
	for _, r := range rs {
		m[r.Name] = agent.Container{Name: r.Name, Module: r.Module, Digest: r.Digest, Spec: *r.Container}
	}
	return m
}

func paths(kv ...any) map[string]agent.PathState {
	m := map[string]agent.PathState{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(agent.PathState)
	}
	return m
}

func d(mode uint32) agent.PathState {
	return agent.PathState{PathInfo: agent.PathInfo{Exists: true, Dir: true, Mode: mode}}
}

func f(content string, mode uint32) agent.PathState {
	return agent.PathState{PathInfo: agent.PathInfo{Exists: true, Mode: mode, Size: int64(len(content))}, Content: []byte(content)}
}

func hostsOK(d declaration.Declaration) agent.PathState { return f(d.Hosts, agent.HostsMode) }

func TestDiff(t *testing.T) {
	web := declaration.Container{
		Image:   "reg:5000/forge/web@sha256:ab12",
		Command: []string{"serve"},
		Env:     []string{"A=1", "B=2"},
		Mounts:  []declaration.Mount{{Source: "/srv/forge", Target: "/data"}, {Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true}},
	}
	with := func(c declaration.Container, edit func(*declaration.Container)) declaration.Container {
		c.Env = slices.Clone(c.Env)
		c.Mounts = slices.Clone(c.Mounts)
		c.Command = slices.Clone(c.Command)
		edit(&c)
		return c
	}
	base := decl("novox/1", ctr("web", "forge", web))
	holdDir := "found on this adopted node; not touched until route-proxy is taken"
	holdCA := "would mount /var/lib/route-proxy/ca, found on this adopted node; not run until route-proxy is taken"
	holdFile := "under /var/lib/route-proxy/ca, found on this adopted node; not written until route-proxy is taken"

	tests := []struct {
		name      string
		d         declaration.Declaration
		obs       agent.Observed
		st        agent.State
		want      []want
		hostWrite bool
	}{
		{
			name:      "empty node: create everything, write hosts",
			d:         decl("novox/1", ctr("web", "forge", web), dir("data", "forge", "/srv/forge", 0o700), file("conf", "forge", "/etc/forge.ini", "x=1\n", 0o640)),
			obs:       agent.Observed{},
			want:      []want{{"conf", agent.Create, nil, ""}, {"data", agent.Create, nil, ""}, {"web", agent.Create, nil, ""}},
			hostWrite: true,
		},
		{
			name: "same digest and spec: unchanged (rule 4)",
			d:    base,
			obs:  agent.Observed{Containers: running(base.Resources...), Paths: paths(declaration.HostsPath, hostsOK(base))},
			want: []want{{"web", agent.Unchanged, nil, ""}},
		},
		{
			name:      "hosts differ: written in place, container unchanged (rule 2)",
			d:         base,
			obs:       agent.Observed{Containers: running(base.Resources...), Paths: paths(declaration.HostsPath, f("old roster\n", 0o644))},
			want:      []want{{"web", agent.Unchanged, nil, ""}},
			hostWrite: true,
		},
		{
			name:      "hosts at another mode: rewritten",
			d:         base,
			obs:       agent.Observed{Containers: running(base.Resources...), Paths: paths(declaration.HostsPath, f(base.Hosts, 0o600))},
			want:      []want{{"web", agent.Unchanged, nil, ""}},
			hostWrite: true,
		},
		{
			name: "image changed: replaced naming image",
			d:    decl("novox/2", ctr("web", "forge", with(web, func(c *declaration.Container) { c.Image = "reg:5000/forge/web@sha256:cd34" }))),
			obs:  agent.Observed{Containers: running(base.Resources...), Paths: paths(declaration.HostsPath, hostsOK(base))},
			want: []want{{"web", agent.Replace, []string{"image"}, "changed: image"}},
		},
		{
			name: "env changed, added, removed: one field per key",
			d:    decl("novox/2", ctr("web", "forge", with(web, func(c *declaration.Container) { c.Env = []string{"A=9", "C=3"} }))),
			obs:  agent.Observed{Containers: running(base.Resources...), Paths: paths(declaration.HostsPath, hostsOK(base))},
			want: []want{{"web", agent.Replace, []string{"env.A", "env.B", "env.C"}, ""}},
		},
		{
			name: "mount path changed: replaced naming the mount (rule 5)",
			d:    decl("novox/2", ctr("web", "forge", with(web, func(c *declaration.Container) { c.Mounts[0].Source = "/var/lib/forge" }))),
			obs:  agent.Observed{Containers: running(base.Resources...), Paths: paths(declaration.HostsPath, hostsOK(base))},
			want: []want{{"web", agent.Replace, []string{"mounts./data"}, "changed: mounts./data"}},
		},
		{
			name: "command and networks changed",
			d: decl("novox/2", ctr("web", "forge", with(web, func(c *declaration.Container) {
				c.Command = []string{"serve", "--debug"}
				c.Networks = []string{"mesh"}
			}))),
			obs:  agent.Observed{Containers: running(base.Resources...), Paths: paths(declaration.HostsPath, hostsOK(base))},
			want: []want{{"web", agent.Replace, []string{"command", "networks"}, ""}},
		},
		{
			name: "same spec, other digest label: replaced naming digest",
			d:    base,
			obs: agent.Observed{Containers: map[string]agent.Container{"web": {Name: "web", Module: "forge", Digest: "sha256:old", Spec: web}},
				Paths: paths(declaration.HostsPath, hostsOK(base))},
			want: []want{{"web", agent.Replace, []string{"digest"}, ""}},
		},
		{
			name: "directory already 700: unchanged, not 755 to 700 (rule 4)",
			d:    decl("novox/1", dir("data", "forge", "/srv/forge", 0o700)),
			obs:  agent.Observed{Paths: paths("/srv/forge", d(0o700))},
			want: []want{{"data", agent.Unchanged, nil, ""}}, hostWrite: true,
		},
		{
			name: "directory at 755 declared 700: updated in place",
			d:    decl("novox/1", dir("data", "forge", "/srv/forge", 0o700)),
			obs:  agent.Observed{Paths: paths("/srv/forge", d(0o755))},
			want: []want{{"data", agent.Update, []string{"mode"}, "mode 755 to 700"}}, hostWrite: true,
		},
		{
			name: "directory mode 0 means 755",
			d:    decl("novox/1", dir("data", "forge", "/srv/forge", 0)),
			obs:  agent.Observed{Paths: paths("/srv/forge", d(0o755))},
			want: []want{{"data", agent.Unchanged, nil, ""}}, hostWrite: true,
		},
		{
			name: "file byte-identical at its mode: unchanged",
			d:    decl("novox/1", file("conf", "forge", "/etc/forge.ini", "x=1\n", 0o640)),
			obs:  agent.Observed{Paths: paths("/etc/forge.ini", f("x=1\n", 0o640))},
			want: []want{{"conf", agent.Unchanged, nil, ""}}, hostWrite: true,
		},
		{
			name: "file content and mode differ: updated in place",
			d:    decl("novox/1", file("conf", "forge", "/etc/forge.ini", "x=1\n", 0o640)),
			obs:  agent.Observed{Paths: paths("/etc/forge.ini", f("x=1", 0o644))},
			want: []want{{"conf", agent.Update, []string{"content", "mode"}, ""}}, hostWrite: true,
		},
		{
			name: "adopted, untaken, found matching directory: held, never applied; container mounting it held",
			d:    adopted(decl("novox/1", routeProxy()...)),
			obs:  agent.Observed{Paths: paths(caPath, d(0o755))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Hold, nil, holdCA},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Hold, nil, holdDir},
			},
			hostWrite: true,
		},
		{
			name: "adopted, untaken, found directory that is a file: held, not rejected",
			d:    adopted(decl("novox/1", routeProxy()...)),
			obs:  agent.Observed{Paths: paths(caPath, f("x", 0o644))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Hold, nil, holdCA},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Hold, nil, holdDir},
			},
			hostWrite: true,
		},
		{
			name: "adopted, untaken: a file under a found directory held, matching or not, whatever its module",
			d: adopted(decl("novox/1", append(routeProxy(),
				file("ca-conf", "route-proxy", caPath+"/ca.json", "{}\n", 0o600),
				file("ca-root", "route-proxy", caPath+"/certs/root.pem", "pem\n", 0o644),
				file("stray", "forge", caPath+"/forge.ini", "x\n", 0o644),
				file("beside", "route-proxy", "/var/lib/route-proxy/cab", "y\n", 0o644),
			)...), "forge"),
			obs: agent.Observed{Paths: paths(caPath, d(0o755), caPath+"/ca.json", f("{}\n", 0o600), "/var/lib/route-proxy/cab", f("y\n", 0o644))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"beside", agent.Unchanged, nil, ""},
				{"ca", agent.Hold, nil, holdCA},
				{"ca-conf", agent.Hold, nil, holdFile},
				{"ca-root", agent.Hold, nil, holdFile},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Hold, nil, holdDir},
				{"stray", agent.Hold, nil, holdFile},
			},
			hostWrite: true,
		},
		{
			name: "adopted, untaken: a container mounting a path under a found directory held, whatever its module",
			d: adopted(decl("novox/1", append(routeProxy(),
				ctr("signer", "route-proxy", image("signer:1", caPath+"/keys")),
				ctr("backup", "forge", image("restic:0.17", "/var/lib/route-proxy")),
				ctr("reader", "forge", image("reader:1", caPath+"/keys/public")),
				dir("route-proxy-keys", "route-proxy", caPath+"/keys", 0o700),
			)...), "forge"),
			obs: agent.Observed{Paths: paths(caPath, d(0o755))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"backup", agent.Create, nil, ""}, // mounts the parent: nothing found there
				{"ca", agent.Hold, nil, holdCA},
				{"proxy", agent.Create, nil, ""},
				{"reader", agent.Hold, nil, "would mount " + caPath + "/keys/public, found on this adopted node; not run until route-proxy is taken"},
				{"route-proxy-ca", agent.Hold, nil, holdDir},
				{"route-proxy-keys", agent.Hold, nil, "under " + caPath + ", found on this adopted node; not made until route-proxy is taken"},
				{"signer", agent.Hold, nil, "would mount " + caPath + "/keys, found on this adopted node; not run until route-proxy is taken"},
			},
			hostWrite: true,
		},
		{
			name: "adopted, taken: a found matching directory and the files under it are the mesh's",
			d: adopted(decl("novox/1", append(routeProxy(),
				file("ca-conf", "route-proxy", caPath+"/ca.json", "{}\n", 0o600),
			)...), "route-proxy"),
			obs: agent.Observed{Paths: paths(caPath, d(0o755), caPath+"/ca.json", f("{}\n", 0o600))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Create, nil, ""},
				{"ca-conf", agent.Unchanged, nil, ""},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Unchanged, nil, ""},
			},
			hostWrite: true,
		},
		{
			name: "not adopted: a matching directory and the file under it are unchanged, nothing held",
			d: decl("novox/1", append(routeProxy(),
				file("ca-conf", "route-proxy", caPath+"/ca.json", "{}\n", 0o600),
			)...),
			obs: agent.Observed{Paths: paths(caPath, d(0o755), caPath+"/ca.json", f("{}\n", 0o640))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Create, nil, ""},
				{"ca-conf", agent.Update, []string{"mode"}, ""},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Unchanged, nil, ""},
			},
			hostWrite: true,
		},
		{
			name: "adopted, untaken, found directory at another mode: held, not touched",
			d:    adopted(decl("novox/1", routeProxy()...)),
			obs:  agent.Observed{Paths: paths(caPath, d(0o700))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Hold, nil, holdCA},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Hold, nil, holdDir},
			},
			hostWrite: true,
		},
		{
			name: "adopted, untaken, held container already running: left alone, not removed",
			d:    adopted(decl("novox/1", routeProxy()...)),
			obs:  agent.Observed{Containers: running(routeProxy()[1]), Paths: paths(caPath, d(0o700))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Hold, nil, holdCA},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Hold, nil, holdDir},
			},
			hostWrite: true,
		},
		{
			name: "adopted, taken: nothing held, found directory updated",
			d:    adopted(decl("novox/1", routeProxy()...), "route-proxy"),
			obs:  agent.Observed{Paths: paths(caPath, d(0o700))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Create, nil, ""},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Update, []string{"mode"}, ""},
			},
			hostWrite: true,
		},
		{
			name: "adopted, untaken, directory the agent made: not found, nothing held",
			d:    adopted(decl("novox/1", routeProxy()...)),
			obs:  agent.Observed{Paths: paths(caPath, d(0o700))},
			st:   agent.State{Made: []string{caPath}},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Create, nil, ""},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Update, []string{"mode"}, ""},
			},
			hostWrite: true,
		},
		{
			name: "adopted, untaken, directory absent: created, nothing held",
			d:    adopted(decl("novox/1", routeProxy()...)),
			obs:  agent.Observed{},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Create, nil, ""},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Create, nil, ""},
			},
			hostWrite: true,
		},
		{
			name: "not adopted: an existing directory is the mesh's",
			d:    decl("novox/1", routeProxy()...),
			obs:  agent.Observed{Paths: paths(caPath, d(0o700))},
			want: []want{
				{"acme", agent.Create, nil, ""},
				{"ca", agent.Create, nil, ""},
				{"proxy", agent.Create, nil, ""},
				{"route-proxy-ca", agent.Update, []string{"mode"}, ""},
			},
			hostWrite: true,
		},
		{
			name: "managed container no longer declared: removed",
			d:    base,
			obs:  agent.Observed{Containers: running(base.Resources[0], ctr("old", "gone", image("x:1"))), Paths: paths(declaration.HostsPath, hostsOK(base))},
			want: []want{{"web", agent.Unchanged, nil, ""}, {"old", agent.Remove, nil, "no longer declared"}},
		},
		{
			name: "bad resources: rejected with a reason",
			d: decl("novox/1",
				declaration.Resource{Name: "vol", Kind: declaration.KindVolume, Module: "m"},
				declaration.Resource{Name: "nospec", Kind: declaration.KindContainer, Module: "m"},
				func() declaration.Resource { r := ctr("lying", "m", image("x")); r.Digest = "sha256:0"; return r }(),
				dir("rel", "m", "relative", 0o755),
				file("hosts", "m", declaration.HostsPath, "x", 0o644),
			),
			obs: agent.Observed{Paths: paths(declaration.HostsPath, f("10.1.0.3 searxng.zurag.be\n", 0o644))},
			want: []want{
				{"hosts", agent.Reject, nil, "path /var/lib/meshplane/hosts is the node's hosts file"},
				{"lying", agent.Reject, nil, ""},
				{"nospec", agent.Reject, nil, "kind container needs exactly a container spec"},
				{"rel", agent.Reject, nil, ""},
				{"vol", agent.Reject, nil, `kind "volume" is not applied by this agent`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := agent.Diff(tt.d, tt.obs, tt.st)
			if p.Hosts.Write != tt.hostWrite {
				t.Errorf("hosts write = %v (%s), want %v", p.Hosts.Write, p.Hosts.Reason, tt.hostWrite)
			}
			if p.Declaration != tt.d.ID {
				t.Errorf("plan of %q, want %q", p.Declaration, tt.d.ID)
			}
			if len(p.Steps) != len(tt.want) {
				t.Fatalf("%d steps, want %d:\n%s", len(p.Steps), len(tt.want), dump(p))
			}
			for i, w := range tt.want {
				s := p.Steps[i]
				if s.Name != w.name || s.Action != w.action || !slices.Equal(s.Fields, w.fields) {
					t.Errorf("step %d = %s %s %v, want %s %s %v", i, s.Name, s.Action, s.Fields, w.name, w.action, w.fields)
				}
				if w.reason != "" && s.Reason != w.reason {
					t.Errorf("step %s reason %q, want %q", s.Name, s.Reason, w.reason)
				}
				if s.Reason == "" {
					t.Errorf("step %s has no reason", s.Name)
				}
				// A hold is counted for the module whose take releases it.
				if s.Action == agent.Hold && !strings.HasSuffix(s.Reason, "until "+s.Module+" is taken") {
					t.Errorf("step %s held for %q, but its reason is %q", s.Name, s.Module, s.Reason)
				}
			}
		})
	}
}

func dump(p agent.Plan) string {
	var s string
	for _, st := range p.Steps {
		s += fmt.Sprintf("  %s %s %v %q\n", st.Name, st.Action, st.Fields, st.Reason)
	}
	return s
}

func TestDiffDoesNotModifyInputs(t *testing.T) {
	d := adopted(decl("novox/1", routeProxy()...))
	before := declaration.Digest(d)
	obs := agent.Observed{Paths: paths(caPath, d0700())}
	st := agent.State{Made: []string{"/elsewhere"}}
	p1 := agent.Diff(d, obs, st)
	p2 := agent.Diff(d, obs, st)
	if declaration.Digest(d) != before || len(st.Made) != 1 || st.Made[0] != "/elsewhere" {
		t.Fatal("Diff modified its inputs")
	}
	if dump(p1) != dump(p2) {
		t.Fatalf("Diff is not deterministic:\n%s\n%s", dump(p1), dump(p2))
	}
}

func d0700() agent.PathState { return d(0o700) }

func TestContainerFields(t *testing.T) {
	m := func(src, tgt string, ro bool) declaration.Mount {
		return declaration.Mount{Source: src, Target: tgt, ReadOnly: ro}
	}
	tests := []struct {
		name       string
		have, want declaration.Container
		fields     []string
	}{
		{"equal", declaration.Container{Image: "a"}, declaration.Container{Image: "a"}, nil},
		{"nil and empty env are equal", declaration.Container{Image: "a", Env: []string{}}, declaration.Container{Image: "a"}, nil},
		{"mount made read-only", declaration.Container{Image: "a", Mounts: []declaration.Mount{m("/s", "/t", false)}},
			declaration.Container{Image: "a", Mounts: []declaration.Mount{m("/s", "/t", true)}}, []string{"mounts./t"}},
		{"mount added and removed", declaration.Container{Image: "a", Mounts: []declaration.Mount{m("/s", "/old", false)}},
			declaration.Container{Image: "a", Mounts: []declaration.Mount{m("/s", "/new", false)}}, []string{"mounts./new", "mounts./old"}},
		{"mounts reordered", declaration.Container{Image: "a", Mounts: []declaration.Mount{m("/a", "/a", false), m("/b", "/b", false)}},
			declaration.Container{Image: "a", Mounts: []declaration.Mount{m("/b", "/b", false), m("/a", "/a", false)}}, []string{"mounts"}},
		{"everything", declaration.Container{Image: "a", Command: []string{"x"}, Env: []string{"K=1"}, Networks: []string{"n"}},
			declaration.Container{Image: "b", Env: []string{"K=2"}}, []string{"image", "command", "env.K", "networks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeplan.ContainerFields(tt.have, tt.want); !slices.Equal(got, tt.fields) {
				t.Fatalf("fields = %v, want %v", got, tt.fields)
			}
		})
	}
}

func TestNextState(t *testing.T) {
	d := decl("novox/1", dir("a", "m", "/a", 0o755), dir("b", "m", "/b", 0o755))
	tests := []struct {
		name string
		st   agent.State
		made []string
		want []string
	}{
		{"remembers what it made", agent.State{}, []string{"/b", "/a"}, []string{"/a", "/b"}},
		{"forgets what left the declaration", agent.State{Made: []string{"/a", "/gone"}}, nil, []string{"/a"}},
		{"no duplicates", agent.State{Made: []string{"/a"}}, []string{"/a"}, []string{"/a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := agent.NextState(tt.st, d, tt.made); !slices.Equal(got.Made, tt.want) {
				t.Fatalf("made = %v, want %v", got.Made, tt.want)
			}
		})
	}
}
