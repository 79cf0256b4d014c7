package artifacts

import (
	"io"
	"log"
)

// nopLogger silences the registry's per-request log lines.
func nopLogger() *log.Logger { return log.New(io.Discard, "", 0) }
