package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meshplane/agent"
)

func TestOutboxKeepsUndeliveredAcrossRestart(t *testing.T) {
	opens := map[string]func(t *testing.T) (first *agent.Outbox, reopen func() *agent.Outbox){
		"directory": func(t *testing.T) (*agent.Outbox, func() *agent.Outbox) {
			dir := t.TempDir()
			open := func() *agent.Outbox {
				o, err := agent.OpenOutbox(dir)
				if err != nil {
					t.Fatalf("open outbox: %v", err)
				}
				return o
			}
			return open(), open
		},
		"memory": func(t *testing.T) (*agent.Outbox, func() *agent.Outbox) {
			o := agent.NewMemOutbox()
			return o, func() *agent.Outbox {
				r, err := o.Reopen()
				if err != nil {
					t.Fatalf("reopen: %v", err)
				}
				return r
			}
		},
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			fx := newFixture(t)
			box, reopen := open(t)
			fx.ag = fx.agent(t, box)
			cut := errors.New("nats: connection closed")
			fx.sink.setCut(cut)

			var applied []string
			for i, d := range []string{"novox/1", "novox/2", "novox/3"} {
				r := fx.apply(t, decl(d, forge("/srv/forge")...))
				applied = append(applied, r.Outcome.ApplyID)
				if !r.Kept {
					t.Fatalf("%s: undelivered report not marked kept", d)
				}
				// Each apply retries from the oldest: the first report has
				// been tried once per apply so far.
				pending, err := fx.ag.Pending()
				if err != nil || len(pending) != i+1 || pending[0].Attempts != i+1 || !strings.Contains(pending[0].LastError, "connection closed") {
					t.Fatalf("after %s: pending %+v (%v)", d, pending, err)
				}
			}
			if _, err := fx.ag.Flush(context.Background()); !errors.Is(err, agent.ErrUndelivered) || !errors.Is(err, cut) {
				t.Fatalf("flush with the bus cut: %v, want ErrUndelivered wrapping the cause", err)
			}
			wantMade := fx.ag.State().Made

			// Restart: a new agent over the same outbox.
			fx.ag = fx.agent(t, reopen())
			if got := fx.ag.State().Made; !slices.Equal(got, wantMade) || len(got) == 0 {
				t.Fatalf("state after restart %v, want %v", got, wantMade)
			}
			fx.sink.setCut(nil)
			n, err := fx.ag.Flush(context.Background())
			if err != nil || n != 3 {
				t.Fatalf("flush after restore: %d, %v", n, err)
			}
			got := fx.sink.reports()
			var order []string
			for _, r := range got {
				order = append(order, r.Outcome.ApplyID)
			}
			if !slices.Equal(order, applied) {
				t.Fatalf("delivered %v, want once each in apply order %v", order, applied)
			}
			if got[0].Attempts != 4 || got[2].Attempts != 2 || got[0].LastError == "" {
				t.Fatalf("late deliveries carry attempts %d, %d (last error %q)", got[0].Attempts, got[2].Attempts, got[0].LastError)
			}
			// Exactly once: nothing left, a second flush delivers nothing.
			if n, err := fx.ag.Flush(context.Background()); n != 0 || err != nil {
				t.Fatalf("second flush: %d, %v", n, err)
			}
			if p, _ := fx.ag.Pending(); len(p) != 0 || len(fx.sink.reports()) != 3 {
				t.Fatalf("after flush: %d pending, %d delivered", len(p), len(fx.sink.reports()))
			}
			// The next apply is delivered at once.
			r := fx.apply(t, decl("novox/4", forge("/srv/forge")...))
			if r.Kept || r.Attempts != 0 || len(fx.sink.reports()) != 4 {
				t.Fatalf("apply after restore: kept %v, %d delivered", r.Kept, len(fx.sink.reports()))
			}
		})
	}
}

func TestFlushHonoursCancelledContext(t *testing.T) {
	fx := newFixture(t)
	fx.sink.setCut(errors.New("down"))
	fx.apply(t, decl("novox/1"))
	fx.sink.setCut(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fx.ag.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("flush: %v, want context.Canceled", err)
	}
	p, _ := fx.ag.Pending()
	if len(p) != 1 || p[0].Attempts != 1 {
		t.Fatalf("a cancelled flush counted as an attempt: %+v", p)
	}
}

