package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/projections/snapstore"
	"meshplane/sim"
)

// boltHistory returns the path of a boltstore holding evs, made once and
// cached next to the generated records. Appending them one by one would
// take a commit (an fsync) each, nearly an hour here; instead evs are cut
// into windows of 4,096 consecutive events, and each window's events are
// appended as one batch per stream, the streams of a window at once, the
// windows in order. Every stream keeps its order; streams interleave
// differently only within a window (a few rounds of passes): the same
// events, in an order a live mesh could have written.
func boltHistory(b *testing.B, evs []events.Event) string {
	b.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, "meshplane", fmt.Sprintf("bench-%d-%x-w4096.bolt", len(evs), evs[len(evs)-1].ID[:6]))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	start := time.Now()
	tmp := path + ".tmp"
	os.Remove(tmp)
	store, err := boltstore.Open(tmp)
	if err != nil {
		b.Fatal(err)
	}
	fillWindows(b, store, evs)
	if err := store.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d events to %s in %s", len(evs), path, time.Since(start).Round(time.Second))
	return path
}

// The child process of BenchmarkQueries1M: one local CLI call, on its own,
// so its time and peak memory (RSS) are the call's. Env: queryChildEnv is
// the mode, then the store, the data directory and, for a timeline page,
// the node, time range and limit as JSON (a projections.Filter).
const queryChildEnv = "MESH_QUERY_CHILD"

// TestMain runs a child call when the environment asks for one.
func TestMain(m *testing.M) {
	if mode := os.Getenv(queryChildEnv); mode != "" {
		run := queryChild
		if mode == "cli" {
			run = func(string) error { return cliChild() }
		}
		if err := run(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// queryChild answers `mesh status` (every node, as JSON) or one timeline
// page, from the store at MESH_QUERY_STORE: by snapstore.Open on
// MESH_QUERY_DATA ("local"), or by folding every event from 0 as the CLI
// did before ("replay"). It prints how many bytes the answer took.
func queryChild(mode string) error {
	start := time.Now()
	ctx := context.Background()
	store, err := boltstore.Open(os.Getenv("MESH_QUERY_STORE"), boltstore.ReadOnly())
	if err != nil {
		return err
	}
	defer store.Close()
	opened := time.Since(start)
	reg := events.NewRegistry()
	var f *projections.Filter
	if s := os.Getenv("MESH_QUERY_FILTER"); s != "" {
		f = new(projections.Filter)
		if err := json.Unmarshal([]byte(s), f); err != nil {
			return err
		}
	}
	var views *projections.Set
	timeline := func(f projections.Filter) ([]projections.Entry, error) { return views.Timeline.Query(f), nil }
	switch mode {
	case "local":
		l, err := snapstore.Open(ctx, store, reg, os.Getenv("MESH_QUERY_DATA"))
		if err != nil {
			return err
		}
		defer l.Close()
		for _, n := range l.Notes {
			fmt.Fprintln(os.Stderr, "note:", n)
		}
		views, timeline = l.Views, l.Timeline
	case "at": // the projections at MESH_QUERY_AT from the checkpoints in MESH_QUERY_DATA
		var pos uint64
		fmt.Sscan(os.Getenv("MESH_QUERY_AT"), &pos)
		k := projections.NewKeeper(projections.DirCheckpoints(os.Getenv("MESH_QUERY_DATA")), projections.KeepPolicy{}, func(n string) { fmt.Fprintln(os.Stderr, "note:", n) })
		if views, err = projections.ViewsAt(ctx, store, reg, pos, k); err != nil {
			return err
		}
	case "replay":
		views = projections.New()
		if err := projections.NewRunner(store, reg, views.All()...).CatchUp(ctx); err != nil {
			return err
		}
	default:
		return fmt.Errorf("mode %q", mode)
	}
	var answer any
	if f != nil {
		es, err := timeline(*f)
		if err != nil {
			return err
		}
		if len(es) != f.Limit {
			return fmt.Errorf("a page of %d entries, want %d", len(es), f.Limit)
		}
		answer = es
	} else {
		var all []projections.NodeStatus
		for _, n := range views.Status.Nodes() {
			st, err := views.Status.Of(n)
			if err != nil {
				return err
			}
			all = append(all, st)
		}
		answer = all
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return err
	}
	took := time.Since(start)
	// The peak RSS, read here: the rusage of a child started by os/exec
	// counts its parent's RSS at the exec (Linux's maxrss is carried over
	// from the vforked address space).
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var hwm int64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &hwm)
		}
	}
	fmt.Printf("%d %d %d %d\n", len(b), took.Microseconds(), hwm*1024, opened.Microseconds())
	return nil
}

