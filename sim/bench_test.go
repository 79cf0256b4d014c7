package sim_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// generated returns at least n events made by running sim.DefaultWorkload
// (composing and applying a generated mesh, with its faults), cached in the
// user cache directory because making a million takes minutes. Set
// MESH_BENCH_REGEN=1 to make them afresh.
func generated(b *testing.B, n uint64) []events.Event {
	b.Helper()
	sum := sha256.Sum256([]byte(fmt.Sprintf("v4 %d %+v %s", n, sim.DefaultWorkload, strings.Join(events.NewRegistry().Types(), ","))))
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, "meshplane", "bench-"+hex.EncodeToString(sum[:8])+".rec")
	if os.Getenv("MESH_BENCH_REGEN") == "" {
		if evs, err := readRecords(path); err == nil {
			return evs
		} else if !errors.Is(err, os.ErrNotExist) {
			b.Logf("cache %s unreadable (%v): generating afresh", path, err)
		}
	}
	start := time.Now()
	store := memstore.New()
	defer store.Close()
	m := sim.New(store)
	if err := m.Generate(context.Background(), sim.DefaultWorkload, n); err != nil {
		b.Fatal(err)
	}
	evs, err := store.ReadAll(context.Background(), 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d events in %s; caching them in %s", len(evs), time.Since(start).Round(time.Second), path)
	if err := writeRecords(path, evs); err != nil {
		b.Logf("could not cache: %v", err)
	}
	return evs
}

func writeRecords(path string, evs []events.Event) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "bench-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriter(f)
	var buf []byte
	for _, ev := range evs {
		buf = events.AppendRecord(buf[:0], ev)
		var n [binary.MaxVarintLen64]byte
		w.Write(n[:binary.PutUvarint(n[:], uint64(len(buf)))])
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func readRecords(path string) ([]events.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var evs []events.Event
	var buf []byte
	for {
		n, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return nil, err
		}
		buf = append(buf[:0], make([]byte, n)...)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		ev, err := events.DecodeRecord(buf)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
}

// decodeParallel reads every event in pages and decodes the pages on
// GOMAXPROCS goroutines, as the runner's catch-up does, without folding.
func decodeParallel(b *testing.B, store events.Store, reg *events.Registry) {
	pages := make(chan []events.Event, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for page := range pages {
				for _, ev := range page {
					if _, err := reg.Decode(ev); err != nil && !errors.Is(err, events.ErrUnknownType) {
						panic(err)
					}
				}
			}
		}()
	}
	var after uint64
	for {
		page, err := store.ReadAll(context.Background(), after, projections.PageSize)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		pages <- page
		after = page[len(page)-1].Position
	}
	close(pages)
	wg.Wait()
}

// BenchmarkRebuild1M rebuilds every projection from a million generated
// events in a memstore, and, in the same iteration, makes a decode-only pass
// over the same events (read them all in pages and decode every payload) as
// the baseline: once on one goroutine, once on GOMAXPROCS goroutines as the
// runner decodes. It reports the rates and the ratios of the times.
func BenchmarkRebuild1M(b *testing.B) {
	evs := generated(b, 1_000_000)
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	for _, ev := range evs {
		if _, err := store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			b.Fatal(err)
		}
	}
	reg := events.NewRegistry()
	views := projections.New()
	runner := projections.NewRunner(store, reg, views.All()...)
	var decodeTime, parTime, rebuildTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		decodeParallel(b, store, reg)
		parTime += time.Since(start)

		start = time.Now()
		var after uint64
		for {
			page, err := store.ReadAll(ctx, after, projections.PageSize)
			if err != nil {
				b.Fatal(err)
			}
			for _, ev := range page {
				if _, err := reg.Decode(ev); err != nil && !errors.Is(err, events.ErrUnknownType) {
					b.Fatal(err)
				}
				after = ev.Position
			}
			if len(page) < projections.PageSize {
				break
			}
		}
		decodeTime += time.Since(start)

		start = time.Now()
		if err := runner.Rebuild(ctx); err != nil {
			b.Fatal(err)
		}
		rebuildTime += time.Since(start)
	}
	n := float64(len(evs)) * float64(b.N)
	b.ReportMetric(n/rebuildTime.Seconds(), "rebuild-events/s")
	b.ReportMetric(n/decodeTime.Seconds(), "decode-events/s")
	b.ReportMetric(n/parTime.Seconds(), "pardecode-events/s")
	b.ReportMetric(rebuildTime.Seconds()/decodeTime.Seconds(), "rebuild/decode")
	b.ReportMetric(rebuildTime.Seconds()/parTime.Seconds(), "rebuild/pardecode")
	b.ReportMetric(float64(len(evs)), "events")
}
