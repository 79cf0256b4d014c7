package test

import (
	"fmt"
	"os"
	"testing"

	"meshplane/internal/meshtest"
)

// TestMain lets a test run a controller in a child process: the test
// binary, re-run with MESH_TEST_CONTROLLER=1, is one (testController). It
// removes the binary the process tests built and stops the PostgreSQL
// cluster the tests started.
func TestMain(m *testing.M) {
	if os.Getenv("MESH_TEST_CONTROLLER") == "1" {
		os.Exit(testController())
	}
	code := m.Run()
	meshtest.RemoveBinary()
	if err := meshtest.ClosePG(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: close: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
