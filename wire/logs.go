package wire

import "time"

// LogRequest is one ask for a container's log. Its JSON is a wire format
// (the bus's logs request): fields may be added, never renamed.
type LogRequest struct {
	Container string `json:"container"`
	LogQuery
}

// LogQuery says which part of a log a chunk holds.
type LogQuery struct {
	// Tail is how many lines from the end (0: every line), when Since is
	// zero; with Since, every line after it.
	Tail int `json:"tail,omitempty"`
	// Since is a previous chunk's Cursor: only lines after it.
	Since time.Time `json:"since,omitzero"`
	// WaitMillis is how long to wait for a first line when there is none
	// yet (following a log); 0 answers at once. At most MaxLogWait.
	WaitMillis int `json:"wait_ms,omitempty"`
	// MaxBytes bounds the chunk (0 or more than MaxLogChunk: MaxLogChunk).
	// Of a tail, the last lines are kept; after Since, the first.
	MaxBytes int `json:"max_bytes,omitempty"`
}

// LogChunk is part of a container's log.
type LogChunk struct {
	Data []byte `json:"data"`
	// Cursor is when the last line of Data was written (zero: no line);
	// the next chunk's LogQuery.Since.
	Cursor time.Time `json:"cursor,omitzero"`
	// Cut says lines were left out to keep within MaxBytes: before Data, of
	// a tail; after it, of a chunk after Since (the next chunk has them).
	Cut bool `json:"cut,omitempty"`
}

// Bounds of a log ask.
const (
	MaxLogChunk = 256 << 10        // bytes of one chunk (the bus carries up to 1 MiB)
	MaxLogLines = 100_000          // lines of a tail
	MaxLogWait  = 20 * time.Second // a follow's wait, within the bus's answer
)
