package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
	"meshplane/events/internal/groupcommit"
)

func openTemp(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "events.db"), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testAt is the time of test events: a re-append must carry the same time
// to be the same content.
var testAt = time.Date(2026, 9, 29, 22, 46, 0, 123456789, time.UTC)

func ev(typ string, data string) events.Event {
	return events.Event{ID: events.NewID(), Type: typ, Schema: 1, At: testAt, Data: json.RawMessage(data)}
}

func evN(n int, tag string) []events.Event {
	out := make([]events.Event, n)
	for i := range out {
		out[i] = ev("test.n", fmt.Sprintf(`{"tag":%q,"i":%d}`, tag, i))
	}
	return out
}

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()

	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"default timeout", 0},
		{"short timeout", 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []Option
			if tc.timeout > 0 {
				opts = append(opts, WithLockTimeout(tc.timeout))
			}
			start := time.Now()
			s2, err := Open(path, opts...)
			took := time.Since(start)
			if err == nil {
				s2.Close()
				t.Fatal("second Open of a locked file succeeded")
			}
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("second Open: %v, want an error wrapping ErrLocked", err)
			}
			for _, want := range []string{path, "locked by another process"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if took > 5*time.Second {
				t.Errorf("second Open took %v to fail", took)
			}
		})
	}

	// Once the first store is closed, the file opens again.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s3, err := Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s3.Close()
}

func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a bolt file ", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	// A bolt file of another layout.
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(metaLayout, u64key(7))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, tc := range []struct {
		name string
		path string
		opts []Option
		want string
	}{
		{"not a bolt file", garbage, nil, garbage},
		{"another layout", other, nil, "unknown layout"},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "x.db"), nil, "no such file"},
		{"zero lock timeout", filepath.Join(dir, "a.db"), []Option{WithLockTimeout(0)}, "lock timeout must be positive"},
		{"nil clock", filepath.Join(dir, "b.db"), []Option{WithClock(nil)}, "clock is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path, tc.opts...)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("Open: %q, want it to name %q and the file", err, tc.want)
			}
		})
	}
}

func TestAppendAfterFailedAppend(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	first := evN(2, "first")
	if _, err := s.Append(ctx, "node-a", events.NoStream, first...); err != nil {
		t.Fatalf("Append: %v", err)
	}
	conflict := first[0]
	conflict.Data = json.RawMessage(`{"other":true}`)

	for _, tc := range []struct {
		name     string
		stream   string
		expected events.ExpectedVersion
		evs      []events.Event
		want     error
	}{
		{"wrong version", "node-a", events.Exactly(1), evN(1, "x"), events.ErrWrongExpectedVersion},
		{"no stream on a stream", "node-a", events.NoStream, evN(1, "x"), events.ErrWrongExpectedVersion},
		{"id with other content", "node-a", events.Any, []events.Event{conflict}, events.ErrIDConflict},
		{"stored and new ids mixed", "node-a", events.Any, append([]events.Event{first[0]}, evN(1, "x")...), events.ErrIDConflict},
		{"new then stored id", "node-a", events.Any, append(evN(1, "x"), first[1]), events.ErrIDConflict},
		{"empty stream", "", events.Any, evN(1, "x"), events.ErrInvalid},
		{"no events", "node-a", events.Any, nil, events.ErrInvalid},
		{"data not an object", "node-a", events.Any, []events.Event{ev("t", `[1]`)}, events.ErrInvalid},
		{"invalid expectation", "node-a", events.ExpectedVersion(-7), evN(1, "x"), events.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head, _ := s.Head(ctx)
			_, err := s.Append(ctx, tc.stream, tc.expected, tc.evs...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Append: %v, want %v", err, tc.want)
			}
			if h, _ := s.Head(ctx); h != head {
				t.Fatalf("failed append moved head from %d to %d", head, h)
			}
			// The next append works, at the next position.
			got, err := s.Append(ctx, "node-a", events.Any, ev("test.after", `{}`))
			if err != nil {
				t.Fatalf("append after a failed one: %v", err)
			}
			if got[0].Position != head+1 {
				t.Errorf("append after a failed one at position %d, want %d", got[0].Position, head+1)
			}
		})
	}
	checkDense(t, s)
}

