package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
)

func event(typ string) events.Event {
	return events.Event{ID: events.NewID(), Type: typ, Schema: 1,
		At: time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.UTC), Data: json.RawMessage(`{}`)}
}

// foreignInsert inserts a row as a writer that bypasses the append lock
// would: another program, or a build without it.
func foreignInsert(ctx context.Context, url string, position int64, id uuid.UUID, stream string, version int64) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO events (`+columns+`)
		VALUES ($1, $2, $3, $4, 'test.foreign', 1, 0, '', '', '', '{}')`, position, [16]byte(id), stream, version)
	return err
}

// TestUniqueViolationIsNeverSuccess: a writer that bypasses the lock takes
// the version (or the id) an append is about to write, between its checks
// and its insert. The append fails with the contract's error, carrying the
// stream's actual version, and writes nothing.
func TestUniqueViolationIsNeverSuccess(t *testing.T) {
	pgtest.Need(t, srv)
	cases := []struct {
		name     string
		expected events.ExpectedVersion
		takeID   bool // the foreign row takes the appended event's id instead of its version
		want     error
	}{
		{"exactly the version", events.Exactly(1), false, events.ErrWrongExpectedVersion},
		{"any version", events.Any, false, events.ErrWrongExpectedVersion},
		{"the id", events.Exactly(1), true, events.ErrIDConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.Database(t)
			ctx := testCtx(t, time.Minute)
			ev := event("test.raced")
			var armed bool
			hook := func(ctx context.Context) error {
				if !armed {
					return nil
				}
				armed = false
				if tc.takeID {
					return foreignInsert(ctx, url, 1_000_000, ev.ID, "node-other", 1)
				}
				return foreignInsert(ctx, url, 1_000_000, events.NewID(), "node-novox", 2)
			}
			s := openURL(t, url, func(c *config) { c.beforeWrite = hook })
			if _, err := s.Append(ctx, "node-novox", events.NoStream, event("test.first")); err != nil {
				t.Fatal(err)
			}
			armed = true
			got, err := s.Append(ctx, "node-novox", tc.expected, ev)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Append raced by a foreign writer: got %v, %v; want %v", got, err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "pgstore: append node-novox: ") {
				t.Errorf("error %q does not name the store and the stream", err)
			}
			var ve *events.VersionError
			if errors.Is(tc.want, events.ErrWrongExpectedVersion) {
				if !errors.As(err, &ve) || ve.Actual != 2 || ve.Stream != "node-novox" || ve.Expected != tc.expected {
					t.Errorf("error %v: want a *VersionError for node-novox, expected %s, actual 2", err, tc.expected)
				}
			}
			evs, err := s.ReadStream(ctx, "node-novox", 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.ID == ev.ID {
					t.Errorf("the refused event was stored: %s", e)
				}
			}
		})
	}
}

// TestTimesKeepNanoseconds: every instant the contract allows comes back
// exactly, to the nanosecond, in UTC.
func TestTimesKeepNanoseconds(t *testing.T) {
	pgtest.Need(t, srv)
	s := openURL(t, srv.Database(t))
	ctx := testCtx(t, time.Minute)
	cases := []struct {
		name string
		at   time.Time
	}{
		{"nanoseconds", time.Date(2026, 9, 29, 22, 46, 1, 987654321, time.FixedZone("EDT", -4*60*60))},
		{"one nanosecond", time.Unix(0, 1)},
		{"before 1970", time.Unix(-1, 999_999_999)},
		{"earliest", time.Unix(0, math.MinInt64)},
		{"latest", time.Unix(0, math.MaxInt64)},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := event("test.dated")
			e.At = tc.at
			stream := "times-" + string(rune('a'+i))
			if _, err := s.Append(ctx, stream, events.NoStream, e); err != nil {
				t.Fatal(err)
			}
			got, err := s.ReadStream(ctx, stream, 0, 0)
			if err != nil || len(got) != 1 {
				t.Fatalf("ReadStream: %v, %v", got, err)
			}
			if !got[0].At.Equal(tc.at) || got[0].At.Location() != time.UTC || got[0].At.Nanosecond() != tc.at.UTC().Nanosecond() {
				t.Errorf("stored %s, read back %s (%s)", tc.at.Format(time.RFC3339Nano), got[0].At.Format(time.RFC3339Nano), got[0].At.Location())
			}
		})
	}
}

// TestLargeBatchThroughCopy: a batch past copyMin (written with COPY) and
// one below it (INSERT) store the same way, and a refused large batch
// writes nothing.
func TestLargeBatchThroughCopy(t *testing.T) {
	pgtest.Need(t, srv)
	s := openURL(t, srv.Database(t))
	ctx := testCtx(t, time.Minute)
	for i, n := range []int{copyMin - 1, copyMin, 5000} {
		stream := "batch-" + string(rune('a'+i))
		evs := make([]events.Event, n)
		for j := range evs {
			evs[j] = event("test.batch")
			evs[j].Data = json.RawMessage(`{"j":` + string(rune('0'+j%10)) + `}`)
			evs[j].Actor, evs[j].Causation, evs[j].Correlation = "agent:növox", "cause-ü", "push-42"
		}
		head, _ := s.Head(ctx)
		got, err := s.Append(ctx, stream, events.NoStream, evs...)
		if err != nil {
			t.Fatalf("append of %d: %v", n, err)
		}
		read, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(read) != n || len(got) != n {
			t.Fatalf("append of %d: returned %d, stored %d", n, len(got), len(read))
		}
		for j := range read {
			if !read[j].SameContent(got[j]) || read[j].Version != uint64(j+1) || read[j].Position != head+uint64(j+1) ||
				read[j].Chain.IsZero() || read[j].Chain != got[j].Chain {
				t.Fatalf("batch of %d, event %d: stored %s, appended %s", n, j, read[j], got[j])
			}
		}
		// The same batch again at a wrong version with one new id: refused whole.
		again := append([]events.Event{event("test.new")}, evs[1:]...)
		if _, err := s.Append(ctx, stream, events.Any, again...); !errors.Is(err, events.ErrIDConflict) {
			t.Errorf("mixed re-append of %d: %v, want ErrIDConflict", n, err)
		}
		if h, _ := s.Head(ctx); h != head+uint64(n) {
			t.Errorf("head %d after a refused batch, want %d", h, head+uint64(n))
		}
	}
}
