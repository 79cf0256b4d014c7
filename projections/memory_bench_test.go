package projections

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meshplane/events"
)

// BenchmarkQuietDays folds, into one Set as the controller's, a mesh of
// MESH_BENCH_NODES nodes (10,000 unless set) reporting quiet passes every 5
// minutes for MESH_BENCH_DAYS simulated days (1 unless set): synthetic
// events made here, one apply.reported a node a tick, in the compact form
// an agent sends (no digest, no apply id, the held list named by
// held_since on the nodes that hold something: one in ten), its
// strings fresh as a decoded event's are. It reports
// the live heap after the first day and at the end (after a collection),
// and the fold CPU of one whole pass of the mesh.
//
// The timeline keeps a node's quiet passes as runs, read back from the
// store by version (SetRunReader): the store here is quietStore, which
// makes the events again from their stream and version (it stands for the
// one on disk, whose bytes are not the controller's heap).
func BenchmarkQuietDays(b *testing.B) {
	nodes, days := envInt(b, "MESH_BENCH_NODES", 10000), envInt(b, "MESH_BENCH_DAYS", 1)
	const tick = 5 * time.Minute
	perDay := int(24 * time.Hour / tick)
	for b.Loop() {
		set := New()
		var pos, version uint64
		store := quietStore{nodes: nodes, tick: tick, reads: new(atomic.Int64), head: &pos}
		set.Timeline.SetRunReader(store)
		ps := set.All()
		at, corr := t0, ""
		fold := func(stream, typ, actor string, p events.Payload) {
			pos++
			ev := events.Event{ID: id(pos), Stream: stream, Version: version, Position: pos, Type: typ, Schema: 1, At: at, Actor: actor, Correlation: corr}
			for _, pr := range ps {
				if err := pr.Fold(ev, p); err != nil {
					b.Fatalf("%s: fold %d: %v", pr.Name(), pos, err)
				}
			}
		}
		names := make([]string, nodes)
		for i := range names {
			names[i] = fmt.Sprintf("n%05d", i)
		}
		roster := []string{"forge", "ca", "web"}
		for i, n := range names {
			s := events.NodeStream(n)
			corr = "c-" + n
			decl, digest := "d-"+n, "sha256:"+n
			res := resources("m", 3, n)
			version = 1
			fold(s, events.TypeNodeRegistered, "operator:jo", events.NodeRegistered{Node: n})
			version++
			fold(s, events.TypeModuleAssigned, "operator:jo", events.ModuleAssigned{Module: "m", Node: n})
			version++
			fold(s, events.TypeDeclarationComposed, "controller", events.DeclarationComposed{Node: n, Declaration: decl, Digest: digest, Roster: roster, Resources: res})
			version++
			fold(s, events.TypeDeclarationPushed, "controller", events.DeclarationPushed{Node: n, Declaration: decl, Digest: digest, Resources: 3})
			version++
			a := events.ApplyReported{Node: n, Declaration: decl, Sent: 3, Applied: 3, Created: []string{res[0].Name, res[1].Name, res[2].Name}, Digest: digest, ApplyID: id(pos + 1).String()}
			if i%10 == 0 {
				a.Created = a.Created[:2]
				a.Held = []events.Held{{Name: res[2].Name, Module: "m", Reason: "adopted: not taken"}}
			}
			fold(s, events.TypeApplyReported, "agent:"+n, a)
		}
		held := make([]string, nodes) // the apply id of each node's report carrying its held list
		for i := 0; i < nodes; i += 10 {
			held[i] = id(uint64(i*5 + 5)).String()
		}
		var day1 uint64
		var passes int
		start := time.Now()
		for d := 0; d < days; d++ {
			for k := 0; k < perDay; k++ {
				at = at.Add(tick)
				version = uint64(setupEvents + passes + 1)
				for i, n := range names {
					// Fresh strings, as a decoded event's are.
					corr = "c-" + n
					fold(events.NodeStream(n), events.TypeApplyReported, "agent:"+n, events.ApplyReported{
						Node: strings.Clone(n), Declaration: "d-" + n, Sent: 3, Applied: 3, Unchanged: 3, HeldSince: strings.Clone(held[i]),
					})
				}
				passes++
			}
			if d == 0 {
				day1 = liveHeap()
			}
		}
		took := time.Since(start)
		end := liveHeap()
		// The runs read back: node 1's last passes, at the positions folded.
		got, err := set.Timeline.Read(Filter{Node: names[len(names)-1], Type: events.TypeApplyReported, Limit: 3})
		if err != nil || len(got) != 3 || got[2].Position != pos || !got[2].At.Equal(at) {
			b.Fatalf("the last node's last passes read back: %v (%d entries, the last at %d), want 3, the last at %d", err, len(got), got[len(got)-1].Position, pos)
		}
		// What a query costs when it reads runs back (from quietStore:
		// what the store's reads cost comes on top).
		for _, q := range []struct {
			unit string
			f    Filter
		}{
			{"ms-page-newest", Filter{Limit: 50}},
			{"ms-page-middle", Filter{After: pos / 2, Limit: 50, Forward: true}},
			{"ms-node-page-middle", Filter{Node: names[1], After: pos / 2, Limit: 50, Forward: true}},
			{"ms-since-middle", Filter{From: t0.Add(time.Duration(passes/2) * tick), Limit: 50, Forward: true}},
		} {
			start, reads := time.Now(), store.reads.Load()
			es, err := set.Timeline.Read(q.f)
			if err != nil || len(es) != 50 {
				b.Fatalf("%s: %d entries, %v", q.unit, len(es), err)
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1e3, q.unit)
			b.ReportMetric(float64(store.reads.Load()-reads), "reads"+strings.TrimPrefix(q.unit, "ms"))
		}
		start, reads := time.Now(), store.reads.Load()
		ts, err := set.Timeline.Why(names[0], "m-2") // held at every pass
		if err != nil || len(ts) != passes+1 {
			b.Fatalf("why: %d touches, %v; want %d", len(ts), err, passes+1)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1e3, "ms-why-every-pass")
		b.ReportMetric(float64(store.reads.Load()-reads), "reads-why-every-pass")
		members, runs := set.Timeline.RunEntries()
		b.ReportMetric(float64(members), "run-entries")
		b.ReportMetric(float64(runs), "runs")
		if f := os.Getenv("MESH_BENCH_HEAPPROF"); f != "" {
			writeHeap(b, f)
		}
		// A checkpoint of it all, as the Keeper makes one, and a restore
		// of it into a fresh Set, as a restart's resume does: what a
		// restart costs beside folding what came after the checkpoint.
		ck := checkpointCost(b, set, store)
		b.ReportMetric(float64(ck.bytes)/1e6, "ckpt-MB")
		b.ReportMetric(float64(ck.encode.Milliseconds()), "ckpt-encode-ms")
		b.ReportMetric(float64(ck.restore.Milliseconds()), "ckpt-restore-ms")
		b.ReportMetric(float64(day1)/1e6, "heap-day1-MB")
		b.ReportMetric(float64(end)/1e6, "heap-end-MB")
		b.ReportMetric(float64(took.Nanoseconds())/float64(passes), "ns/pass")
		b.ReportMetric(float64(took.Nanoseconds())/float64(passes)/float64(300*time.Second)*100, "%tick")
		b.ReportMetric(float64(days), "days")
		runtime.KeepAlive(set)
	}
}

