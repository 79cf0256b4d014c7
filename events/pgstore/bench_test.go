package pgstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
	"meshplane/events/storetest"
)

// BenchmarkRaw is the ceiling for BenchmarkStore: the same rows (same
// columns, same payload, same batches, same writers) written to a bare
// table (no key, no index, no constraint) on the same server, with nothing
// else: no lock, no version or id check, no validation. Each batch is one
// statement in its own implicit transaction, so one commit (synchronous,
// fsync on) per batch:
//
//   - insert/batch=B/writers=W: one multi-row INSERT of B rows;
//   - copy/batch=B/writers=W: one COPY of B rows;
//   - readall: storetest.ReadAllEvents rows read back with one sequential
//     scan, each row's values touched, not decoded; readall+decode decodes
//     each row into an events.Event as the store does.
//
// Sub-benchmarks and the events/s metric mirror storetest.Bench.
func BenchmarkRaw(b *testing.B) {
	for _, mode := range []string{"insert", "copy"} {
		for _, batch := range []int{1, 100} {
			for _, writers := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/batch=%d/writers=%d", mode, batch, writers), func(b *testing.B) {
					benchRawAppend(b, mode, batch, writers)
				})
			}
		}
	}
	b.Run("readall", func(b *testing.B) { benchRawReadAll(b, false) })
	b.Run("readall+decode", func(b *testing.B) { benchRawReadAll(b, true) })
}

