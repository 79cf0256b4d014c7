package projections

import (
	"context"
	"testing"

	"meshplane/events"
)

// BenchmarkFold folds pre-decoded events into every projection: the cost of
// the folds alone, per event.
func BenchmarkFold(b *testing.B) {
	g := history(b, 11, 20000)
	type decoded struct {
		ev events.Event
		p  events.Payload
	}
	evs := make([]decoded, len(g.evs))
	for i, ev := range g.evs {
		p, err := g.reg.Decode(ev)
		if err != nil {
			b.Fatal(err)
		}
		evs[i] = decoded{ev, p}
	}
	set := New()
	ps := set.All()
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		d := evs[n%len(evs)]
		if n%len(evs) == 0 {
			for _, p := range ps {
				p.Reset()
			}
		}
		for _, p := range ps {
			_ = p.Fold(d.ev, d.p)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRebuild rebuilds every projection from a memstore: read, decode
// once, fold. One op is one whole rebuild.
func BenchmarkRebuild(b *testing.B) {
	g := history(b, 13, 40000)
	store := stored(b, g)
	set := New()
	r := NewRunner(store, events.NewRegistry(), set.All()...)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := r.Rebuild(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(g.evs))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
