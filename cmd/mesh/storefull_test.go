package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/events"
)

// TestStoreFullSaid: a verb whose store is out of space, local (the
// store's ENOSPC) or remote (the API's 507 store-full), exits 1 with a
// sentence that says so and that nothing was written, the cause kept.
func TestStoreFullSaid(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"local", fmt.Errorf("commands: RegisterNode n1: append node-n1: boltstore: append node-n1: %w: %w", events.ErrStoreFull,
			&fs.PathError{Op: "write", Path: ".mesh/events.db", Err: syscall.ENOSPC})},
		{"remote", &httpapi.Error{Status: http.StatusInsufficientStorage, Code: api.CodeStoreFull,
			Message: "commands: RegisterNode n1: append node-n1: pgstore: append node-n1: the event store is full: ERROR: could not extend file (SQLSTATE 53100)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			e := &env{stdout: &out, stderr: &errOut, now: wallClock}
			root := e.root()
			root.AddCommand(&cobra.Command{Use: "fill", RunE: func(*cobra.Command, []string) error { return tc.err }})
			code := e.runRoot(context.Background(), root, []string{"fill"})
			if code != exitFailed {
				t.Fatalf("exit %d, want %d", code, exitFailed)
			}
			for _, want := range []string{"mesh fill: the event store is full", "nothing was written", "free space", tc.err.Error()} {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr does not say %q:\n%s", want, errOut.String())
				}
			}
		})
	}
}
