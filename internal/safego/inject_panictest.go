//go:build meshplane_panictest

package safego

import (
	"os"
	"strings"
	"time"
)

// In a binary built with -tags meshplane_panictest (and only there: the
// process tests build one), MESH_TEST_PANIC=WHERE[@FILE] makes the
// boundary named WHERE panic as its function starts: at once, or, with
// @FILE, once FILE exists (polled every 20 ms; the function does not run
// meanwhile). It is how a test makes a loop of a real process panic.
var injectAt, injectWhen = func() (string, string) {
	where, file, _ := strings.Cut(os.Getenv("MESH_TEST_PANIC"), "@")
	return where, file
}()

func inject(where string) {
	if where == "" || where != injectAt {
		return
	}
	for injectWhen != "" {
		if _, err := os.Stat(injectWhen); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	panic("safego: panic injected at " + where + " (MESH_TEST_PANIC, a test build)")
}
