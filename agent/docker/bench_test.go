package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"meshplane/agent"
	"meshplane/agent/docker"
	"meshplane/declaration"
)

// counting counts the engine calls a pass makes.
type counting struct {
	docker.Engine
	lists, inspects atomic.Int64
}

func (c *counting) ContainerList(ctx context.Context, o container.ListOptions) ([]container.Summary, error) {
	c.lists.Add(1)
	return c.Engine.ContainerList(ctx, o)
}

func (c *counting) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	c.inspects.Add(1)
	return c.Engine.ContainerInspect(ctx, id)
}

// many is a declaration of n containers as compose makes them: the hosts
// file mounted, a network, env.
func many(node string, n int) declaration.Declaration {
	rs := make([]declaration.Resource, n)
	for i := range rs {
		rs[i] = ctrRes(fmt.Sprintf("c%03d", i), "bench", declaration.Container{
			Image:    testRef,
			Command:  []string{"serve", fmt.Sprint(i)},
			Env:      []string{"INDEX=" + fmt.Sprint(i)},
			Mounts:   []declaration.Mount{{Source: declaration.HostsPath, Target: "/etc/hosts", ReadOnly: true}},
			Networks: []string{"mesh"},
		})
	}
	return decl(node, "1", hosts1, rs...)
}

// sizes are the container counts measured: 50 and 300, or MESH_BENCH_SIZES
// ("300", "50,300").
func sizes() []int {
	v := os.Getenv("MESH_BENCH_SIZES")
	if v == "" {
		return []int{50, 300}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// fullMax is the largest size whose full pass is measured: 50 unless
// MESH_BENCH_FULL_MAX says more (a full pass creates every container one
// after the other, over a second each on a loaded engine).
func fullMax() int {
	if v, err := strconv.Atoi(os.Getenv("MESH_BENCH_FULL_MAX")); err == nil {
		return v
	}
	return 50
}

// populate creates d's containers that are not there through the runtime,
// four at a time, as the agent would have (same labels, same digests).
func populate(b *testing.B, r rt, d declaration.Declaration) {
	b.Helper()
	if err := r.WriteFile(context.Background(), declaration.HostsPath, []byte(d.Hosts), 0o644); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	errs := make(chan error, len(d.Resources))
	for _, res := range d.Resources {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := r.CreateContainer(context.Background(), agent.Container{Name: res.Name, Module: res.Module, Digest: res.Digest, Spec: *res.Container})
			if !errors.Is(err, agent.ErrExists) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// removeAll removes the node's containers, eight at a time.
func removeAll(b *testing.B, r rt, d declaration.Declaration) {
	b.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, res := range d.Resources {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_ = eng.ContainerRemove(context.Background(), r.prefix+res.Name, container.RemoveOptions{Force: true})
		}()
	}
	wg.Wait()
}

// BenchmarkDockerPass measures, over 50 and 300 containers on the real
// engine: a full pass (every container created), a no-op pass (the node
// already holds the declaration: one list call), and the same observation
// as the docker CLI makes it, `docker inspect` per container. The ratio of
// the last two is printed. The full pass is measured up to
// MESH_BENCH_FULL_MAX containers (50); a node whose full pass is not
// measured is populated four containers at a time.
//
//	go test -run='^$' -bench=BenchmarkDockerPass -benchtime=3x ./agent/docker/
func BenchmarkDockerPass(b *testing.B) {
	setup(b)
	if _, err := exec.LookPath("docker"); err != nil {
		b.Skip("SKIPPING: no docker CLI to compare with")
	}
	for _, n := range sizes() {
		cnt := &counting{Engine: eng}
		node := randomNode(b)
		r := newRTFor(b, node, node+"-", b.TempDir(), cnt)
		ag := newAgent(b, r, node)
		d := many(node, n)
		var noop, cli time.Duration
		// The full pass, from an empty node, leaves the node holding d.
		if n <= fullMax() {
			b.Run(fmt.Sprintf("full/%d", n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					removeAll(b, r, d)
					b.StartTimer()
					if o := applyWithin(b, ag, d, 30*time.Minute); len(o.Created) != n {
						b.Fatalf("full pass created %d of %d (failed %+v)", len(o.Created), n, o.Failed)
					}
				}
			})
		}
		populate(b, r, d) // what the full pass did not make (not measured, or filtered out)
		b.Run(fmt.Sprintf("noop/%d", n), func(b *testing.B) {
			lists, inspects := cnt.lists.Load(), cnt.inspects.Load()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if o := apply(b, ag, d); o.Unchanged != n {
					b.Fatalf("no-op pass: %+v", o)
				}
			}
			noop = time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(cnt.lists.Load()-lists)/float64(b.N), "lists/op")
			b.ReportMetric(float64(cnt.inspects.Load()-inspects)/float64(b.N), "inspects/op")
		})
		// The ceiling, in the same run: the no-op pass and one raw
		// ContainerList with the runtime's label filters, alternated op by
		// op so that the machine's drifting load falls on both.
		b.Run(fmt.Sprintf("noop-vs-list/%d", n), func(b *testing.B) {
			opts := container.ListOptions{All: true, Filters: filters.NewArgs(
				filters.Arg("label", agent.LabelManaged+"=true"),
				filters.Arg("label", agent.LabelNode+"="+node),
			)}
			var pass, list time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if o := apply(b, ag, d); o.Unchanged != n {
					b.Fatalf("no-op pass: %+v", o)
				}
				pass += time.Since(start)
				start = time.Now()
				cs, err := eng.ContainerList(context.Background(), opts)
				if err != nil {
					b.Fatal(err)
				}
				list += time.Since(start)
				if len(cs) != n {
					b.Fatalf("raw list: %d containers, want %d", len(cs), n)
				}
			}
			b.ReportMetric(float64(pass.Microseconds())/1000/float64(b.N), "noop-ms")
			b.ReportMetric(float64(list.Microseconds())/1000/float64(b.N), "list-ms")
			b.ReportMetric(float64(pass)/float64(list), "noop/list")
		})
		b.Run(fmt.Sprintf("cli-inspect/%d", n), func(b *testing.B) {
			start := time.Now()
			for i := 0; i < b.N; i++ {
				for _, res := range d.Resources {
					if out, err := exec.Command("docker", "inspect", r.prefix+res.Name).CombinedOutput(); err != nil {
						b.Fatalf("docker inspect: %v\n%s", err, out)
					}
				}
			}
			cli = time.Since(start) / time.Duration(b.N)
		})
		fmt.Printf("%d containers: no-op pass %v, docker inspect per container %v: %.1fx\n", n, noop, cli, float64(cli)/float64(noop))
		removeAll(b, r, d)
	}
}
