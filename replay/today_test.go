package replay_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/commands"
	"meshplane/events/export"
	"meshplane/events/memstore"
	"meshplane/replay"
	"meshplane/secrets"
	"meshplane/sim"
)

// record runs a small mesh through sim with faults (spec) and exports
// its history to a file: a history recorded by this build.
func record(t *testing.T, spec string, passes int) string {
	t.Helper()
	ctx := context.Background()
	faults, err := sim.ParseFaults(spec)
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	defer store.Close()
	r, err := sim.NewRun(ctx, store, sim.Config{Nodes: 4, Modules: 6, Passes: passes, Seed: 7, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Passes(ctx); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := export.Write(ctx, store, 0, f, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayOwnHistory: a history recorded by this build, faults and
// operators' commands included, replays with no divergence (exit 0).
func TestReplayOwnHistory(t *testing.T) {
	for _, c := range []struct{ name, spec string }{
		{"quiet", ""},
		{"faults", "reads:count=1,passes=3-4;remove:count=1,passes=6;adopt:count=1,passes=1-2;burst:count=1,passes=5;move:count=1,passes=7;rollout:passes=8;cut:count=1,passes=9-10;join:count=1,passes=10;leave:count=1,passes=11"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := record(t, c.spec, 12)
			rep, err := replay.Run(context.Background(), path, replay.Options{})
			if err != nil {
				if rep != nil {
					for _, d := range rep.Divergences {
						t.Logf("pass %d %s %s: recorded %q, today %q (%d resources)", d.Pass, d.Node, d.Kind, d.Recorded, d.Today, len(d.Resources))
					}
				}
				t.Fatal(err)
			}
			if !rep.Agree || rep.Passes < 12 || rep.Inputs.Commands == 0 {
				t.Fatalf("agree %v, %d passes, %d commands", rep.Agree, rep.Passes, rep.Inputs.Commands)
			}
			t.Logf("%+v", rep.Inputs)
		})
	}
}

// TestReplaySecrets: a history whose module reads a secret replays with no
// divergence: its secret.set runs again as recorded (sealed, never
// opened), and the simulated agents get a placeholder naming the digest,
// never the value.
func TestReplaySecrets(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	m := sim.New(store)
	key, err := secrets.NewKey(bytes.Repeat([]byte{7}, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	const value = "hunter2-not-in-history"
	sealed, err := key.Seal("forge-db", []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	digest := key.Digest("forge-db", []byte(value))
	_, spec, err := commands.ParseModuleFile("forge.yaml", []byte("module: forge\ncontainers:\n  - name: web\n    image: forge:1\n    env: {LOG: info, DB_PASSWORD: {secret: forge-db}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []commands.Command{
		commands.SetSecret{Name: "forge-db", Digest: digest, Sealed: sealed, KeyID: key.ID(), By: sim.Actor},
		commands.DefineModule{Module: "forge", Spec: spec},
	} {
		if err := m.Do(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	n, err := m.AddNode(ctx, "novox")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Do(ctx, commands.AssignModule{Module: "forge", Node: "novox"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		rep, _, err := m.Pass(ctx, "novox")
		if err != nil || len(rep.Outcome.Failed) > 0 {
			t.Fatalf("a pass: %+v, %v", rep.Outcome, err)
		}
	}
	if env := strings.Join(n.Runtime.Env("web"), " "); !strings.Contains(env, "DB_PASSWORD=sim:"+digest) || strings.Contains(env, value) {
		t.Errorf("the simulated web's env %q, want the placeholder of %s and never the value", env, digest)
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Write(ctx, store, 0, f, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := replay.Run(ctx, path, replay.Options{})
	if err != nil {
		if rep != nil {
			for _, d := range rep.Divergences {
				t.Logf("pass %d %s %s: recorded %q, today %q", d.Pass, d.Node, d.Kind, d.Recorded, d.Today)
			}
		}
		t.Fatal(err)
	}
	if !rep.Agree || rep.Passes < 3 {
		t.Fatalf("agree %v, %d passes", rep.Agree, rep.Passes)
	}
}
