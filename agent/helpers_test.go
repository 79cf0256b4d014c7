package agent_test

import (
	"sort"

	"meshplane/commands"
)

// Builders of hand-made declarations (compose is not used here: these tests
// are about the agent alone).

func ctr(name, module string, c commands.Container) commands.Resource {
	return commands.Resource{Name: name, Kind: commands.KindContainer, Module: module, Digest: commands.Digest(&c), Container: &c}
}

func dir(name, module, p string, mode uint32) commands.Resource {
	d := commands.Directory{Path: p, Mode: mode}
	return commands.Resource{Name: name, Kind: commands.KindDirectory, Module: module, Digest: commands.Digest(&d), Directory: &d}
}

func file(name, module, p, content string, mode uint32) commands.Resource {
	f := commands.File{Path: p, Mode: mode, Content: content}
	return commands.Resource{Name: name, Kind: commands.KindFile, Module: module, Digest: commands.Digest(&f), File: &f}
}

func image(img string, mounts ...string) commands.Container {
	c := commands.Container{Image: img}
	for _, m := range mounts {
		c.Mounts = append(c.Mounts, commands.Mount{Source: m, Target: m})
	}
	return c
}

// decl makes a declaration for novox with rs sorted by name.
func decl(id string, rs ...commands.Resource) commands.Declaration {
	rs = append([]commands.Resource(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	d := commands.Declaration{Node: "novox", ID: id, Resources: rs, Hosts: "10.1.0.3 searxng.zurag.be\n", Correlation: "corr-" + id}
	d.Digest = commands.Digest(struct {
		R []commands.Resource
		H string
	}{rs, d.Hosts})
	return d
}

func adopted(d commands.Declaration, taken ...string) commands.Declaration {
	d.Adopted = true
	d.Taken = taken
	return d
}

// routeProxy is the module of STEPS.md: containers proxy, ca, acme; ca
// mounts /var/lib/route-proxy/ca, which is also a directory resource.
func routeProxy() []commands.Resource {
	return []commands.Resource{
		ctr("proxy", "route-proxy", image("caddy:2")),
		ctr("ca", "route-proxy", image("step-ca:0.27", caPath)),
		ctr("acme", "route-proxy", image("acme:1")),
		dir("route-proxy-ca", "route-proxy", caPath, 0o755),
	}
}

const caPath = "/var/lib/route-proxy/ca"
