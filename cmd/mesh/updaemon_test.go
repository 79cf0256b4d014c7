package main

import (
	"slices"
	"strings"
	"testing"

	"meshplane/api"
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

// TestUnreported: up --once waits for a report of the declaration pushed,
// recorded after the push; a node with none is named.
func TestUnreported(t *testing.T) {
	applied := func(node, decl string, pos uint64) api.NodeStatus {
		return api.NodeStatus{Node: node, Applied: &api.ApplyRecord{DeclMark: api.DeclMark{Declaration: decl, Position: pos}}}
	}
	for _, tc := range []struct {
		name   string
		nodes  []api.NodeStatus
		pushed map[string]string
		since  map[string]uint64
		want   []string
	}{
		{"reported", []api.NodeStatus{applied("a", "a/1", 5)}, map[string]string{"a": "a/1"}, nil, nil},
		{"never applied", []api.NodeStatus{{Node: "a"}}, map[string]string{"a": "a/1"}, nil, []string{"a"}},
		{"an older declaration", []api.NodeStatus{applied("a", "a/1", 5)}, map[string]string{"a": "a/2"}, nil, []string{"a"}},
		{"the apply before the push", []api.NodeStatus{applied("a", "a/1", 5)}, map[string]string{"a": "a/1"}, map[string]uint64{"a": 5}, []string{"a"}},
		{"applied again after the push", []api.NodeStatus{applied("a", "a/1", 9)}, map[string]string{"a": "a/1"}, map[string]uint64{"a": 5}, nil},
		{"not pushed is not waited for", []api.NodeStatus{{Node: "b"}}, map[string]string{}, nil, nil},
		{"sorted", []api.NodeStatus{{Node: "b"}, {Node: "a"}}, map[string]string{"b": "b/1", "a": "a/1"}, nil, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unreported(api.StatusResponse{Nodes: tc.nodes}, tc.pushed, tc.since)
			if !slices.Equal(got, tc.want) {
				t.Errorf("unreported = %v, want %v", got, tc.want)
			}
		})
	}
}
