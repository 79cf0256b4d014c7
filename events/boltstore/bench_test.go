package boltstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/events/storetest"
)

func rawEvent(stream string) events.Event {
	return events.Event{
		ID: events.NewID(), Stream: stream, Type: events.TypeApplyReported, Schema: 1,
		At:    time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.UTC),
		Actor: "agent:novox", Correlation: "push-42", Data: storetest.BenchPayload,
	}
}

// BenchmarkRawBolt is the ceiling for BenchmarkBoltstore: bbolt alone
// writing the same records (same sizes, same batches, 8-byte sequential
// keys, FillPercent 1.0, one Update and so one commit with fsync per batch,
// no index) and reading them back with a cursor, without decoding.
// Sub-benchmarks and the events/s metric mirror storetest.Bench.
func BenchmarkRawBolt(b *testing.B) {
	for _, batch := range []int{1, 100} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("append/batch=%d/writers=%d", batch, writers), func(b *testing.B) {
				benchRawAppend(b, batch, writers)
			})
		}
	}
	b.Run("readall", func(b *testing.B) { benchRawReadAll(b, false, events.AppendRecord) })
	b.Run("readall+decode", func(b *testing.B) { benchRawReadAll(b, true, events.AppendRecord) })
	// The same records in format 1, without their checksum: the difference
	// is what checking it costs a full read.
	b.Run("readall+decode-plain", func(b *testing.B) {
		benchRawReadAll(b, true, func(_ []byte, e events.Event) []byte { return plainRecord(e) })
	})
}

// BenchmarkOpenReadOnly measures Open (ReadOnly) and Close of a store of
// storetest.ReadAllEvents events, and between them: tail, a read of the
// last 1,000 events (a CLI call resuming from a snapshot), which walks only
// the pages it reaches (walktail.go); whole-walk, the walk of every page of
// the file, which every read-only Open did before (and a writer's Open and
// the first ReadStream still do).
func BenchmarkOpenReadOnly(b *testing.B) {
	path := filepath.Join(b.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	batch := make([]events.Event, 1000)
	for done := 0; done < storetest.ReadAllEvents; done += len(batch) {
		for i := range batch {
			batch[i] = rawEvent("")
		}
		if _, err := s.Append(ctx, fmt.Sprintf("node-bench%02d", done/len(batch)%8), events.Any, batch...); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		read func(*Store) error
	}{
		{"tail", func(s *Store) error {
			_, err := s.ReadAll(ctx, storetest.ReadAllEvents-1000, 0)
			return err
		}},
		{"whole-walk", func(s *Store) error { return s.lazy.all() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				s, err := Open(path, ReadOnly())
				if err != nil {
					b.Fatal(err)
				}
				if err := tc.read(s); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkFsync measures the disk under the benchmarks: one 4 KiB write at
// the end of a file, then fsync, per op. A bbolt commit syncs twice (its
// pages, then its meta page), so this bounds commits per second.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync.dat"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	b.ResetTimer()
	for i := range b.N {
		if _, err := f.WriteAt(page, int64(i)*4096); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "syncs/s")
}

func openRaw(b *testing.B) *bolt.DB {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucketEvents); return err }); err != nil {
		b.Fatal(err)
	}
	return db
}

// rawPut writes records in one Update under the next positions.
func rawPut(db *bolt.DB, head *uint64, recs [][]byte) error {
	return db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketEvents)
		bk.FillPercent = fillSequential
		for _, r := range recs {
			*head++
			if err := bk.Put(u64key(*head), r); err != nil {
				return err
			}
		}
		return nil
	})
}

// rawKeyedPut is rawPut with the store's index entries, in the store's
// buckets (a fresh file of its layout: initLayout): per record its chain
// value (32 bytes of zeros, not computed: appendChainValue's size), its
// stream version (a bucket per stream, as the store keeps them) and its
// id, each to its position, then the head in meta. What is left of the
// store is none of its checks (no id or version read, no Prepare, no
// chain hashed) and no hand-off to a committer.
func rawKeyedPut(db *bolt.DB, head *uint64, stream string, evs []events.Event, recs [][]byte) error {
	return db.Update(func(tx *bolt.Tx) error {
		bk, chain, ids := tx.Bucket(bucketEvents), tx.Bucket(bucketChain), tx.Bucket(bucketIDs)
		bk.FillPercent, chain.FillPercent, ids.FillPercent = fillSequential, fillSequential, fillIDs
		sb, err := tx.Bucket(bucketStreams).CreateBucketIfNotExists([]byte(stream))
		if err != nil {
			return err
		}
		sb.FillPercent = fillSequential
		version := sb.Sequence()
		var zero events.Hash
		for i, r := range recs {
			*head++
			version++
			pos := u64key(*head)
			if err := bk.Put(pos, r); err != nil {
				return err
			}
			if err := chain.Put(pos, appendChainValue(nil, *head, zero)); err != nil {
				return err
			}
			if err := sb.Put(u64key(version), pos); err != nil {
				return err
			}
			if err := ids.Put(evs[i].ID[:], pos); err != nil {
				return err
			}
		}
		if err := sb.SetSequence(version); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(metaHead, u64key(*head))
	})
}

// openRawKeyed opens a fresh bbolt file with the store's buckets.
func openRawKeyed(b *testing.B) *bolt.DB {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "keyed.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, _, err := initLayout(tx); return err }); err != nil {
		b.Fatal(err)
	}
	return db
}

