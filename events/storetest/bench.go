package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"meshplane/events"
)

// ReadAllEvents is how many events the "readall" benchmark stores before it
// reads them all, and ReadAllPage the page size it reads them with.
const (
	ReadAllEvents = 100_000
	ReadAllPage   = 4096
)

// BenchPayload is the payload Bench appends: a realistic apply.reported,
// about 300 bytes of JSON. A store's raw ceiling benchmark writes these same
// bytes, so that the two compare like with like.
var BenchPayload = mustJSON(events.ApplyReported{
	Node: "novox", Declaration: "decl-0193", Sent: 12, Applied: 9,
	Created:  []string{"searxng/web", "searxng/redis"},
	Replaced: []events.Replaced{{Name: "forge/web", Fields: []string{"image", "mounts[0].source"}}},
	Held: []events.Held{
		{Name: "route-proxy/ca", Module: "route-proxy", Reason: "would mount /var/lib/route-proxy/ca"},
		{Name: "route-proxy/proxy", Module: "route-proxy", Reason: "found on this adopted node"},
	},
	Failed:    []events.Failed{{Name: "photos/db", Error: "port 5432 in use"}},
	Unchanged: 6, ApplyID: "0193a6c1-7b2e-7c00-8000-00000000002a", Digest: "sha256:9f2c41d0",
})

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Bench runs the store benchmarks as sub-benchmarks of b, each reporting
// events/s:
//
//   - append/batch=B/writers=W: W goroutines append batches of B
//     apply.reported events (about 300 bytes of JSON each), each writer to its
//     own stream; b.N counts batches.
//   - readall: ReadAllEvents stored, then read with ReadAll in pages of
//     ReadAllPage (decoding envelopes included); b.N counts full reads.
func Bench(b *testing.B, f Factory) {
	if f.Open == nil {
		b.Fatal("storetest: Factory.Open is nil")
	}
	for _, batch := range []int{1, 100} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("append/batch=%d/writers=%d", batch, writers), func(b *testing.B) {
				benchAppend(b, f, batch, writers)
			})
		}
	}
	b.Run("readall", func(b *testing.B) { benchReadAll(b, f) })
}

func benchEvent() events.Event {
	return events.Event{
		ID: events.NewID(), Type: events.TypeApplyReported, Schema: 1, At: when(0),
		Actor: "agent:novox", Correlation: "push-42", Data: BenchPayload,
	}
}

func benchAppend(b *testing.B, f Factory, batch, writers int) {
	st := f.Open(b)
	defer st.Close()
	ctx := context.Background()
	var next atomic.Int64 // batches claimed so far
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			stream := fmt.Sprintf("node-bench%02d", w)
			evs := make([]events.Event, batch)
			for next.Add(1) <= int64(b.N) {
				for i := range evs {
					evs[i] = benchEvent()
				}
				if _, err := st.Append(ctx, stream, events.Any, evs...); err != nil {
					b.Errorf("append to %s: %v", stream, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	n := b.N * batch
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

func benchReadAll(b *testing.B, f Factory) {
	st := f.Open(b)
	defer st.Close()
	ctx := context.Background()
	const fill = 1000
	evs := make([]events.Event, fill)
	for done := 0; done < ReadAllEvents; done += fill {
		for i := range evs {
			evs[i] = benchEvent()
		}
		if _, err := st.Append(ctx, fmt.Sprintf("node-bench%02d", done/fill%16), events.Any, evs...); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var after uint64
		for {
			page, err := st.ReadAll(ctx, after, ReadAllPage)
			if err != nil {
				b.Fatalf("ReadAll(after %d): %v", after, err)
			}
			if len(page) == 0 {
				break
			}
			after = page[len(page)-1].Position
		}
		if after != ReadAllEvents {
			b.Fatalf("read %d events, stored %d", after, ReadAllEvents)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)*ReadAllEvents/b.Elapsed().Seconds(), "events/s")
}

// BenchAppend is Bench's append/batch=B/writers=W alone, for a store's own
// comparisons (the chain's cost: the same appends with it and without).
func BenchAppend(b *testing.B, f Factory, batch, writers int) { benchAppend(b, f, batch, writers) }
