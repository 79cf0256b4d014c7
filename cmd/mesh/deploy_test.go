package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeploy: mesh deploy of what already runs changes nothing and says so;
// a digest never recorded is refused (exit 3); in both modes.
func TestDeploy(t *testing.T) {
	dir := upExample(t)
	const running = "sha256:3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0"
	const never = "sha256:5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"latest, already running", []string{"deploy", "forge"}, exitOK, "module forge already runs its latest recorded builds, nothing to do"},
		{"by digest, already running", []string{"deploy", "forge", "--digest", running}, exitOK, "already runs build " + running},
		{"a digest never recorded", []string{"deploy", "forge", "--digest", never}, exitRejected, "no build of it with that digest is recorded"},
		{"a module with no build", []string{"deploy", "searxng"}, exitRejected, "no build of it is recorded"},
		{"an unknown module", []string{"deploy", "photos"}, exitRejected, "not defined"},
		{"usage", []string{"deploy"}, exitUsage, "want MODULE"},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			flags, stop := m.start(t, dir)
			defer stop()
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					code, out, errOut := mesh(t, append(tc.args, flags...)...)
					if code != tc.code || !strings.Contains(out+errOut, tc.want) {
						t.Fatalf("exit %d, want %d naming %q\n%s%s", code, tc.code, tc.want, out, errOut)
					}
				})
			}
		})
	}
}

// TestWhyNamesTheDeployGolden: a manual module's new build changes nothing
// until mesh deploy; the pass after the deploy replaces the container, and
// why names the deploy and the build behind the replacement.
func TestWhyNamesTheDeployGolden(t *testing.T) {
	dir := upExample(t)
	b, err := os.ReadFile("../../examples/mesh.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const old, next = "3ccce11a2a888784e88e862248d98651773d12ee70502e473c2e654e5dab08b0", "5ac036b6109b0b9f2c41d0aa3ccce11a2a888784e88e862248d98651773d12ee"
	meshFile := filepath.Join(t.TempDir(), "mesh.yaml")
	if err := os.WriteFile(meshFile, []byte(strings.Replace(string(b), old, next, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	up := []string{"up", "--data", dir, "--passes", "1", "--modules", "../../examples/modules", "--mesh", meshFile}
	for _, args := range [][]string{up, {"deploy", "forge", "--data", dir}, up} {
		if code, out, errOut := mesh(t, args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	goldenCases(t, dir, []goldenCase{
		{"why-deployed", []string{"why", "novox", "forge-web"}, false, nil},
		// mesh diff across the build, the deploy and the pass after
		// (upExample's history ends at 24), by position and by time, in
		// both modes alike.
		{"diff-deployed", []string{"diff", "--from", "24"}, false, nil},
		{"diff-deployed-json", []string{"diff", "--from", "24", "--to", "27", "-o", "json"}, false, nil}, // before the deploy's wall-clock time
		{"diff-since-epoch", []string{"diff", "--from", "2026-09-29T22:00:00Z", "--to", "24"}, false, nil},
	})
}