// setupEvents is how many events the benchmark's set-up appends to each
// node's stream, before its quiet passes.
const setupEvents = 5

// quietStore reads BenchmarkQuietDays's node streams back: version v of
// node i's stream is its set-up's v-th event when v <= setupEvents, else
// its quiet pass v-setupEvents (the envelope only: a run is read back by
// position and time).
type quietStore struct {
	nodes int
	tick  time.Duration
	reads *atomic.Int64 // ReadStream and ReadAll calls
	head  *uint64       // the last position folded (read while no fold runs)
}

// setupTypes are the types of a node's set-up events, by version.
var setupTypes = [setupEvents]string{events.TypeNodeRegistered, events.TypeModuleAssigned,
	events.TypeDeclarationComposed, events.TypeDeclarationPushed, events.TypeApplyReported}

// ReadAll makes the envelopes of the events at positions above after, as
// ReadStream does.
func (q quietStore) ReadAll(_ context.Context, after uint64, limit int) ([]events.Event, error) {
	q.reads.Add(1)
	n, setup := uint64(q.nodes), uint64(setupEvents*q.nodes)
	var out []events.Event
	for p := after + 1; p <= *q.head && len(out) < limit; p++ {
		var i, v uint64
		ev := events.Event{Position: p, Type: events.TypeApplyReported, At: t0}
		if p <= setup {
			i, v = (p-1)/setupEvents, (p-1)%setupEvents+1
			ev.Type = setupTypes[v-1]
		} else {
			k := (p-setup-1)/n + 1
			i, v = (p-setup-1)%n, setupEvents+k
			ev.At = t0.Add(time.Duration(k) * q.tick)
		}
		ev.Stream, ev.Version = events.NodeStream(fmt.Sprintf("n%05d", i)), v
		out = append(out, ev)
	}
	return out, nil
}