// checkDense checks the store's invariants from outside: positions 1..head,
// every stream's versions 1..n, and ReadStream agreeing with ReadAll.
func checkDense(t *testing.T, s *Store) []events.Event {
	t.Helper()
	ctx := context.Background()
	all, err := s.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	head, _ := s.Head(ctx)
	if uint64(len(all)) != head {
		t.Fatalf("ReadAll: %d events, head %d", len(all), head)
	}
	byStream := map[string][]events.Event{}
	for i, e := range all {
		if e.Position != uint64(i+1) {
			t.Fatalf("ReadAll[%d] at position %d", i, e.Position)
		}
		byStream[e.Stream] = append(byStream[e.Stream], e)
	}
	for stream, want := range byStream {
		got, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil {
			t.Fatalf("ReadStream(%s): %v", stream, err)
		}
		if len(got) != len(want) {
			t.Fatalf("ReadStream(%s): %d events, ReadAll has %d", stream, len(got), len(want))
		}
		for i := range got {
			if got[i].Version != uint64(i+1) || !got[i].SameContent(want[i]) || got[i].Position != want[i].Position {
				t.Fatalf("ReadStream(%s)[%d] = %s, ReadAll has %s", stream, i, got[i], want[i])
			}
		}
	}
	return all
}

// TestGroupSemantics drives one group through the writer directly, so that
// what a group does does not depend on timing.
func TestGroupSemantics(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	stored := evN(2, "stored")
	if _, err := s.Append(ctx, "node-s", events.NoStream, stored...); err != nil {
		t.Fatal(err)
	}
	a1, a2, b1 := evN(2, "a1"), evN(1, "a2"), evN(3, "b1")
	clash := a1[0]
	clash.Data = json.RawMessage(`{"clash":1}`)

	type want struct {
		err       error
		versions  []uint64
		positions []uint64
	}
	steps := []struct {
		name     string
		stream   string
		expected events.ExpectedVersion
		evs      []events.Event
		want     want
	}{
		{"new stream", "node-a", events.NoStream, a1, want{nil, []uint64{1, 2}, []uint64{3, 4}}},
		{"sees the request before it", "node-a", events.Exactly(2), a2, want{nil, []uint64{3}, []uint64{5}}},
		{"stale expectation refused", "node-a", events.Exactly(2), evN(1, "stale"), want{err: events.ErrWrongExpectedVersion}},
		{"id of an earlier request, other content", "node-a", events.Any, []events.Event{clash}, want{err: events.ErrIDConflict}},
		{"other stream unaffected", "node-b", events.Any, b1, want{nil, []uint64{1, 2, 3}, []uint64{6, 7, 8}}},
		{"re-append of an earlier request is a no-op", "node-a", events.NoStream, a1, want{nil, []uint64{1, 2}, []uint64{3, 4}}},
		{"re-append of a stored batch is a no-op", "node-s", events.Exactly(9), stored, want{nil, []uint64{1, 2}, []uint64{1, 2}}},
		{"after refusals, positions go on", "node-a", events.Exactly(3), evN(1, "last"), want{nil, []uint64{4}, []uint64{9}}},
	}
	group := make([]*groupcommit.Request, len(steps))
	for i, st := range steps {
		p, err := events.Prepare(st.stream, st.evs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		group[i] = &groupcommit.Request{Stream: st.stream, Expected: st.expected, Events: p}
	}
	// The store's writer is idle: this test is the only writer.
	w := writer{db: s.db, store: s}
	results, head, err := w.commit(group)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if head != 9 {
		t.Errorf("head after the group: %d, want 9", head)
	}
	for i, st := range steps {
		r := results[i]
		if !errors.Is(r.Err, st.want.err) || (r.Err != nil) != (st.want.err != nil) {
			t.Errorf("%s: err %v, want %v", st.name, r.Err, st.want.err)
			continue
		}
		if r.Err != nil {
			if r.Events != nil {
				t.Errorf("%s: refused, yet returned %d events", st.name, len(r.Events))
			}
			continue
		}
		if len(r.Events) != len(st.evs) {
			t.Errorf("%s: %d events returned, want %d", st.name, len(r.Events), len(st.evs))
			continue
		}
		for j, e := range r.Events {
			if e.Version != st.want.versions[j] || e.Position != st.want.positions[j] || e.ID != st.evs[j].ID {
				t.Errorf("%s: event %d is %s id %s, want version %d position %d id %s",
					st.name, j, e, e.ID, st.want.versions[j], st.want.positions[j], st.evs[j].ID)
			}
		}
	}
	// What the group wrote is on disk, and nothing of what it refused.
	s.head.Store(head)
	all := checkDense(t, s)
	if len(all) != 9 {
		t.Fatalf("%d events stored, want 9", len(all))
	}
	for _, e := range all {
		if strings.Contains(string(e.Data), "stale") || strings.Contains(string(e.Data), "clash") {
			t.Errorf("refused event stored: %s %s", e, e.Data)
		}
	}
}

func TestGroupCommitFailureFailsEveryRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, _, err := initLayout(tx); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close() // every Update now fails
	var group []*groupcommit.Request
	for i, stream := range []string{"a", "b", "a"} {
		p, err := events.Prepare(stream, evN(i+1, stream), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, &groupcommit.Request{Stream: stream, Expected: events.Any, Events: p})
	}
	w := writer{db: db, store: &Store{}}
	results, head, err := w.commit(group)
	if err == nil || results != nil || head != 0 {
		t.Fatalf("commit on a closed file: results %v, head %d, err %v; want no results and an error", results, head, err)
	}
}