// call runs one child call and returns its wall time, the time from its
// start to its answer (without the process's start and exit), the part of
// it boltstore.Open took, and its peak RSS.
func call(b *testing.B, mode, store, data string, f *projections.Filter) (wall, inside, open time.Duration, rss int64) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), queryChildEnv+"="+mode, "MESH_QUERY_STORE="+store, "MESH_QUERY_DATA="+data)
	if f != nil {
		j, err := json.Marshal(f)
		if err != nil {
			b.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "MESH_QUERY_FILTER="+string(j))
	}
	start := time.Now()
	out, err := cmd.Output()
	wall = time.Since(start)
	if err != nil {
		b.Fatalf("%s call: %v\n%s", mode, err, out)
	}
	var size, us, openUS int64
	if _, err := fmt.Sscan(string(out), &size, &us, &rss, &openUS); err != nil {
		b.Fatalf("%s call printed %q: %v", mode, out, err)
	}
	return wall, time.Duration(us) * time.Microsecond, time.Duration(openUS) * time.Microsecond, rss
}

// BenchmarkQueries1M measures, on the million events of BenchmarkRebuild1M:
//
//   - local mode, each a process of its own (wall time and peak RSS):
//     `status` of every node and a timeline page (one node, the middle half
//     of its history by time, 50 rows) answered by snapstore.Open from a
//     cache at the store's head, and from a cache 1,000 events behind it;
//     and, as the baseline, the same two answered by folding every event
//     from 0 (what every CLI call did before);
//   - the controller: the same page and the tenth page back from it, served
//     by Controller.Timeline from its in-memory projections, p50 and p99 of
//     single calls, and the heap the projections take.
//
// MESH_QUERY_EVENTS=N makes it run on N events instead (a quick check).
func BenchmarkQueries1M(b *testing.B) {
	n := uint64(1_000_000)
	if s := os.Getenv("MESH_QUERY_EVENTS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatal(err)
		}
	}
	evs := generated(b, n)
	path := boltHistory(b, evs)
	ctx := context.Background()

	// The page: node-001, the middle half of its history by time.
	store, err := boltstore.Open(path, boltstore.ReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	// The cache 1,000 events behind the head, made by folding a view of
	// the store that ends there; the cache at the head is a copy of it
	// caught up.
	head, err := store.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	behindDir := b.TempDir()
	start := time.Now()
	l, err := snapstore.Open(ctx, limited{store, head - 1000}, events.NewRegistry(), behindDir)
	if err != nil {
		b.Fatal(err)
	}
	l.Close()
	b.Logf("built the cache of %d events in %s (notes %q)", head-1000, time.Since(start).Round(time.Second), l.Notes)
	fresh := func() string {
		dir := b.TempDir()
		for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
			// -p keeps the modification time: timeline.db is then the file
			// the snapshot's stamp names, used without the whole check.
			if out, err := exec.Command("cp", "-p", filepath.Join(behindDir, name), dir).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v: %s", err, out)
			}
			// Written back now, or the call's first fsync would write the
			// whole copy.
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		return dir
	}
	data := fresh()
	if l, err = snapstore.Open(ctx, store, events.NewRegistry(), data); err != nil {
		b.Fatal(err)
	}
	if len(l.Notes) > 0 {
		b.Fatalf("notes %q", l.Notes)
	}
	// The files stay up to 1,024 events behind what they were made from
	// (snapstore's flushAfter): every call below folds those too.
	folded := float64(head - l.From)
	node, err := l.Timeline(projections.Filter{Node: "node-001"})
	if err != nil {
		b.Fatal(err)
	}
	page := projections.Filter{Node: "node-001", From: node[len(node)/4].At, To: node[3*len(node)/4].At, Limit: 50}
	l.Close()
	store.Close()
	var sizes [2]float64
	for i, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
		if fi, err := os.Stat(filepath.Join(data, name)); err == nil {
			sizes[i] = float64(fi.Size()) / 1e6
		}
	}

	type result struct {
		name                    string
		wall, inside, open, rss []float64
	}
	var results []result
	measure := func(name, mode, storePath, dir string, f *projections.Filter, n int, fresh func() string) {
		r := result{name: name}
		for range n {
			if fresh != nil {
				dir = fresh()
			}
			wall, inside, open, rss := call(b, mode, storePath, dir, f)
			r.open = append(r.open, open.Seconds()*1000)
			r.wall = append(r.wall, wall.Seconds()*1000)
			r.inside = append(r.inside, inside.Seconds()*1000)
			r.rss = append(r.rss, float64(rss)/1e6)
		}
		results = append(results, r)
	}
	b.ResetTimer()
	for range b.N {
		measure("local-status", "local", path, data, nil, 5, nil)
		measure("local-page", "local", path, data, &page, 5, nil)
		measure("behind-status", "local", path, "", nil, 3, fresh)
		measure("behind-page", "local", path, "", &page, 3, fresh)
		measure("replay-status", "replay", path, "", nil, 1, nil)
		measure("replay-page", "replay", path, "", &page, 1, nil)
		// The first call: an empty data directory, no snapshot yet
		// (issue 22, target 3: at most 2 x the replay beside it).
		measure("first-status", "local", path, "", nil, 1, func() string { return b.TempDir() })
		measure("first-page", "local", path, "", &page, 1, func() string { return b.TempDir() })
	}
	b.StopTimer()
	// Reported after the timer's reset, which forgets metrics.
	b.ReportMetric(folded, "events-folded-per-call")
	b.ReportMetric(sizes[0], "snapshot-MB")
	b.ReportMetric(sizes[1], "timeline.db-MB")
	byName := map[string]result{}
	for _, r := range results {
		byName[r.name] = r
	}
	for _, q := range []string{"status", "page"} {
		first, replay := byName["first-"+q], byName["replay-"+q]
		if len(first.inside) > 0 && len(replay.inside) > 0 {
			b.ReportMetric(first.inside[0]/replay.inside[0], "first-"+q+"-x-replay")
			b.ReportMetric(first.rss[0]/replay.rss[0], "first-"+q+"-maxRSS-x-replay")
		}
	}
	for _, r := range results {
		slices.Sort(r.wall)
		slices.Sort(r.inside)
		slices.Sort(r.rss)
		slices.Sort(r.open)
		b.ReportMetric(r.open[len(r.open)/2], r.name+"-storeopen-ms")
		b.ReportMetric(r.wall[len(r.wall)/2], r.name+"-wall-ms")
		b.ReportMetric(r.inside[len(r.inside)/2], r.name+"-ms")
		b.ReportMetric(r.rss[len(r.rss)-1], r.name+"-maxRSS-MB")
	}

	// The controller, in memory.
	mem := memstore.New()
	defer mem.Close()
	for _, ev := range evs {
		if _, err := mem.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			b.Fatal(err)
		}
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctrl, err := controller.New(controller.Config{Store: mem})
	if err != nil {
		b.Fatal(err)
	}
	if err := ctrl.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "controller-heap-MB")
	all := ctrl.Views().Timeline.Query(projections.Filter{Node: "node-001", From: page.From, To: page.To})
	for _, tc := range []struct {
		name string
		req  api.TimelineRequest
	}{
		{"ctrl-first-page", api.TimelineRequest{Node: "node-001", Since: page.From, Until: page.To, Limit: 50}},
		{"ctrl-tenth-page", api.TimelineRequest{Node: "node-001", Since: page.From, Until: page.To, Limit: 50, Before: all[len(all)-450].Position}},
	} {
		lat := make([]time.Duration, 0, 2000)
		for range 2000 {
			t0 := time.Now()
			p, err := ctrl.Timeline(ctx, tc.req)
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Entries) != 50 {
				b.Fatalf("a page of %d", len(p.Entries))
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, tc.name+"-p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, tc.name+"-p99-ms")
	}
	runtime.KeepAlive(ctrl)
}

