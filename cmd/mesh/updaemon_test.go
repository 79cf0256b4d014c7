package main

import (
	"strings"
	"testing"
)

// TestDaemonVerbsRefuseFlags: flag combinations the daemon's verbs refuse
// before doing anything (exit 2, saying why).
func TestDaemonVerbsRefuseFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"up --passes with a controller flag", []string{"up", "--passes", "2", "--listen", "127.0.0.1:0"}, "--listen is the controller's"},
		{"up --passes with --once", []string{"up", "--passes", "2", "--once"}, "--once is the controller's"},
		{"agent --sim-found on docker", []string{"agent", "--creds", "x", "--runtime", "docker", "--sim-found", "/var/x"}, "--sim-found is for --runtime sim"},
		{"agent --docker-root on sim", []string{"agent", "--creds", "x", "--runtime", "sim", "--docker-root", "/srv"}, "--docker-root is for --runtime docker"},
		{"agent --docker-prefix on sim", []string{"agent", "--creds", "x", "--runtime", "sim", "--docker-prefix", "n1-"}, "--docker-prefix is for --runtime docker"},
		{"node register --bus-url without --creds", []string{"node", "register", "a", "--bus-url", "nats://h:4222"}, "--bus-url goes with --creds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := mesh(t, append(tc.args, "--data", t.TempDir())...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q does not say %q", errOut, tc.stderr)
			}
		})
	}
}