func benchRawAppend(b *testing.B, batch, writers int) {
	db := openRaw(b)
	defer db.Close()
	var head uint64 // guarded by bbolt's writer lock
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			stream := fmt.Sprintf("node-bench%02d", w)
			recs := make([][]byte, batch)
			for next.Add(1) <= int64(b.N) {
				for i := range recs {
					// Version and position of the size the store writes.
					e := rawEvent(stream)
					e.Version, e.Position = uint64(b.N), uint64(b.N)
					recs[i] = events.AppendRecord(nil, e)
				}
				if err := rawPut(db, &head, recs); err != nil {
					b.Errorf("raw put: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
}

// benchRawReadAll reads every record with a cursor, in the pages storetest
// reads; with decode, each is also decoded with events.DecodeRecord, which
// is the ceiling for the store's ReadAll.
func benchRawReadAll(b *testing.B, decode bool, appendRecord func([]byte, events.Event) []byte) {
	db := openRaw(b)
	defer db.Close()
	var head uint64
	const fill = 1000
	recs := make([][]byte, fill)
	for done := 0; done < storetest.ReadAllEvents; done += fill {
		for i := range recs {
			e := rawEvent("node-bench00")
			e.Version, e.Position = uint64(done+i+1), uint64(done+i+1)
			recs[i] = appendRecord(nil, e)
		}
		if err := rawPut(db, &head, recs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var sink int
	for range b.N {
		// Pages as storetest reads them: a read transaction and a Seek each.
		var after uint64
		for after < storetest.ReadAllEvents {
			if err := db.View(func(tx *bolt.Tx) error {
				c := tx.Bucket(bucketEvents).Cursor()
				n := 0
				for k, v := c.Seek(u64key(after + 1)); k != nil && n < storetest.ReadAllPage; k, v = c.Next() {
					sink += len(v)
					if decode {
						e, err := events.DecodeRecord(v)
						if err != nil {
							return err
						}
						sink += len(e.Data)
					}
					after = binary.BigEndian.Uint64(k)
					n++
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if sink == 0 {
		b.Fatal("read nothing")
	}
	b.ReportMetric(float64(b.N)*storetest.ReadAllEvents/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkPaired measures the store and its ceilings, raw bbolt writing the
// same record bytes (benchRawAppend's) and the same with the store's index
// entries (rawKeyedPut), in alternation, rounds of one
// second each (5 rounds unless PAIRED_ROUNDS says otherwise), so that load
// from outside the benchmark, which drifts from second to second on a
// shared machine, falls on both alike. The workload is storetest.Bench's
// (W writers, each on its own stream, appending batches of B
// apply.reported events, events.Any). Run it with -benchtime=1x: one
// iteration is all the rounds. It reports events/s for each and the
// store's share of each ceiling's.
func BenchmarkPaired(b *testing.B) {
	rounds := 5
	if v, err := strconv.Atoi(os.Getenv("PAIRED_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for _, batch := range []int{1, 100} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("batch=%d/writers=%d", batch, writers), func(b *testing.B) {
				st, err := Open(filepath.Join(b.TempDir(), "events.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				db := openRaw(b)
				defer db.Close()
				keyed := openRawKeyed(b)
				defer keyed.Close()
				var head, keyedHead uint64 // raw bbolt's, guarded by each file's writer lock
				var seq atomic.Uint64      // the raw records' versions and positions, of the sizes the store writes
				var sum [3]struct {
					n int
					d time.Duration
				}
				// run has writers append for a second and returns the events appended.
				run := func(mode int) (int, time.Duration) {
					var total atomic.Int64
					var wg sync.WaitGroup
					start := time.Now()
					stop := start.Add(time.Second)
					for w := range writers {
						wg.Go(func() {
							stream := fmt.Sprintf("node-bench%02d", w)
							evs := make([]events.Event, batch)
							recs := make([][]byte, batch)
							for time.Now().Before(stop) {
								var err error
								if mode == 0 {
									for i := range evs {
										evs[i] = rawEvent("")
									}
									_, err = st.Append(b.Context(), stream, events.Any, evs...)
								} else {
									for i := range recs {
										e := rawEvent(stream)
										e.Version = seq.Add(1)
										e.Position = e.Version
										evs[i] = e
										recs[i] = events.AppendRecord(nil, e)
									}
									if mode == 1 {
										err = rawPut(db, &head, recs)
									} else {
										err = rawKeyedPut(keyed, &keyedHead, stream, evs, recs)
									}
								}
								if err != nil {
									b.Errorf("mode %d: %v", mode, err)
									return
								}
								total.Add(int64(batch))
							}
						})
					}
					wg.Wait()
					return int(total.Load()), time.Since(start)
				}
				for range b.N {
					for range rounds {
						for mode := range sum {
							n, d := run(mode)
							sum[mode].n += n
							sum[mode].d += d
						}
					}
				}
				rate := func(m int) float64 { return float64(sum[m].n) / sum[m].d.Seconds() }
				b.ReportMetric(rate(0), "store-events/s")
				b.ReportMetric(rate(1), "raw-events/s")
				b.ReportMetric(rate(0)/rate(1), "store/raw")
				b.ReportMetric(rate(2), "keyed-events/s")
				b.ReportMetric(rate(0)/rate(2), "store/keyed")
			})
		}
	}
}