// limited is a store read as if it ended at head.
type limited struct {
	events.Store
	head uint64
}

func (l limited) Head(context.Context) (uint64, error) { return l.head, nil }

func (l limited) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	if after >= l.head {
		return nil, nil
	}
	if n := int(l.head - after); limit <= 0 || limit > n {
		limit = n
	}
	return l.Store.ReadAll(ctx, after, limit)
}

// BenchmarkControllerMemory1000Nodes folds the projections of a mesh of
// 1,000 nodes (sim.DefaultWorkload's faults, 48 modules) over a few rounds
// and reports the heap they take, per node.
func BenchmarkControllerMemory1000Nodes(b *testing.B) {
	ctx := context.Background()
	w := sim.DefaultWorkload
	w.Nodes, w.Modules = 1000, 48
	for b.Loop() {
		store := memstore.New()
		m := sim.New(store)
		if err := m.Setup(ctx, w); err != nil {
			b.Fatal(err)
		}
		for round := range 3 {
			if err := m.Round(ctx, w, round); err != nil {
				b.Fatal(err)
			}
		}
		head, err := store.Head(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		views := projections.New()
		if err := projections.NewRunner(store, events.NewRegistry(), views.All()...).CatchUp(ctx); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc - before.HeapAlloc)
		b.ReportMetric(heap/1e6, "heap-MB")
		b.ReportMetric(heap/float64(w.Nodes)/1e3, "KB/node")
		b.ReportMetric(float64(head), "events")
		runtime.KeepAlive(views)
		store.Close()
	}
}
