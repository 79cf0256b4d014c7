package agentd_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"meshplane/agent/agentd"
	"meshplane/agent/docker"
)

// TestDefaultRuntimeNeverSim: with no engine where the environment names
// one, an agent named no runtime refuses to start, naming --runtime sim; it
// never falls back to the simulated runtime.
func TestDefaultRuntimeNeverSim(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-engine.sock")
	rt, err := agentd.DefaultRuntime(context.Background())
	if err == nil || rt != "" {
		t.Fatalf("DefaultRuntime = %q, %v; want a refusal", rt, err)
	}
	if !errors.Is(err, docker.ErrNoEngine) || !strings.Contains(err.Error(), "--runtime sim") {
		t.Fatalf("refusal %q: want docker.ErrNoEngine, naming --runtime sim", err)
	}
}
