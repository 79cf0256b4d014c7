package sim_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/pgstore"
	"meshplane/events/pgstore/pgtest"
	"meshplane/projections"
)

// BenchmarkRebuild1MStores is BenchmarkRebuild1M's rebuild on the durable
// stores: every projection rebuilt by Runner.Rebuild from the same million
// generated events, read back from a boltstore (boltHistory's cached file,
// opened read-only) and from a pgstore (a throwaway pgtest cluster, filled
// once per process through the store's own Append, whose large groups go
// by COPY). Each iteration first reads every event in the runner's pages
// without decoding them (read-events/s: the store alone, which also warms
// the page cache), then times the rebuild, and reports its wall time and
// the CPU time this process spent on it. Run with -benchtime=1x.
//
// The generated events are dropped once the store holds them, before any
// rebuild: a process that rebuilds holds no copy of its store, and a
// million events in memory (more than a gigabyte, full of pointers) are
// marked by every collection the rebuild runs, which cost it about a
// second of CPU here. Each sub-benchmark loads them for itself.
func BenchmarkRebuild1MStores(b *testing.B) {
	b.Run("bolt", func(b *testing.B) {
		evs := generated(b, 1_000_000)
		path, n := boltHistory(b, evs), len(evs)
		evs = nil // see above
		store, err := boltstore.Open(path, boltstore.ReadOnly())
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		benchRebuildStore(b, store, n, nil)
	})
	b.Run("postgres", func(b *testing.B) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		srv, err := pgtest.Start(ctx)
		cancel()
		if err != nil {
			if errors.Is(err, pgtest.ErrNoPostgres) && !pgtest.InCI() {
				b.Skipf("pgtest: SKIPPED: %v", err)
			}
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close() }) // after the database's own cleanup
		store, err := pgstore.Open(context.Background(), srv.Database(b))
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		evs := generated(b, 1_000_000)
		n := len(evs)
		start := time.Now()
		fillWindows(b, store, evs)
		evs = nil // see above
		b.Logf("filled the pgstore with %d events in %s", n, time.Since(start).Round(time.Second))
		if _, err := store.Pool().Exec(context.Background(), "VACUUM ANALYZE events"); err != nil {
			b.Fatal(err)
		}
		postmaster := filepath.Join(filepath.Dir(srv.Log()), "data", "postmaster.pid")
		server := func() time.Duration { return serverCPU(b, postmaster) }
		// The runner reads a store that scans (events.Scanner) with ScanAll;
		// read-all is the same rebuild through ReadAll, which copies every
		// payload, for the comparison in one run.
		b.Run("scan", func(b *testing.B) { benchRebuildStore(b, store, n, server) })
		b.Run("read-all", func(b *testing.B) { benchRebuildStore(b, readAllOnly{store}, n, server) })
	})
}

// readAllOnly is a store without its ScanAll: the runner reads it with
// ReadAll.
type readAllOnly struct{ events.Store }

