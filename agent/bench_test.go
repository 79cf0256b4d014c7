package agent_test

import (
	"context"
	"fmt"
	"testing"

	"meshplane/agent"
	"meshplane/declaration"
)

// bigDecl is a node the size of seed 000's: 110 modules of two containers
// and a mounted directory, 330 resources.
func bigDecl(id string) declaration.Declaration {
	var rs []declaration.Resource
	for m := range 110 {
		module := fmt.Sprintf("mod%03d", m)
		p := "/var/lib/" + module
		rs = append(rs, dir(module+"-data", module, p, 0o700))
		for i := range 2 {
			c := declaration.Container{
				Image:  fmt.Sprintf("reg:5000/%s/c%d@sha256:ab12", module, i),
				Env:    []string{"A=1", "B=2", "STORE_PORT=6852"},
				Mounts: []declaration.Mount{{Source: p, Target: "/data"}, {Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true}},
			}
			rs = append(rs, ctr(fmt.Sprintf("%s-c%d", module, i), module, c))
		}
	}
	return decl(id, rs...)
}

func BenchmarkDiffUnchanged330(b *testing.B) {
	d := bigDecl("novox/1")
	obs := agent.Observed{Containers: map[string]agent.Container{}, Paths: map[string]agent.PathState{
		declaration.HostsPath: {PathInfo: agent.PathInfo{Exists: true, Mode: agent.HostsMode}, Content: []byte(d.Hosts)},
	}}
	for _, r := range d.Resources {
		switch r.Kind {
		case declaration.KindContainer:
			obs.Containers[r.Name] = agent.Container{Name: r.Name, Module: r.Module, Digest: r.Digest, Spec: *r.Container}
		case declaration.KindDirectory:
			obs.Paths[r.Directory.Path] = agent.PathState{PathInfo: agent.PathInfo{Exists: true, Dir: true, Mode: 0o700}}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		p := agent.Diff(d, obs, agent.State{})
		if len(p.Steps) != 330 {
			b.Fatal(len(p.Steps))
		}
	}
}

func BenchmarkApplyUnchanged330(b *testing.B) {
	fx := newBenchFixture(b)
	d := bigDecl("novox/1")
	if _, err := fx.ag.Apply(context.Background(), d); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := fx.ag.Apply(context.Background(), d)
		if err != nil || r.Outcome.Unchanged != 330 {
			b.Fatal(err, r.Summary())
		}
	}
}

func BenchmarkOutboxDirPutFlush(b *testing.B) {
	box, err := agent.OpenOutbox(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	deliver := func(context.Context, agent.Report) error { return nil }
	r := agent.Report{}
	r.Outcome.Node, r.Outcome.Declaration, r.Outcome.ApplyID = "novox", "novox/1", "01927c1e-7a4b-7c3d-8e5f-0123456789ab"
	b.ReportAllocs()
	for b.Loop() {
		if err := box.Put(r); err != nil {
			b.Fatal(err)
		}
		if n, err := box.Flush(context.Background(), deliver); err != nil || n != 1 {
			b.Fatal(n, err)
		}
	}
}
