package simruntime_test

import (
	"context"
	"errors"
	"testing"

	"meshplane/agent"
	"meshplane/agent/runtimetest"
	"meshplane/agent/simruntime"
	"meshplane/declaration"
)

func TestConformance(t *testing.T) {
	runtimetest.Run(t, func(testing.TB) agent.Runtime { return simruntime.New() })
}

func TestFailNext(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("disk on fire")
	tests := []struct {
		op   string
		call func(rt *simruntime.Runtime) error
	}{
		{simruntime.OpCreate, func(rt *simruntime.Runtime) error {
			return rt.CreateContainer(ctx, agent.Container{Name: "c", Spec: declaration.Container{Image: "i"}})
		}},
		{simruntime.OpMkdir, func(rt *simruntime.Runtime) error { return rt.Mkdir(ctx, "/d", 0o755) }},
		{simruntime.OpWrite, func(rt *simruntime.Runtime) error { return rt.WriteFile(ctx, "/f", nil, 0o644) }},
		{simruntime.OpList, func(rt *simruntime.Runtime) error { _, err := rt.ListContainers(ctx); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.op, func(t *testing.T) {
			rt := simruntime.New()
			rt.FailNext(tt.op, 2, boom)
			for i := range 2 {
				err := tt.call(rt)
				if !errors.Is(err, agent.ErrRuntime) || !errors.Is(err, boom) {
					t.Fatalf("call %d: %v, want ErrRuntime wrapping the injected error", i+1, err)
				}
			}
			if err := tt.call(rt); err != nil {
				t.Fatalf("third call, after the fault ran out: %v", err)
			}
		})
	}
}

func TestOutsideWorld(t *testing.T) {
	ctx := context.Background()
	rt := simruntime.New()
	if err := rt.MakeDirectory("/var/lib/route-proxy/ca", 0o700); err != nil {
		t.Fatal(err)
	}
	if mode, ok := rt.Dir("/var/lib/route-proxy/ca"); !ok || mode != 0o700 {
		t.Fatalf("Dir = %o, %v; want 700, true", mode, ok)
	}
	if mode, ok := rt.Dir("/var/lib/route-proxy"); !ok || mode != 0o755 {
		t.Fatalf("parent Dir = %o, %v; want 755, true", mode, ok)
	}
	spec := declaration.Container{Image: "i", Mounts: []declaration.Mount{{Source: "/var/lib/route-proxy/ca", Target: "/ca"}}}
	for _, n := range []string{"a", "b"} {
		if err := rt.CreateContainer(ctx, agent.Container{Name: n, Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.RunUnmanaged("hand", "nginx"); err != nil {
		t.Fatal(err)
	}
	if got, ok := rt.Container("a"); !ok || got.Mounts[0].Target != "/ca" {
		t.Fatalf("Container(a) = %+v, %v", got, ok)
	}
	if n := rt.RemoveAllContainers(); n != 3 {
		t.Fatalf("RemoveAllContainers = %d, want 3", n)
	}
	if names := rt.Names(); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
	if err := rt.CreateContainer(ctx, agent.Container{Name: "a", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	if got := rt.Creates("a"); got != 2 {
		t.Fatalf("Creates(a) = %d, want 2", got)
	}
	if err := rt.CreateContainer(ctx, agent.Container{Name: "m", Spec: declaration.Container{
		Image: "i", Mounts: []declaration.Mount{{Source: "/missing", Target: "/x"}}}}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("create with a missing mount source: %v, want ErrNotFound", err)
	}
}
