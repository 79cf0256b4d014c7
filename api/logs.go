package api

import (
	"context"
)

// Logs is what a running controller offers beyond Service: a container's
// log, asked of its node's agent over the bus (mesh logs; GET
// /v1/nodes/{node}/containers/{container}/logs). controller.Controller
// and httpapi.Client implement it; a CLI on the store alone has no bus to
// ask on, and refuses (unsupported).
type Logs interface {
	// Logs hands each chunk of the container's log to out, in order: the
	// tail, then, with Follow, what comes after it, until ctx ends (nil),
	// out fails (its error), or the agent cannot be asked or cannot read
	// it (a rejection with CodeLogsUnreadable naming why). An unknown node
	// is CodeNodeUnknown; a bad request, CodeInvalid.
	Logs(ctx context.Context, req LogsRequest, out func(LogChunk) error) error
}

// CodeLogsUnreadable is the refusal of a log request whose node's agent
// could not be asked (no agent connected, no answer in time) or could not
// read the log (no such managed container, a runtime that keeps no logs).
const CodeLogsUnreadable = "logs-unreadable"

// MaxLogsTail bounds a LogsRequest's Tail (agent.MaxLogLines).
const MaxLogsTail = 100_000

// LogsRequest asks for a container's log: its last Tail lines (0: every
// line the first chunk can hold), then, with Follow, what it writes next.
type LogsRequest struct {
	Node      string `json:"node"`
	Container string `json:"container"`
	Tail      int    `json:"tail"`
	Follow    bool   `json:"follow"`
}

// LogChunk is part of a container's log as the container wrote it (raw
// bytes; whoever prints it escapes it). The HTTP API streams them as JSON
// lines; a failure after the first is a last line with Error alone.
type LogChunk struct {
	Data []byte `json:"data"`
	// Cut says lines were left out before Data: a tail over the bound of
	// one chunk (256 KiB).
	Cut   bool   `json:"cut,omitempty"`
	Error string `json:"error,omitempty"`
}

// containerName reports whether s is a container name as Docker takes
// one: [a-zA-Z0-9][a-zA-Z0-9_.-]*, at most 128 bytes.
func containerName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return true
}

// Validate checks a LogsRequest: a node and a container name (as Docker
// names one), a tail of 0 to MaxLogsTail lines.
func (r LogsRequest) Validate() error {
	if err := checkRef("node", r.Node); err != nil {
		return err
	}
	if r.Node == "" {
		return invalidField("node", "empty")
	}
	if !containerName(r.Container) {
		return invalidField("container", "%q: want a container name ([a-zA-Z0-9][a-zA-Z0-9_.-]*, at most 128 bytes)", r.Container)
	}
	if r.Tail < 0 || r.Tail > MaxLogsTail {
		return invalidField("tail", "%d: want 0 to %d lines", r.Tail, MaxLogsTail)
	}
	return nil
}
