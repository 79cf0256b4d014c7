package render

import (
	"io"

	"meshplane/api"
)

// LogChunk writes a chunk of a container's log (mesh logs) as the
// container wrote it, every control character but newline and tab
// escaped (SafeWriter): a log is anyone's bytes. A tail cut to the bound
// of one chunk says so first.
func LogChunk(w io.Writer, ch api.LogChunk) error {
	if ch.Cut {
		if _, err := pln(w, "(earlier lines left out: one answer holds at most 256 KiB of log; ask a smaller --tail)"); err != nil {
			return err
		}
	}
	if ch.Error != "" {
		if _, err := pf(w, "(the log ends here: %s)\n", ch.Error); err != nil {
			return err
		}
	}
	_, err := SafeWriter(w).Write(ch.Data)
	return err
}
