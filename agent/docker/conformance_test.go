package docker_test

import (
	"testing"

	"meshplane/agent"
	"meshplane/agent/runtimetest"
)

// TestConformance runs the runtime suite, unchanged, against the engine:
// every subtest has its own node, name prefix and host root.
func TestConformance(t *testing.T) {
	setup(t)
	runtimetest.Run(t, func(t testing.TB) agent.Runtime { return newRT(t, anyImage) })
}
