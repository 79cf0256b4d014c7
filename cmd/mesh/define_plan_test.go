package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleDefinePlanAppendsNothing: mesh module define FILE --plan shows
// the plan of the node the edit reaches, each changed field from what to
// what, and appends nothing (the store's export is the same after it);
// plan --after "module define FILE" says the same.
func TestModuleDefinePlanAppendsNothing(t *testing.T) {
	dir := upExample(t)
	b, err := os.ReadFile("../../examples/modules/forge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edit := strings.Replace(string(b), "{FORGE_LOG: info}", "{FORGE_LOG: debug}", 1)
	edit = strings.Replace(edit, "{source: /var/lib/forge, target: /data}", "{source: /srv/forge, target: /data}", 1)
	file := filepath.Join(t.TempDir(), "forge.yaml")
	if err := os.WriteFile(file, []byte(edit), 0o644); err != nil {
		t.Fatal(err)
	}
	export := func() string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.jsonl")
		if code, o, e := mesh(t, "export", "--data", dir, "-f", out); code != exitOK {
			t.Fatalf("export: exit %d\n%s%s", code, o, e)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := export()
	for _, args := range [][]string{
		{"module", "define", file, "--plan", "--data", dir},
		{"plan", "novox", "--after", "module define " + file, "--data", dir},
	} {
		code, out, errOut := mesh(t, args...)
		if code != exitOK && code != exitHeavy {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		for _, want := range []string{"novox:", "env.FORGE_LOG: info → debug", "mounts./data: /var/lib/forge → /srv/forge"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v does not say %q:\n%s", args, want, out)
			}
		}
		if args[0] == "module" && strings.Contains(out, "g14:") {
			t.Errorf("module define --plan plans g14, which forge does not reach:\n%s", out)
		}
	}
	if after := export(); after != before {
		t.Errorf("planning appended: the export grew from %d to %d bytes", len(before), len(after))
	}
	if code, _, errOut := mesh(t, "module", "define", file, "-o", "json", "--data", dir); code != exitUsage {
		t.Errorf("module define -o json without --plan: exit %d, want %d (bad usage)\n%s", code, exitUsage, errOut)
	}
}
