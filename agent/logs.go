package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Container logs (mesh logs NODE CONTAINER). The operator asks the
// controller, the controller asks the node's agent on the bus (the node's
// own logs subject, as a dry run is asked), and the agent reads its
// runtime's log of the container, one bounded chunk an ask: a tail, then,
// to follow, a chunk of what came after the last one's cursor, waiting a
// little for it. Only a managed container of the node can be read. What a
// chunk holds is the container's output as is: whoever prints it escapes
// it.

// LogReader is the part of a Runtime on a real engine that reads a managed
// container's log.
type LogReader interface {
	// ReadLogs returns what the managed container name wrote (stdout and
	// stderr, in order), as q says. A name no managed container of the
	// node has is ErrNotFound.
	ReadLogs(ctx context.Context, name string, q LogQuery) (LogChunk, error)
}

// LogServer hands the mesh's log requests to answer until stop is called:
// on the bus, the node's logs subject. The bus's AgentLink is one; Run
// serves logs on its DryRuns when that is a LogServer too.
type LogServer interface {
	ServeLogs(ctx context.Context, answer func(context.Context, LogRequest) (LogChunk, error)) (stop func(), err error)
}

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

// ErrNoLogs means the node's runtime keeps no logs to read (the simulated
// runtime).
var ErrNoLogs = errors.New("this node's runtime keeps no container logs")

// Check bounds q: a negative tail or wait, or one over its bound, is
// ErrInvalid; MaxBytes is brought within MaxLogChunk.
func (q LogQuery) Check() (LogQuery, error) {
	switch {
	case q.Tail < 0 || q.Tail > MaxLogLines:
		return q, fmt.Errorf("tail %d: want 0 to %d lines: %w", q.Tail, MaxLogLines, ErrInvalid)
	case q.WaitMillis < 0 || time.Duration(q.WaitMillis)*time.Millisecond > MaxLogWait:
		return q, fmt.Errorf("wait %d ms: want 0 to %v: %w", q.WaitMillis, MaxLogWait, ErrInvalid)
	case q.MaxBytes < 0:
		return q, fmt.Errorf("max_bytes %d: negative: %w", q.MaxBytes, ErrInvalid)
	}
	if q.MaxBytes == 0 || q.MaxBytes > MaxLogChunk {
		q.MaxBytes = MaxLogChunk
	}
	return q, nil
}

// Logs answers a log request from rt: the container's name checked, the
// query bounded, then rt's ReadLogs.
func Logs(ctx context.Context, rt Runtime, req LogRequest) (LogChunk, error) {
	if err := ValidateContainerName(req.Container); err != nil {
		return LogChunk{}, fmt.Errorf("agent: logs: %w", err)
	}
	q, err := req.LogQuery.Check()
	if err != nil {
		return LogChunk{}, fmt.Errorf("agent: logs of %s: %w", req.Container, err)
	}
	lr, ok := rt.(LogReader)
	if !ok {
		return LogChunk{}, fmt.Errorf("agent: logs of %s: %w", req.Container, ErrNoLogs)
	}
	ch, err := lr.ReadLogs(ctx, req.Container, q)
	if err != nil {
		return LogChunk{}, fmt.Errorf("agent: logs of %s: %w", req.Container, err)
	}
	if len(ch.Data) > q.MaxBytes { // a runtime's slip is never a bigger message
		ch.Data, ch.Cut = ch.Data[len(ch.Data)-q.MaxBytes:], true
	}
	return ch, nil
}

// serveLogs answers log requests on cfg.DryRuns when it is a LogServer
// (Run's); stop is a no-op otherwise.
func serveLogs(ctx context.Context, cfg RunConfig) (stop func(), err error) {
	ls, ok := cfg.DryRuns.(LogServer)
	if !ok {
		return func() {}, nil
	}
	return ls.ServeLogs(ctx, func(ctx context.Context, req LogRequest) (LogChunk, error) {
		return Logs(ctx, cfg.Runtime, req)
	})
}
