package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanExitsWhenANodeDoesNotCompose: a plan in which a node's
// declaration does not compose (a module whose container name clashes
// with searxng's on g14) says so and exits 5, its own code, over a heavy
// plan's 4, in both modes; a plan of a node that composes is unchanged.
func TestPlanExitsWhenANodeDoesNotCompose(t *testing.T) {
	dir := upExample(t)
	clash := filepath.Join(t.TempDir(), "opxtypo2.yaml")
	if err := os.WriteFile(clash, []byte("module: opxtypo2\ncontainers:\n  - {name: searxng, image: registry.invalid/opx:1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := mesh(t, "module", "define", clash, "--data", dir); code != exitOK {
		t.Fatalf("define: exit %d\n%s%s", code, out, errOut)
	}
	size := storeSize(t, dir)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			flags, stop := m.start(t, dir)
			defer stop()
			for _, tc := range []struct {
				name string
				args []string
				code int
				says []string
			}{
				{"a clash", []string{"plan", "--after", "assign opxtypo2 g14", "g14"}, exitNotComposed,
					[]string{"g14: does not compose", "modules opxtypo2 and searxng both claim searxng"}},
				{"a clash and a heavy plan", []string{"plan", "--after", "assign opxtypo2 g14", "--after", "release route-proxy novox"}, exitNotComposed,
					[]string{"g14: does not compose", "novox: HEAVY"}},
				{"a heavy plan alone", []string{"plan", "--after", "release route-proxy novox", "novox"}, exitHeavy, []string{"novox: HEAVY"}},
				{"a node that composes", []string{"plan", "--after", "assign opxtypo2 g14", "novox"}, exitOK, []string{"novox: "}},
			} {
				code, out, errOut := mesh(t, append(tc.args, flags...)...)
				if code != tc.code {
					t.Errorf("%s: exit %d, want %d\n%s%s", tc.name, code, tc.code, out, errOut)
				}
				for _, s := range tc.says {
					if !strings.Contains(out, s) {
						t.Errorf("%s: the plan does not say %q:\n%s", tc.name, s, out)
					}
				}
			}
		})
	}
	if got := storeSize(t, dir); got != size {
		t.Fatalf("planning grew the store from %d to %d bytes", size, got)
	}
	_, help, _ := mesh(t, "--help")
	if !strings.Contains(help, "5 mesh plan: a node does not compose") {
		t.Errorf("mesh --help does not list exit 5:\n%s", help)
	}
}