// serverCPU is the CPU time (user and system) a PostgreSQL cluster has
// used, read from /proc: its postmaster's, its live backends' (the
// postmaster's children) and that of the backends it has reaped. The file
// pidFile is the cluster's postmaster.pid. 0 where /proc cannot tell.
func serverCPU(b *testing.B, pidFile string) time.Duration {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		b.Logf("server CPU: %v", err)
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	root, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		b.Logf("server CPU: %s: %v", pidFile, err)
		return 0
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, path := range procs {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ... utime stime cutime cstime: fields 1, 4, 14 to 17.
		_, rest, ok := strings.Cut(string(raw), ") ")
		if !ok {
			continue
		}
		f := strings.Fields(rest) // from field 3 (state)
		if len(f) < 15 {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(string(raw))[0])
		ppid, _ := strconv.Atoi(f[1])
		if pid != root && ppid != root {
			continue
		}
		for _, i := range []int{11, 12} { // utime, stime
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
		if pid == root {
			for _, i := range []int{13, 14} { // cutime, cstime: reaped backends
				n, _ := strconv.ParseInt(f[i], 10, 64)
				ticks += n
			}
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ, 100 on Linux
}

// fillWindows appends evs to store (boltHistory's file, the PostgreSQL copy): windows of 4,096
// consecutive events, each window's events one append per stream, the
// streams of a window at once (the store commits them as one group).
func fillWindows(b *testing.B, store events.Store, evs []events.Event) {
	ctx := context.Background()
	for i := 0; i < len(evs); i += 4096 {
		window := evs[i:min(i+4096, len(evs))]
		var order []string
		by := map[string][]events.Event{}
		for _, ev := range window {
			if by[ev.Stream] == nil {
				order = append(order, ev.Stream)
			}
			by[ev.Stream] = append(by[ev.Stream], ev)
		}
		var wg sync.WaitGroup
		errs := make([]error, len(order))
		for k, stream := range order {
			wg.Go(func() { _, errs[k] = store.Append(ctx, stream, events.Any, by[stream]...) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU time (user and system) this process has used: on a
// machine shared with other work, a rebuild's CPU time says more than its
// wall time. (A pgstore's server does its part in other processes.)
func cpuTime() time.Duration {
	user, sys := cpuTimes()
	return user + sys
}

// cpuTimes is cpuTime in its two parts: user and system (the kernel's
// work for this process: page faults, system calls).
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// watchPeak samples the memory the process has mapped for its heap
// (runtime/metrics: the heap's classes but what was released) every 20 ms
// until the function it returns is called, which returns the highest seen.
func watchPeak() (stop func() uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	mapped := func() uint64 {
		metrics.Read(samples)
		return samples[0].Value.Uint64() - samples[1].Value.Uint64()
	}
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		peak := mapped()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				peak = max(peak, mapped())
			case <-done:
				result <- max(peak, mapped())
				return
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-result
	}
}

// minorFaults is how many minor page faults the process has taken: each
// is a page of fresh memory the kernel zeroes and maps, in the process's
// system time.
func minorFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}

// rebuildProfile starts a CPU profile of the rebuild alone (not of the
// corpus load nor of the read pass, which -cpuprofile would include) when
// MESH_REBUILD_CPUPROFILE names a file, and returns what stops it. Do not
// combine it with -cpuprofile: a process has one CPU profile at a time.
//
// MESH_REBUILD_MEMPROFILE likewise names a file for the heap profile after
// the rebuild, and writes one before it (the name with ".before"): compare
// them with go tool pprof -sample_index=alloc_space -diff_base.
func rebuildProfile(b *testing.B) (stop func()) {
	heap := os.Getenv("MESH_REBUILD_MEMPROFILE")
	writeHeap := func(path string) {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	if heap != "" {
		writeHeap(heap + ".before")
	}
	path := os.Getenv("MESH_REBUILD_CPUPROFILE")
	if path == "" {
		return func() {
			if heap != "" {
				writeHeap(heap)
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if heap != "" {
			writeHeap(heap)
		}
	}
}

// benchRebuildStore times a read-only pass over store and Runner.Rebuild
// of every projection from it, n events each. server, if not nil, is the
// CPU time the store's server has used: the rebuild's share is reported.
func benchRebuildStore(b *testing.B, store events.Store, n int, server func() time.Duration) {
	ctx := context.Background()
	runner := projections.NewRunner(store, events.NewRegistry(), projections.New().All()...)
	var readTime, rebuildTime, rebuildCPU, rebuildSys, serverTime time.Duration
	var allocMB, liveMB float64
	var gcs uint32
	var faults int64
	var peakMB float64
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var after uint64
		read := 0
		for {
			page, err := store.ReadAll(ctx, after, projections.PageSize)
			if err != nil {
				b.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			read += len(page)
			after = page[len(page)-1].Position
		}
		readTime += time.Since(start)
		if read != n {
			b.Fatalf("read %d events, stored %d", read, n)
		}

		var srvStart time.Duration
		if server != nil {
			srvStart = server()
		}
		// Each rebuild starts from a collected heap: otherwise how far the
		// read pass took the heap towards its next GC decides whether the
		// rebuild runs two or three (each marks the corpus too), which
		// moved rebuild-cpu-s by a second from run to run. Its memory goes
		// back to the system too, so that the rebuild maps fresh pages as
		// a process rebuilding at its start does: reusing the read pass's
		// spared it some 280,000 page faults (a second of system time).
		debug.FreeOSMemory()
		peak := watchPeak()
		stopProfile := rebuildProfile(b)
		var mem0, mem1 runtime.MemStats
		runtime.ReadMemStats(&mem0)
		_, sys := cpuTimes()
		flt := minorFaults()
		start, cpu := time.Now(), cpuTime()
		if err := runner.Rebuild(ctx); err != nil {
			b.Fatal(err)
		}
		rebuildTime += time.Since(start)
		rebuildCPU += cpuTime() - cpu
		_, sys1 := cpuTimes()
		rebuildSys += sys1 - sys
		faults += minorFaults() - flt
		peakMB = max(peakMB, float64(peak())/1e6)
		runtime.ReadMemStats(&mem1)
		stopProfile()
		runtime.GC()
		var live runtime.MemStats
		runtime.ReadMemStats(&live)
		liveMB = float64(live.HeapAlloc) / 1e6
		allocMB += float64(mem1.TotalAlloc-mem0.TotalAlloc) / 1e6
		gcs += mem1.NumGC - mem0.NumGC
		if server != nil {
			serverTime += server() - srvStart
		}
		if runner.Position() != uint64(n) {
			b.Fatalf("rebuilt to position %d of %d", runner.Position(), n)
		}
	}
	b.StopTimer()
	total := float64(n) * float64(b.N)
	b.ReportMetric(rebuildTime.Seconds()/float64(b.N), "rebuild-s")
	b.ReportMetric(total/rebuildTime.Seconds(), "rebuild-events/s")
	b.ReportMetric(rebuildCPU.Seconds()/float64(b.N), "rebuild-cpu-s")
	b.ReportMetric(rebuildSys.Seconds()/float64(b.N), "rebuild-sys-s")
	b.ReportMetric(float64(faults)/float64(b.N), "rebuild-minor-faults")
	if server != nil {
		b.ReportMetric(serverTime.Seconds()/float64(b.N), "server-cpu-s")
	}
	b.ReportMetric(allocMB/float64(b.N), "rebuild-alloc-MB")
	b.ReportMetric(float64(gcs)/float64(b.N), "rebuild-GCs")
	b.ReportMetric(liveMB, "live-MB")
	b.ReportMetric(peakMB, "peak-MB")
	b.ReportMetric(total/readTime.Seconds(), "read-events/s")
	b.ReportMetric(rebuildTime.Seconds()/readTime.Seconds(), "rebuild/read")
}