// The directory holds one log, every line of it JSON and its checksum
// (cat reads it); a leftover temporary file is removed on open; a record
// that does not decode is passed over, named in the log with why, and the
// others are kept.
func TestOutboxDirectoryFormat(t *testing.T) {
	dir := t.TempDir()
	box, err := agent.OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t)
	fx.ag = fx.agent(t, box)
	fx.sink.setCut(errors.New("down"))
	fx.apply(t, decl("novox/1", forge("/srv/forge")...))
	// A crash mid-write leaves a temporary file; opening removes it.
	if err := os.WriteFile(filepath.Join(dir, ".tmp-outbox.log-x"), []byte("{half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.OpenOutbox(dir); err != nil {
		t.Fatalf("open with a leftover temp: %v", err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	var base []string
	for _, n := range names {
		base = append(base, filepath.Base(n))
	}
	if want := []string{"outbox.log"}; !slices.Equal(base, want) {
		t.Fatalf("outbox holds %v, want %v", base, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "outbox.log"))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		i := strings.LastIndex(line, " crc32c ")
		var rec struct {
			Version int    `json:"version"`
			Op      string `json:"op"`
		}
		if i < 0 || len(line)-i != len(" crc32c ")+8 || json.Unmarshal([]byte(line[:i]), &rec) != nil || rec.Version != 3 {
			t.Fatalf("not a line of JSON and its checksum: %q", line)
		}
		if sum := fmt.Sprintf("%08x", crc32.Checksum([]byte(line[:i]), crc32.MakeTable(crc32.Castagnoli))); sum != line[i+8:] {
			t.Fatalf("checksum %s, want %s: %q", line[i+8:], sum, line)
		}
		ops = append(ops, rec.Op)
	}
	// The header, the apply (its report and state in one record), its
	// failed round.
	if want := []string{"log", "put", "fail"}; !slices.Equal(ops, want) {
		t.Fatalf("records %v, want %v", ops, want)
	}
	// A record that checks but does not decode as one is passed over: the
	// log as found copied aside, the record named in the log with why.
	body := `{"version":3,"op":"put","report":{"outcome":{"node":"novox"}}}`
	line := fmt.Sprintf("%s crc32c %08x\n", body, crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
	f, err := os.OpenFile(filepath.Join(dir, "outbox.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var log bytes.Buffer
	again, err := agent.OpenOutbox(dir, agent.OutboxLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatalf("open with a corrupt record: %v", err)
	}
	if p, err := again.Pending(); err != nil || len(p) != 1 || again.PassedOver() != 1 {
		t.Fatalf("pending beside a corrupt record: %d reports (%v), %d passed over; want 1 and 1", len(p), err, again.PassedOver())
	}
	if _, err := os.Stat(filepath.Join(dir, "outbox.log.damaged")); err != nil {
		t.Errorf("the log was not copied aside: %v", err)
	}
	if l := log.String(); !strings.Contains(l, "file=outbox.log") || !strings.Contains(l, "copied_to=outbox.log.damaged") ||
		!strings.Contains(l, "line 4") || !strings.Contains(l, "put record without seq") {
		t.Errorf("the log does not say what was passed over and why: %s", l)
	}
}

// An apply costs one durable write: one record (its report and the State)
// appended; its delivery one more, not synced (an ack). A delivered log
// that grows past its bound is compacted to its header and state.
func TestOutboxOneRecordAnApply(t *testing.T) {
	dir := t.TempDir()
	box, err := agent.OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t)
	fx.ag = fx.agent(t, box)
	lines := func() int {
		b, err := os.ReadFile(filepath.Join(dir, "outbox.log"))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("\n"))
	}
	before := lines()
	fx.apply(t, decl("novox/1", forge("/srv/forge")...))
	if got := lines() - before; got != 2 {
		t.Fatalf("an apply delivered at once added %d records, want 2 (put, ack)", got)
	}
	// Past its bound (1 MiB; 16 KiB here) with nothing pending, the log
	// is compacted.
	defer agent.SetCompactBytes(16 << 10)()
	for i := 0; ; i++ {
		fx.apply(t, decl(fmt.Sprintf("novox/%d", i+2), forge("/srv/forge")...))
		if fi, err := os.Stat(filepath.Join(dir, "outbox.log")); err != nil || fi.Size() > 20<<10 {
			t.Fatalf("the log grew past its bound: %v", err)
		}
		if lines() == 2 {
			break // compacted: the header and the state
		}
		if i > 1000 {
			t.Fatal("the log was never compacted")
		}
	}
	again, err := agent.OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := again.LoadState(); !slices.Equal(st.Made, fx.ag.State().Made) || st.Last.Declaration != fx.ag.State().Last.Declaration {
		t.Fatalf("state after compaction %+v, want %+v", st, fx.ag.State())
	}
}

// A state.json written before State.Last (no "last") loads as a state with
// nothing to name: the next report carries its held list in full. One with
// it loads it back.
func TestStateFileWithAndWithoutLast(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		heldIn     string
	}{
		{"before last", `{"version":1,"made":["/srv/b","/srv/a"]}`, ""},
		{"with last", `{"version":1,"made":["/srv/a"],"last":{"declaration":"novox/3","held_in":"0193a6c1-7b2e-7c00-8000-000000000009","held":[{"name":"ca","module":"route-proxy","reason":"found"}]}}`,
			"0193a6c1-7b2e-7c00-8000-000000000009"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			box, err := agent.OpenOutbox(dir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := box.LoadState()
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Made) == 0 || st.Last.HeldIn != tc.heldIn || (tc.heldIn != "") != (len(st.Last.Held) == 1) {
				t.Fatalf("loaded %+v", st)
			}
			if err := box.SaveState(st); err != nil {
				t.Fatal(err)
			}
			again, err := box.LoadState()
			if err != nil || again.Last.HeldIn != st.Last.HeldIn || again.Last.Declaration != st.Last.Declaration {
				t.Fatalf("saved and loaded again: %+v, %v", again, err)
			}
		})
	}
}
