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

// TestOutboxDamagedFiles damages, in copies of an outbox holding three
// undelivered reports and the agent's state, each report file and the
// state file (20 truncations, 20 bit flips each), and opens each copy as a
// restarted agent would: the outbox always opens and the agent starts;
// every report it still holds is exactly the one written; a damaged file
// is never silently lost: it is moved aside (NAME.damaged) and the log
// names it and why; a damaged state reads as empty, never as another.
func TestOutboxDamagedFiles(t *testing.T) {
	orig := t.TempDir()
	box, err := agent.OpenOutbox(orig)
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t)
	fx.ag = fx.agent(t, box)
	fx.sink.setCut(errors.New("down"))
	for _, d := range []string{"novox/1", "novox/2", "novox/3"} {
		fx.apply(t, decl(d, forge("/srv/forge")...))
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
	names, err := os.ReadDir(orig)
	if err != nil {
		t.Fatal(err)
	}
	var passed int
	for _, n := range names {
		file := n.Name()
		good, err := os.ReadFile(filepath.Join(orig, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range outboxDamages(len(good)) {
			t.Run(file+"/"+d.name, func(t *testing.T) {
				dir := t.TempDir()
				for _, m := range names {
					b, err := os.ReadFile(filepath.Join(orig, m.Name()))
					if err != nil {
						t.Fatal(err)
					}
					if m.Name() == file {
						b = d.do(bytes.Clone(good))
					}
					if err := os.WriteFile(filepath.Join(dir, m.Name()), b, 0o600); err != nil {
						t.Fatal(err)
					}
				}
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
				for _, r := range pending {
					if !slices.ContainsFunc(wantReports, func(w agent.Report) bool { return asJSON(w) == asJSON(r) }) {
						t.Errorf("a report the outbox never held: %+v", r)
					}
				}
				st := ag.State()
				stateKept := asJSON(st) == asJSON(wantState)
				if !stateKept && asJSON(st) != asJSON(agent.State{}) {
					t.Errorf("the state read as %+v, neither the one saved nor empty", st)
				}
				lost := len(pending) < len(wantReports) || !stateKept
				if !lost {
					return
				}
				passed++
				if box.PassedOver() != 1 {
					t.Errorf("%d files passed over, want 1", box.PassedOver())
				}
				if _, err := os.Stat(filepath.Join(dir, file+".damaged")); err != nil {
					t.Errorf("%s was not moved aside: %v", file, err)
				}
				if l := log.String(); !strings.Contains(l, "passed over a damaged file") || !strings.Contains(l, "file="+file) || !strings.Contains(l, "reason=") {
					t.Errorf("the log does not name %s and why: %s", file, l)
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
	}
	t.Logf("%d damaged copies passed a file over", passed)
}