func (q quietStore) ReadStream(_ context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	q.reads.Add(1)
	var i int
	if _, err := fmt.Sscanf(stream, events.NodeStream("n%05d"), &i); err != nil {
		return nil, err
	}
	out := make([]events.Event, 0, limit)
	for v := after + 1; v <= after+uint64(limit); v++ {
		if v <= setupEvents {
			return nil, fmt.Errorf("quietStore: %s version %d: a set-up event", stream, v)
		}
		k := v - setupEvents // the pass, from 1
		pos := uint64(setupEvents*q.nodes) + (k-1)*uint64(q.nodes) + uint64(i) + 1
		out = append(out, events.Event{Stream: stream, Version: v, Position: pos, Type: events.TypeApplyReported,
			At: t0.Add(time.Duration(k) * q.tick), Actor: "agent:" + fmt.Sprintf("n%05d", i)})
	}
	return out, nil
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a count above 0", name, s)
	}
	return n
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// writeHeap writes a heap profile to file (MESH_BENCH_HEAPPROF): what the
// live set holds at the end, before it is dropped.
func writeHeap(b *testing.B, file string) {
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// ckStore is quietStore as a Runner's store: the reads a checkpoint's
// encode and restore make (a Runner that folded nothing checks no event
// id), and the rest of events.Store left nil (never called).
type ckStore struct {
	events.Store
	q quietStore
}

func (s ckStore) Head(context.Context) (uint64, error) { return *s.q.head, nil }
func (s ckStore) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	return s.q.ReadStream(ctx, stream, after, limit)
}
func (s ckStore) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	return s.q.ReadAll(ctx, after, limit)
}

// ckCost is what one checkpoint of a Set costs.
type ckCost struct {
	bytes           int
	encode, restore time.Duration
}

// checkpointCost encodes set as a Keeper's checkpoint (Runner.snapshotHeld,
// framed) and restores it into a fresh Set as Keeper.load does, checking
// that the restored status is the folded one.
func checkpointCost(b *testing.B, set *Set, q quietStore) ckCost {
	b.Helper()
	ctx := context.Background()
	st := ckStore{q: q}
	r := NewRunner(st, events.NewRegistry(), set.All()...)
	start := time.Now()
	body, err := r.snapshotHeld(ctx, set, nil, true)
	if err != nil {
		b.Fatal(err)
	}
	framed := frameSnapshot(body)
	var c ckCost
	c.bytes, c.encode = len(framed), time.Since(start)
	fresh := New()
	fresh.Timeline.SetRunReader(q)
	r2 := NewRunner(st, events.NewRegistry(), fresh.All()...)
	start = time.Now()
	snap, err := decodeSnapshot(ctx, "benchmark checkpoint", framed, r2)
	if err == nil {
		err = snap.restore(r2, fresh, "benchmark checkpoint")
	}
	if err != nil {
		b.Fatal(err)
	}
	c.restore = time.Since(start)
	was, err := set.Status.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	now, err := fresh.Status.MarshalJSON()
	if err != nil || string(was) != string(now) {
		b.Fatalf("the restored status differs from the folded one (%d bytes, %d): %v", len(was), len(now), err)
	}
	return c
}
