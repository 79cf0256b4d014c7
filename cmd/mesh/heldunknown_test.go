package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"meshplane/events"
	"meshplane/events/boltstore"
)

// TestHeldSinceUnresolvedIsRead: issue 31, item 1. Apply reports whose
// held_since names no held list (a random id, the id, another
// node's event, not an id, a report of the node's that held nothing),
// appended straight to the store as an older build's door let them in,
// break no read: status, node show, timeline, rebuild and export exit 0
// and say the holds are unknown (export writes the lines as stored and
// names them on stderr), and store verify names each by position, node
// and held_since.
func TestHeldSinceUnresolvedIsRead(t *testing.T) {
	dir := upExample(t)
	ctx := context.Background()
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	g14, err := s.ReadStream(ctx, "node-g14", 0, 1)
	if err != nil || len(g14) != 1 {
		t.Fatal(g14, err)
	}
	quiet := events.NewID()
	report := func(id uuid.UUID, since string) events.Event {
		ev, err := reg.New("node-novox", events.ApplyReported{Node: "novox", Declaration: "novox/1", HeldSince: since},
			events.Meta{ID: id, Actor: "agent:novox"})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	forged := []string{uuid.NewString(), "00000000-0000-4000-8000-000000000001", g14[0].ID.String(), "not-a-uuid", quiet.String()}
	batch := []events.Event{report(quiet, "")}
	for _, since := range forged {
		batch = append(batch, report(events.NewID(), since))
	}
	stored, err := s.Append(ctx, "node-novox", events.Any, batch...)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		out  string // printed, beside the note
	}{
		{[]string{"status"}, "novox"},
		{[]string{"node", "show", "novox"}, "node     novox"},
		{[]string{"timeline", "--node", "novox", "--type", events.TypeApplyReported}, "SUMMARY"},
		{[]string{"rebuild"}, "rebuilt every projection"},
		{[]string{"status"}, "novox"}, // from the snapshot rebuild wrote
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := mesh(t, append(tc.args, "--data", dir)...)
			if code != exitOK || !strings.Contains(out, tc.out) || strings.Contains(out+errOut, "could not be folded") {
				t.Fatalf("exit %d, want 0 with %q printed and nothing skipped\n%s%s", code, tc.out, out, errOut)
			}
			if tc.args[0] != "rebuild" && !strings.Contains(out, "holds unknown: its held_since names no held list") {
				t.Errorf("the holds are not said to be unknown:\n%s", out)
			}
		})
	}
	t.Run("timeline -o json", func(t *testing.T) {
		// The five read alike: one run of them.
		code, out, errOut := mesh(t, "timeline", "--data", dir, "--node", "novox", "--type", events.TypeApplyReported, "-o", "json")
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		if !strings.Contains(out, `"holds_unknown": true`) || !strings.Contains(out, `"count": 5`) {
			t.Errorf("no run of 5 entries with holds_unknown:\n%s", out)
		}
	})
	t.Run("export", func(t *testing.T) {
		code, out, errOut := mesh(t, "export", "--data", dir)
		if code != exitOK || !strings.Contains(errOut, fmt.Sprintf("note: %d apply report(s) name in held_since no held list", len(forged))) {
			t.Fatalf("exit %d, want 0 with a note of %d\n%s", code, len(forged), errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		for _, ev := range stored[1:] {
			line := lines[ev.Position-1]
			var l struct {
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(line), &l); err != nil || strings.Contains(string(l.Data), `"held"`) || !strings.Contains(string(l.Data), `"held_since"`) {
				t.Errorf("line %d: %s (%v), want its data as stored, held_since alone", ev.Position, line, err)
			}
			if !strings.Contains(errOut, fmt.Sprintf("position %d, node-novox: held_since", ev.Position)) {
				t.Errorf("position %d not named on stderr:\n%s", ev.Position, errOut)
			}
		}
	})
	t.Run("store verify", func(t *testing.T) {
		code, out, errOut := mesh(t, "store", "verify", "--data", dir)
		if code != exitOK || !strings.Contains(out, fmt.Sprintf("findings (%d)", len(forged))) {
			t.Fatalf("exit %d, want 0 with %d findings\n%s%s", code, len(forged), out, errOut)
		}
		for i, ev := range stored[1:] {
			want := fmt.Sprintf("position %d, node \"novox\": apply report's held_since %q names no held list", ev.Position, forged[i])
			if !strings.Contains(out, want) {
				t.Errorf("not named: %s\n%s", want, out)
			}
		}
	})
}
