package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/events"
)

// A mesh file naming a node x..y is refused before anything is written:
// exit 3, and no store in the data directory.
func TestUpRefusesABadNameBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mesh.yaml")
	if err := os.WriteFile(file, []byte("nodes:\n  - {name: x..y, modules: [forge]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out, errOut := mesh(t, "up", "--data", data, "--passes", "1", "--modules", "../../examples/modules", "--mesh", file)
	if code != exitRejected || !strings.Contains(errOut, `nodes[0].name: node name "x..y": byte 1 is '.'`) {
		t.Fatalf("exit %d, want 3 naming the rule\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(data, "events.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused mesh file left a store behind (%v)", err)
	}
}

// Running up again over the same data appends no operator events, and the
// simulated nodes' fresh runtimes are no churn loop.
func TestUpAgain(t *testing.T) {
	dir := upExample(t)
	code, out, errOut := mesh(t, "up", "--data", dir, "--passes", "2", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	_, churn, _ := mesh(t, "churn", "--data", dir)
	if !strings.HasPrefix(churn, "no churn") {
		t.Fatalf("churn after a second up:\n%s", churn)
	}
	_, tl, _ := mesh(t, "timeline", "--data", dir, "--type", "module.defined")
	if n := strings.Count(tl, "module.defined"); n != 3 {
		t.Fatalf("%d module.defined events after two ups, want 3:\n%s", n, tl)
	}
	if !strings.Contains(out, "set-up: 15 of 15 command(s) found their work already done, nothing to do") {
		t.Fatalf("a second up does not say its set-up was already done:\n%s", out)
	}
}

// mesh up writes to a user's store with the wall clock: a second run's
// events follow the first's, and every one is dated now, not at the
// simulator's epoch.
func TestUpUsesTheWallClock(t *testing.T) {
	dir := t.TempDir()
	var evs []events.Event
	for i := range 2 {
		var out, errOut bytes.Buffer
		args := []string{"up", "--data", dir, "--passes", "2", "--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml"}
		if code := run(context.Background(), args, &out, &errOut); code != exitOK {
			t.Fatalf("run %d: exit %d\n%s%s", i+1, code, out.String(), errOut.String())
		}
		all := readAll(t, dir)
		if len(all) <= len(evs) {
			t.Fatalf("run %d appended nothing", i+1)
		}
		evs = all
	}
	now := time.Now()
	subMicro := false
	for i, ev := range evs {
		if d := now.Sub(ev.At); d < 0 || d > time.Minute {
			t.Errorf("#%d %s at %s: %s before now, want within a minute", ev.Position, ev.Type, ev.At, d)
		}
		if ev.At.Location() != time.UTC {
			t.Errorf("#%d %s at %s: not UTC", ev.Position, ev.Type, ev.At)
		}
		if i > 0 && ev.At.Before(evs[i-1].At) {
			t.Errorf("#%d %s at %s is before #%d at %s", ev.Position, ev.Type, ev.At, evs[i-1].Position, evs[i-1].At)
		}
		subMicro = subMicro || ev.At.Nanosecond()%1000 != 0
	}
	if !subMicro {
		t.Errorf("no event of %d has a time finer than a microsecond: nanoseconds are lost", len(evs))
	}
}
