package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meshplane/agent"
)

// outboxDamages are truncations at 20 offsets and bit flips at 20 seeds
// (1 to 3 bits anywhere) of a file of size bytes.
func outboxDamages(size int) []struct {
	name string
	do   func([]byte) []byte
} {
	var ds []struct {
		name string
		do   func([]byte) []byte
	}
	seen := map[int]bool{}
	for i := range 20 {
		n := []int{0, 1, size - 1, size - 2, size - 9, size - 17, size - 18}[min(i, 6)]
		if i > 6 {
			n = (i - 6) * size / 14
		}
		if n < 0 || n >= size || seen[n] {
			continue
		}
		seen[n] = true
		ds = append(ds, struct {
			name string
			do   func([]byte) []byte
		}{fmt.Sprintf("truncated to %d", n), func(b []byte) []byte { return b[:n] }})
	}
	for seed := range uint64(20) {
		ds = append(ds, struct {
			name string
			do   func([]byte) []byte
		}{fmt.Sprintf("bits flipped, seed %d", seed), func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(seed, 11))
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
			}
			return b
		}})
	}
	return ds
}

// TestOutboxDamagedLog damages, in copies of an outbox whose log holds a
// delivered report, three undelivered ones (each with its failed rounds)
// and the agent's state after each apply, the log (20 truncations, 20 bit
// flips), and opens each copy as a restarted agent would: the outbox always
// opens and the agent starts; every report it still holds is one written,
// in apply order, with at most the attempts it had; the state is one the
// outbox saved (the last, or an earlier one when what followed it is lost)
// or empty, never one it never held. Damage is never silently lost: unless
// the cut falls exactly between two lines (which reads as the log was then,
// like a deleted legacy file), at least one record is passed over, the log
// as found is copied aside byte for byte (outbox.log.damaged), the log
// names each damaged record and why, and the rewritten log reopens with
// nothing to pass over.
func TestOutboxDamagedLog(t *testing.T) {
	orig := t.TempDir()
	box, err := agent.OpenOutbox(orig)
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t)
	fx.ag = fx.agent(t, box)
	written := []agent.Report{fx.apply(t, decl("novox/0", forge("/srv/forge")...))}
	states := []agent.State{{}, fx.ag.State()}
	fx.sink.setCut(errors.New("down"))
	for _, d := range []string{"novox/1", "novox/2", "novox/3"} {
		written = append(written, fx.apply(t, decl(d, forge("/srv/forge")...)))
		states = append(states, fx.ag.State())
	}
	wantReports, err := box.Pending()
	if err != nil || len(wantReports) != 3 {
		t.Fatalf("pending: %d, %v", len(wantReports), err)
	}
	wantState := fx.ag.State()
	if len(wantState.Made) == 0 {
		t.Fatal("no directory in the state")
	}
	asJSON := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// Where each report was written, and its attempts at the end.
	place := map[string]int{}
	attempts := map[string]int{}
	for i, r := range written {
		place[r.Outcome.ApplyID] = i
	}
	for _, r := range wantReports {
		attempts[r.Outcome.ApplyID] = r.Attempts
	}
	good, err := os.ReadFile(filepath.Join(orig, "outbox.log"))
	if err != nil {
		t.Fatal(err)
	}
	var passed int
	for _, d := range outboxDamages(len(good)) {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			bad := d.do(bytes.Clone(good))
			if err := os.WriteFile(filepath.Join(dir, "outbox.log"), bad, 0o600); err != nil {
				t.Fatal(err)
			}
			boundary := len(bad) > 0 && len(bad) < len(good) && bad[len(bad)-1] == '\n' && bytes.HasPrefix(good, bad)
			var log bytes.Buffer
			box, err := agent.OpenOutbox(dir, agent.OutboxLogger(slog.New(slog.NewTextHandler(&log, nil))))
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			fx := newFixture(t)
			ag := fx.agent(t, box) // loads the state
			pending, err := ag.Pending()
			if err != nil {
				t.Fatalf("pending: %v", err)
			}
			last := -1
			for _, r := range pending {
				i, ok := place[r.Outcome.ApplyID]
				if !ok || asJSON(r.Outcome) != asJSON(written[i].Outcome) || r.Attempts > attempts[r.Outcome.ApplyID] || i <= last {
					t.Errorf("a report the outbox never held, or out of order: %+v", r)
				}
				last = i
			}
			st := ag.State()
			if !slices.ContainsFunc(states, func(s agent.State) bool { return asJSON(s) == asJSON(st) }) {
				t.Errorf("the state read as %+v, none the outbox saved, nor empty", st)
			}
			if boundary {
				if box.PassedOver() != 0 {
					t.Errorf("a log cut between two lines: %d records passed over, want 0", box.PassedOver())
				}
			} else {
				passed++
				if box.PassedOver() < 1 {
					t.Errorf("damage passed over nothing")
				}
				if aside, err := os.ReadFile(filepath.Join(dir, "outbox.log.damaged")); err != nil || !bytes.Equal(aside, bad) {
					t.Errorf("the log as found was not copied aside whole: %v", err)
				}
				if l := log.String(); strings.Count(l, "passed over a damaged record") != box.PassedOver() || !strings.Contains(l, "file=outbox.log") || !strings.Contains(l, "reason=") {
					t.Errorf("the log does not name each of %d damaged records and why: %s", box.PassedOver(), l)
				}
				again, err := agent.OpenOutbox(dir)
				if err != nil || again.PassedOver() != 0 {
					t.Errorf("the rewritten log: %v, %d passed over", err, again.PassedOver())
				}
			}
			// The agent goes on: its next apply is kept and the
			// reports it held are delivered.
			fx.sink.setCut(nil)
			fx.ag = ag
			fx.apply(t, decl("novox/4", forge("/srv/forge")...))
			if got := len(fx.sink.reports()); got != len(pending)+1 {
				t.Errorf("delivered %d reports after the restart, want %d", got, len(pending)+1)
			}
		})
	}
	if passed == 0 {
		t.Fatal("no damaged copy passed a record over")
	}
	t.Logf("%d damaged copies passed a record over", passed)
}