func TestConcurrentAppendsOneStream(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	const writers, appends = 8, 25

	t.Run("any version", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, writers*appends)
		for w := range writers {
			wg.Go(func() {
				for i := range appends {
					n := 1 + (w+i)%3
					got, err := s.Append(ctx, "node-any", events.Any, evN(n, fmt.Sprintf("w%d-%d", w, i))...)
					if err != nil {
						errs <- err
						return
					}
					// A batch is contiguous in its stream and in the store.
					for j := 1; j < len(got); j++ {
						if got[j].Version != got[0].Version+uint64(j) || got[j].Position != got[0].Position+uint64(j) {
							errs <- fmt.Errorf("batch not contiguous: %s then %s", got[0], got[j])
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		checkDense(t, s)
	})

	t.Run("exact version, retried", func(t *testing.T) {
		// Optimistic writers: each reads the version and appends at it;
		// every version is won by exactly one of them.
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := map[uint64]string{}
		for w := range writers {
			wg.Go(func() {
				for i := 0; i < appends; {
					cur, err := s.ReadStream(ctx, "node-exact", 0, 0)
					if err != nil {
						t.Error(err)
						return
					}
					tag := fmt.Sprintf("w%d-%d", w, i)
					got, err := s.Append(ctx, "node-exact", events.Exactly(uint64(len(cur))), evN(1, tag)...)
					if errors.Is(err, events.ErrWrongExpectedVersion) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, dup := won[got[0].Version]; dup {
						t.Errorf("version %d won by %s and %s", got[0].Version, prev, tag)
					}
					won[got[0].Version] = tag
					mu.Unlock()
					i++
				}
			})
		}
		wg.Wait()
		if len(won) != writers*appends {
			t.Errorf("%d versions won, want %d", len(won), writers*appends)
		}
		checkDense(t, s)
	})
}

func TestClockAndCancel(t *testing.T) {
	at := time.Date(2026, 9, 29, 22, 46, 0, 1, time.FixedZone("CEST", 7200))
	s := openTemp(t, WithClock(func() time.Time { return at }))
	zero := ev("t", `{}`)
	zero.At = time.Time{}
	got, err := s.Append(context.Background(), "node-a", events.Any, zero)
	if err != nil {
		t.Fatal(err)
	}
	if !got[0].At.Equal(at) || got[0].At.Location() != time.UTC {
		t.Errorf("At = %v, want %v in UTC", got[0].At, at)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Append(ctx, "node-a", events.Any, ev("t", `{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a cancelled ctx: %v", err)
	}
	if h, _ := s.Head(context.Background()); h != 1 {
		t.Errorf("head %d after a cancelled append, want 1", h)
	}
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	if _, err := s.Append(ctx, "node-a", events.Any, evN(3, "a")...); err != nil {
		t.Fatal(err)
	}
	subErr := make(chan error, 1)
	seen := make(chan struct{}, 3)
	go func() {
		subErr <- s.Subscribe(ctx, 0, func(events.Event) error {
			select {
			case seen <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	for range 3 {
		<-seen
	}
	// Writers racing Close either land or get ErrClosed; none hangs.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, err := s.Append(ctx, fmt.Sprintf("node-%d", w), events.Any, evN(1, "x")...)
				if errors.Is(err, events.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("append racing Close: %v", err)
					return
				}
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	if err := <-subErr; !errors.Is(err, events.ErrClosed) {
		t.Errorf("Subscribe after Close: %v, want ErrClosed", err)
	}
	for name, call := range map[string]func() error{
		"Append":     func() error { _, err := s.Append(ctx, "a", events.Any, ev("t", `{}`)); return err },
		"ReadAll":    func() error { _, err := s.ReadAll(ctx, 0, 0); return err },
		"ReadStream": func() error { _, err := s.ReadStream(ctx, "a", 0, 0); return err },
		"Head":       func() error { _, err := s.Head(ctx); return err },
		"Subscribe":  func() error { return s.Subscribe(ctx, 0, func(events.Event) error { return nil }) },
	} {
		if err := call(); !errors.Is(err, events.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestCorruptFile checks that damage found on disk is an error naming what
// is wrong, never an empty or short answer.
func TestCorruptFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(tx *bolt.Tx) error
		openErr string // the error Open gives, if it refuses the file
		readErr string // else the error the reads give
		allOK   bool   // ReadAll does not see this damage (it reads no index)
		isInval bool   // whether the read errors wrap events.ErrInvalid
	}{
		{
			name:    "garbage record",
			damage:  func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Put(u64key(2), []byte{3, 1, 2, 3}) },
			readErr: "record at position 2: corrupt record",
			isInval: true,
		},
		{
			name: "one bit flipped in a record",
			damage: func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketEvents)
				rec := bytes.Clone(b.Get(u64key(2)))
				rec[20] ^= 0x10
				return b.Put(u64key(2), rec)
			},
			readErr: "record at position 2: corrupt record: checksum mismatch",
			isInval: true,
		},
		{
			name: "a record without its checksum, in a file whose records all have one",
			damage: func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketEvents)
				e, err := events.DecodeRecord(b.Get(u64key(2)))
				if err != nil {
					return err
				}
				e.Data = json.RawMessage(`{"tag":"forged"}`)
				return b.Put(u64key(2), plainRecord(e))
			},
			readErr: "record at position 2 is format 1",
		},
		{
			name: "record under the wrong key",
			damage: func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketEvents)
				return b.Put(u64key(2), append([]byte(nil), b.Get(u64key(3))...))
			},
			readErr: "record at position 2 says position 3",
		},
		{
			name: "stream index to a missing position",
			damage: func(tx *bolt.Tx) error {
				return tx.Bucket(bucketStreams).Bucket([]byte("node-a")).Put(u64key(2), u64key(99))
			},
			readErr: "position 99, which is not stored",
			allOK:   true,
		},
		{
			name:    "head beyond the events",
			damage:  func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(metaHead, u64key(5)) },
			openErr: "meta head is 5, last event is at position 3",
		},
		{
			name:    "a hole in the positions",
			damage:  func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Delete(u64key(2)) },
			readErr: "position 2",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(context.Background(), "node-a", events.NoStream, evN(3, "a")...); err != nil {
				t.Fatal(err)
			}
			s.Close()
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(tc.damage); err != nil {
				t.Fatal(err)
			}
			db.Close()
			if rep, err := Verify(context.Background(), path); err != nil || rep.OK() {
				t.Errorf("Verify: %+v, %v; want damage found", rep, err)
			} else {
				t.Logf("verify: %q", rep.Damage)
			}

			s, err = Open(path)
			if tc.openErr != "" {
				if err == nil {
					s.Close()
					t.Fatal("Open accepted the damaged file")
				}
				if !strings.Contains(err.Error(), tc.openErr) || !strings.Contains(err.Error(), path) {
					t.Errorf("Open: %q, want it to name %q and the file", err, tc.openErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			_, errAll := s.ReadAll(context.Background(), 0, 0)
			_, errStream := s.ReadStream(context.Background(), "node-a", 0, 0)
			reads := map[string]error{"ReadAll": errAll, "ReadStream": errStream}
			if tc.allOK {
				if errAll != nil {
					t.Errorf("ReadAll: %v", errAll)
				}
				delete(reads, "ReadAll")
			}
			for what, err := range reads {
				if err == nil {
					t.Errorf("%s of a damaged file: no error", what)
					continue
				}
				if !strings.Contains(err.Error(), tc.readErr) {
					t.Errorf("%s: %q, want it to name %q", what, err, tc.readErr)
				}
				if !errors.Is(err, events.ErrDamaged) {
					t.Errorf("%s: %v, want it to wrap ErrDamaged", what, err)
				}
				if tc.isInval && !errors.Is(err, events.ErrInvalid) {
					t.Errorf("%s: %v, want it to wrap ErrInvalid", what, err)
				}
			}
		})
	}
}

// plainRecord is e in record format 1, as files of layout 1 hold it
// (events/record.go documents the format).
func plainRecord(e events.Event) []byte {
	b := append([]byte{events.RecordFormatPlain}, e.ID[:]...)
	b = binary.AppendUvarint(b, e.Version)
	b = binary.AppendUvarint(b, e.Position)
	b = binary.AppendUvarint(b, uint64(e.Schema))
	b = binary.AppendVarint(b, e.At.UnixNano())
	for _, s := range [...]string{e.Stream, e.Type, e.Actor, e.Causation, e.Correlation} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Data)))
	return append(b, e.Data...)
}
