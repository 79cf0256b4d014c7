package controller_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
)

// BenchmarkRegisterAndPush registers n nodes in one command (which pushes
// each new node's first declaration) and then pushes every node, forced,
// with a publisher that only counts: the controller's side of a push
// (compose, the appends, the bookkeeping) without a bus. On boltstore, each
// append is a synced commit, grouped when appends run together.
//
//	go test -run '^$' -bench BenchmarkRegisterAndPush -benchtime 1x ./controller/
func BenchmarkRegisterAndPush(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) events.Store
	}{
		{"mem", func(*testing.B) events.Store { return memstore.New() }},
		{"bolt", func(b *testing.B) events.Store {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, st := range stores {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("store=%s/nodes=%d", st.name, n), func(b *testing.B) {
				ctx := context.Background()
				nodes := make([]string, n)
				for i := range nodes {
					nodes[i] = fmt.Sprintf("node-%04d", i)
				}
				var register, push float64
				for range b.N {
					b.StopTimer()
					ctrl, err := controller.New(controller.Config{Store: st.open(b), Publisher: newBus()})
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					r := b.Elapsed()
					if _, err := ctrl.RegisterNodes(ctx, api.RegisterNodesRequest{Operator: "bench", Nodes: nodes}); err != nil {
						b.Fatal(err)
					}
					p := b.Elapsed()
					register += (p - r).Seconds()
					resp, err := ctrl.Push(ctx, api.PushRequest{Operator: "bench"})
					if err != nil {
						b.Fatal(err)
					}
					push += (b.Elapsed() - p).Seconds()
					if len(resp.Pushes) != n {
						b.Fatalf("%d pushed, want %d", len(resp.Pushes), n)
					}
				}
				b.ReportMetric(register*1000/float64(b.N), "register-ms")
				b.ReportMetric(push*1000/float64(b.N), "push-ms")
			})
		}
	}
}
