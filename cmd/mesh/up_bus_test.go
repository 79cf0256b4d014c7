package main

import (
	"strings"
	"testing"
)

// TestUpBusFlagsRefused: bus flag combinations mesh up refuses before
// starting anything (exit 2, saying why).
func TestUpBusFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"peers without a cluster address", []string{"up", "--bus-peers", "nats-route://127.0.0.1:6222"}, "--bus-peers needs --bus-cluster"},
		{"nats creds without nats", []string{"up", "--nats-creds", "c.creds"}, "go with --nats"},
		{"a cluster with nats", []string{"up", "--nats", "nats://127.0.0.1:4222", "--bus-cluster", "127.0.0.1:6222"}, "--nats uses another"},
		{"a peer of another scheme", []string{"up", "--bus-cluster", "127.0.0.1:6222", "--bus-peers", "nats://127.0.0.1:6223"}, "--bus-peers"},
		{"no replicas", []string{"up", "--bus-replicas", "0"}, "--bus-replicas"},
		{"with --passes", []string{"up", "--passes", "2", "--bus-trust", "x"}, "--bus-trust is the controller's"},
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
