package agent_test

import (
	"meshplane/declaration"
	"sort"
)

// Builders of hand-made declarations (compose is not used here: these tests
// are about the agent alone).

func ctr(name, module string, c declaration.Container) declaration.Resource {
	return declaration.Resource{Name: name, Kind: declaration.KindContainer, Module: module, Digest: declaration.Digest(&c), Container: &c}
}

func dir(name, module, p string, mode uint32) declaration.Resource {
	d := declaration.Directory{Path: p, Mode: mode}
	return declaration.Resource{Name: name, Kind: declaration.KindDirectory, Module: module, Digest: declaration.Digest(&d), Directory: &d}
}

func file(name, module, p, content string, mode uint32) declaration.Resource {
	f := declaration.File{Path: p, Mode: mode, Content: content}
	return declaration.Resource{Name: name, Kind: declaration.KindFile, Module: module, Digest: declaration.Digest(&f), File: &f}
}

func image(img string, mounts ...string) declaration.Container {
	c := declaration.Container{Image: img}
	for _, m := range mounts {
		c.Mounts = append(c.Mounts, declaration.Mount{Source: m, Target: m})
	}
	return c
}

// decl makes a declaration for novox with rs sorted by name.
func decl(id string, rs ...declaration.Resource) declaration.Declaration {
	rs = append([]declaration.Resource(nil), rs...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	d := declaration.Declaration{Node: "novox", ID: id, Resources: rs, Hosts: "10.1.0.3 searxng.zurag.be\n", Correlation: "corr-" + id}
	d.Digest = declaration.Digest(struct {
		R []declaration.Resource
		H string
	}{rs, d.Hosts})
	return d
}

func adopted(d declaration.Declaration, taken ...string) declaration.Declaration {
	d.Adopted = true
	d.Taken = taken
	return d
}

// routeProxy is the module of docs/scenario-steps.md: containers proxy, ca, acme; ca
// mounts /var/lib/route-proxy/ca, which is also a directory resource.
func routeProxy() []declaration.Resource {
	return []declaration.Resource{
		ctr("proxy", "route-proxy", image("caddy:2")),
		ctr("ca", "route-proxy", image("step-ca:0.27", caPath)),
		ctr("acme", "route-proxy", image("acme:1")),
		dir("route-proxy-ca", "route-proxy", caPath, 0o755),
	}
}

const caPath = "/var/lib/route-proxy/ca"
