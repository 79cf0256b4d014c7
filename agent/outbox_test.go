package agent_test

import (
	"bytes"
	"context"
	"errors"
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
	if err := os.WriteFile(filepath.Join(dir, ".tmp-report-x"), []byte("{half"), 0o600); err != nil {
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
	want := []string{"report-00000000000000000001.json", "state.json"}
	if !slices.Equal(base, want) {
		t.Fatalf("outbox holds %v, want %v", base, want)
	}
	// A corrupt report is passed over: moved aside, named in the log; the
	// others are kept.
	if err := os.WriteFile(filepath.Join(dir, "report-00000000000000000002.json"), []byte(`{"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	again, err := agent.OpenOutbox(dir, agent.OutboxLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatalf("open with a corrupt entry: %v", err)
	}
	if p, err := again.Pending(); err != nil || len(p) != 1 || again.PassedOver() != 1 {
		t.Fatalf("pending beside a corrupt entry: %d reports (%v), %d passed over; want 1 and 1", len(p), err, again.PassedOver())
	}
	if _, err := os.Stat(filepath.Join(dir, "report-00000000000000000002.json.damaged")); err != nil {
		t.Errorf("the corrupt entry was not moved aside: %v", err)
	}
	if l := log.String(); !strings.Contains(l, "file=report-00000000000000000002.json") || !strings.Contains(l, "moved_to=report-00000000000000000002.json.damaged") ||
		!strings.Contains(l, "seq missing") {
		t.Errorf("the log does not say what was passed over and why: %s", l)
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
