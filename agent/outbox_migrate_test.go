package agent

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meshplane/events"
)

// legacyDir writes an outbox directory as a build before the log left it:
// a version-1 report, a version-2 report with its attempts, a damaged
// version-2 report, and a version-2 state.json.
func legacyDir(t *testing.T) (dir string, ids []string) {
	t.Helper()
	dir = t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ids = []string{"01927c1e-7a4b-7c3d-8e5f-000000000001", "01927c1e-7a4b-7c3d-8e5f-000000000002"}
	v1, err := json.Marshal(entry{Version: legacyVersion, Seq: 4, Report: Report{Outcome: events.ApplyReported{Node: "novox", Declaration: "novox/1", ApplyID: ids[0]}}})
	if err != nil {
		t.Fatal(err)
	}
	write(entryName(4), v1)
	v2, err := encodeEntry(entry{Seq: 7, Report: Report{Outcome: events.ApplyReported{Node: "novox", Declaration: "novox/2", ApplyID: ids[1]}, Attempts: 3, LastError: "down"}})
	if err != nil {
		t.Fatal(err)
	}
	write(entryName(7), v2)
	bad := bytes.Clone(v2)
	bad[len(bad)/2] ^= 4
	write(entryName(9), bad)
	st, err := json.MarshalIndent(storedState{Version: entryVersion, Made: []string{"/srv/b", "/srv/a"}, Last: Last{Declaration: "novox/2"}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(statePrefix, seal(append(st, '\n')))
	return dir, ids
}

// An outbox directory of the legacy format (versions 1 and 2) is moved
// into the log when it opens: its sound reports kept in their order with
// their attempts, its state loaded, a damaged file moved aside as before,
// the legacy files gone; CheckOutbox reads it before and after.
func TestOutboxMigratesLegacyDirectory(t *testing.T) {
	dir, ids := legacyDir(t)
	c, err := CheckOutbox(dir)
	if err != nil || c.Reports != 2 || c.Legacy != 1 || len(c.Damaged) != 1 || !strings.HasPrefix(c.State, "sound") {
		t.Fatalf("check before the upgrade: %+v, %v", c, err)
	}
	var log bytes.Buffer
	o, err := OpenOutbox(dir, OutboxLogger(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := o.Pending()
	if len(p) != 2 || p[0].Outcome.ApplyID != ids[0] || p[1].Outcome.ApplyID != ids[1] || p[1].Attempts != 3 || p[1].LastError != "down" {
		t.Fatalf("pending after the upgrade: %+v", p)
	}
	if st, _ := o.LoadState(); !slices.Equal(st.Made, []string{"/srv/a", "/srv/b"}) || st.Last.Declaration != "novox/2" {
		t.Fatalf("state after the upgrade: %+v", st)
	}
	if o.PassedOver() != 1 || !strings.Contains(log.String(), "file="+entryName(9)) {
		t.Fatalf("the damaged file: %d passed over, log %s", o.PassedOver(), log.String())
	}
	names, _ := (&dirFiles{dir: dir}).list()
	if want := []string{logName, entryName(9) + damagedSuffix}; !slices.Equal(names, want) {
		t.Fatalf("after the upgrade the directory holds %v, want %v", names, want)
	}
	c, err = CheckOutbox(dir)
	if err != nil || c.Reports != 2 || len(c.Damaged) != 0 || c.State != "sound" || len(c.Aside) != 1 {
		t.Fatalf("check after the upgrade: %+v, %v", c, err)
	}
	again, err := OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := again.Pending(); len(p2) != 2 || again.PassedOver() != 0 {
		t.Fatalf("reopened: %+v", p2)
	}
}

// A crash after the log was written and before the legacy files were all
// removed leaves both: the next open keeps each report once.
func TestOutboxMigrationCrashedBeforeRemoval(t *testing.T) {
	dir, ids := legacyDir(t)
	os.Remove(filepath.Join(dir, entryName(9)))
	keep := map[string][]byte{}
	for _, n := range []string{entryName(4), entryName(7), statePrefix} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		keep[n] = b
	}
	if _, err := OpenOutbox(dir); err != nil {
		t.Fatal(err)
	}
	for n, b := range keep { // as if the removals had not happened
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o, err := OpenOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := o.Pending()
	if len(p) != 2 || p[0].Outcome.ApplyID != ids[0] || p[1].Outcome.ApplyID != ids[1] {
		t.Fatalf("pending after a repeated migration: %+v", p)
	}
	if names, _ := (&dirFiles{dir: dir}).list(); !slices.Equal(names, []string{logName}) {
		t.Fatalf("the directory holds %v", names)
	}
}