// openRaw makes a fresh database holding the bare table and returns a pool
// on it, with a connection for each writer.
func openRaw(b *testing.B, writers int) *pgxpool.Pool {
	pgtest.Need(b, srv)
	url := srv.Database(b)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = int32(max(writers, 4))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE raw_events (
		position bigint, id uuid, stream text, version bigint, type text, schema integer,
		at_ns bigint, actor text, causation text, correlation text, data bytea, chain bytea)`); err != nil {
		b.Fatal(err)
	}
	// raw_keyed is raw_events with the store's three unique keys (position,
	// id, stream and version), and nothing else of the store's.
	if _, err := pool.Exec(ctx, `CREATE TABLE raw_keyed (LIKE raw_events,
		PRIMARY KEY (position), UNIQUE (id), UNIQUE (stream, version))`); err != nil {
		b.Fatal(err)
	}
	return pool
}

// rawGroups is a raw group commit, a ceiling of the store's shape: writers
// hand their rows to one goroutine, which writes whatever is queued (a
// group) with one COPY into raw_keyed on one connection, in one implicit
// transaction, and answers them all. No lock, no check, no chain, no
// validation: what is left is one backend writing keyed rows one group at
// a time, as the store's positions must be written.
type rawGroups struct {
	reqs chan rawGroupReq
	stop chan struct{}
	done chan struct{}
}

type rawGroupReq struct {
	rows [][]any
	done chan error
}

func startRawGroups(b *testing.B, pool *pgxpool.Pool) *rawGroups {
	g := &rawGroups{reqs: make(chan rawGroupReq, 64), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		for {
			var first rawGroupReq
			select {
			case first = <-g.reqs:
			case <-g.stop:
				return
			}
			group := []rawGroupReq{first}
			rows := first.rows
		gather:
			for {
				select {
				case r := <-g.reqs:
					group = append(group, r)
					rows = append(rows[:len(rows):len(rows)], r.rows...)
				default:
					break gather
				}
			}
			_, err := pool.CopyFrom(context.Background(), pgx.Identifier{"raw_keyed"}, rowColumns, pgx.CopyFromRows(rows))
			for _, r := range group {
				r.done <- err
			}
		}
	}()
	b.Cleanup(func() { close(g.stop); <-g.done })
	return g
}

// write queues rows and waits for their group's commit.
func (g *rawGroups) write(rows [][]any) error {
	r := rawGroupReq{rows: rows, done: make(chan error, 1)}
	g.reqs <- r
	return <-r.done
}

// rawChain is the raw rows' chain value: 32 bytes, as the store's rows
// carry, not computed.
var rawChain = make([]byte, 32)

// rawRow is a bench event's row, with the position as its version too.
func rawRow(stream string, pos int64) []any {
	return []any{pos, [16]byte(events.NewID()), stream, pos, events.TypeApplyReported, int32(1),
		time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.UTC).UnixNano(), "agent:novox", "", "push-42",
		[]byte(storetest.BenchPayload), rawChain}
}

// insertSQL is a multi-row INSERT of n rows of the twelve columns.
func insertSQL(n int) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO raw_events (" + readColumns + ") VALUES ")
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for j := range len(rowColumns) {
			if j > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "$%d", i*len(rowColumns)+j+1)
		}
		sb.WriteByte(')')
	}
	return sb.String()
}

func benchRawAppend(b *testing.B, mode string, batch, writers int) {
	pool := openRaw(b, writers)
	ctx := context.Background()
	sql := insertSQL(batch)
	var pos atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			stream := fmt.Sprintf("node-bench%02d", w)
			rows := make([][]any, batch)
			args := make([]any, 0, batch*len(rowColumns))
			for next.Add(1) <= int64(b.N) {
				first := pos.Add(int64(batch)) - int64(batch)
				args = args[:0]
				for i := range rows {
					rows[i] = rawRow(stream, first+int64(i)+1)
					args = append(args, rows[i]...)
				}
				var err error
				if mode == "copy" {
					_, err = pool.CopyFrom(ctx, pgx.Identifier{"raw_events"}, rowColumns, pgx.CopyFromRows(rows))
				} else {
					_, err = pool.Exec(ctx, sql, args...)
				}
				if err != nil {
					b.Errorf("raw %s: %v", mode, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
}

func benchRawReadAll(b *testing.B, decode bool) {
	pool := openRaw(b, 1)
	ctx := context.Background()
	const fill = 1000
	rows := make([][]any, fill)
	for done := 0; done < storetest.ReadAllEvents; done += fill {
		for i := range rows {
			rows[i] = rawRow("node-bench00", int64(done+i+1))
		}
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"raw_events"}, rowColumns, pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE raw_events"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	sink := 0
	for range b.N {
		rs, err := pool.Query(ctx, "SELECT "+readColumns+" FROM raw_events")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		var buf arena
		for rs.Next() {
			raw := rs.RawValues()
			if decode {
				e, err := decodeRow(raw, nil)
				if err != nil {
					b.Fatal(err)
				}
				e.Data = buf.copy(raw[10])
				sink += len(e.Data)
			} else {
				for _, v := range raw {
					sink += len(v)
				}
			}
			n++
		}
		if err := rs.Err(); err != nil {
			b.Fatal(err)
		}
		if n != storetest.ReadAllEvents {
			b.Fatalf("read %d rows, stored %d", n, storetest.ReadAllEvents)
		}
	}
	b.StopTimer()
	if sink == 0 {
		b.Fatal("read nothing")
	}
	b.ReportMetric(float64(b.N)*storetest.ReadAllEvents/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkPaired measures the store and its ceilings in alternation,
// rounds of one second each (5 rounds unless PAIRED_ROUNDS says otherwise),
// so that load from outside the benchmark, which drifts from second to
// second on a shared machine, falls on all alike. The ceilings: the raw
// INSERT and the raw COPY (raw_events, no key), the raw INSERT into
// raw_keyed (the store's three unique keys), and rawGroups (one backend,
// the keys, one COPY a group: the store's shape without the store). The workload is
// storetest.Bench's (W writers, each on its own stream, appending batches
// of B apply.reported events, events.Any). Run it with -benchtime=1x: one
// iteration is all the rounds. It reports events/s for the store and each
// ceiling, and the store's share of each.
func BenchmarkPaired(b *testing.B) {
	rounds := 5
	if v, err := strconv.Atoi(os.Getenv("PAIRED_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for _, batch := range []int{1, 100} {
		for _, writers := range []int{1, 8} {
			b.Run(fmt.Sprintf("batch=%d/writers=%d", batch, writers), func(b *testing.B) {
				pgtest.Need(b, srv)
				st := openURL(b, srv.Database(b))
				pool := openRaw(b, writers+1)
				sql := insertSQL(batch)
				keyedSQL := strings.Replace(sql, "raw_events", "raw_keyed", 1)
				groups := startRawGroups(b, pool)
				var pos atomic.Int64
				var sum [5]struct {
					n int
					d time.Duration
				}
				// run has writers append for a second and returns the events appended.
				run := func(mode int) (int, time.Duration) {
					ctx := context.Background()
					var total atomic.Int64
					var wg sync.WaitGroup
					start := time.Now()
					stop := start.Add(time.Second)
					for w := range writers {
						wg.Go(func() {
							stream := fmt.Sprintf("node-bench%02d", w)
							evs := make([]events.Event, batch)
							rows := make([][]any, batch)
							args := make([]any, 0, batch*len(rowColumns))
							for time.Now().Before(stop) {
								var err error
								switch mode {
								case 0:
									for i := range evs {
										evs[i] = events.Event{ID: events.NewID(), Type: events.TypeApplyReported, Schema: 1,
											At: time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.UTC), Actor: "agent:novox",
											Correlation: "push-42", Data: storetest.BenchPayload}
									}
									_, err = st.Append(ctx, stream, events.Any, evs...)
								default:
									first := pos.Add(int64(batch)) - int64(batch)
									args = args[:0]
									for i := range rows {
										rows[i] = rawRow(stream, first+int64(i)+1)
										args = append(args, rows[i]...)
									}
									switch mode {
									case 1:
										_, err = pool.Exec(ctx, sql, args...)
									case 2:
										_, err = pool.CopyFrom(ctx, pgx.Identifier{"raw_events"}, rowColumns, pgx.CopyFromRows(rows))
									case 3:
										_, err = pool.Exec(ctx, keyedSQL, args...)
									case 4:
										err = groups.write(rows)
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
				b.ReportMetric(rate(1), "insert-events/s")
				b.ReportMetric(rate(2), "copy-events/s")
				b.ReportMetric(rate(0)/rate(1), "store/insert")
				b.ReportMetric(rate(0)/rate(2), "store/copy")
				b.ReportMetric(rate(3), "keyed-insert-events/s")
				b.ReportMetric(rate(4), "group-copy-events/s")
				b.ReportMetric(rate(0)/rate(3), "store/keyed-insert")
				b.ReportMetric(rate(0)/rate(4), "store/group-copy")
			})
		}
	}
}
