package declaration

import "testing"

// TestDigestsPinned exists because of seed 000: a change that alters every
// container's digest recreates every container on every node at the next
// push. Reordering a spec's fields, renaming a JSON tag, changing how
// Digest encodes or adding a field without omitempty all do that. If this
// test fails, the change is a fleet-wide restart: make it on purpose (with an
// upcast or a migration note), or not at all.
func TestDigestsPinned(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Resource
		want string
	}{
		{"container", Resource{Name: "web", Kind: KindContainer, Module: "forge", Container: &Container{
			Image:    "127.0.0.1:5000/forge/web@sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0",
			Command:  []string{"/web", "--listen", ":8080"},
			Env:      []string{"A=1", "STORE_PORT=6852"},
			Mounts:   []Mount{{Source: "/var/lib/forge", Target: "/data"}, {Source: "cache", Target: "/cache", Volume: true}, {Source: HostsPath, Target: "/etc/hosts", ReadOnly: true}},
			Networks: []string{"mesh"},
		}}, "sha256:9b32df4ac87698357d10c941f9d8c01fd31bac00fca9868e975e893a6c90abd3"},
		{"bare container", Resource{Name: "proxy", Kind: KindContainer, Module: "route-proxy", Container: &Container{Image: "proxy:1"}},
			"sha256:f9c34fafd4bb30f757db338b51eb184c57d3da3cd7ef224c3f9ec35a1c2983ad"},
		{"directory", Resource{Name: "/var/lib/forge", Kind: KindDirectory, Module: "forge", Directory: &Directory{Path: "/var/lib/forge", Mode: 0o700}},
			"sha256:0cd76736c111819fe6d824bca0c83ad4901ffb1d8f080a0ecbe11f3661d6dac7"},
		{"file", Resource{Name: "/etc/forge/app.ini", Kind: KindFile, Module: "forge", File: &File{Path: "/etc/forge/app.ini", Mode: 0o640, Content: "[server]\nport = 8080\n"}},
			"sha256:e0e730ad8c9d18905684486ca6226f7d21d6059e3be9027335fac3d5eeadc9d0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Digest(tc.r.Spec()); got != tc.want {
				t.Errorf("digest of %s = %s, pinned %s: this change recreates every such resource on every node", tc.name, got, tc.want)
			}
		})
	}
}

// TestDigestIgnoresRoster holds rule 2: the roster is not part of a
// container's identity. Two declarations that differ only in their roster
// and hosts file carry the same resource digests.
func TestDigestIgnoresRoster(t *testing.T) {
	c := &Container{Image: "proxy:1", Mounts: []Mount{{Source: HostsPath, Target: "/etc/hosts", ReadOnly: true}}}
	a := Declaration{Roster: []Route{{Name: "a.example", Node: "n1"}}, Hosts: "10.0.0.1 a.example\n", Resources: []Resource{{Name: "p", Kind: KindContainer, Container: c}}}
	b := Declaration{Roster: nil, Hosts: "", Resources: []Resource{{Name: "p", Kind: KindContainer, Container: c}}}
	if Digest(a.Resources[0].Spec()) != Digest(b.Resources[0].Spec()) {
		t.Fatal("a container's digest moved with the roster")
	}
}
