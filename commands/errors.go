package commands

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrRejected means a command was refused by its aggregate. The concrete
	// error is a *Rejection carrying a code and a sentence.
	ErrRejected = errors.New("rejected")

	// ErrIncoherent marks the two compose failures that are statements about
	// a node rather than failures to read: its module set does not compose,
	// or a setting reaches nothing. Gatherers pass over nodes failing with it
	// (and record them); every other failure aborts the compose.
	ErrIncoherent = errors.New("node does not compose")

	// ErrConflict means a command lost the race for its stream more times
	// than the handler retries.
	ErrConflict = errors.New("conflict")
)

// Rejection codes: stable, for the CLI's exit codes and API clients.
const (
	CodeInvalid         = "invalid"
	CodeNodeUnknown     = "node-unknown"
	CodeNodeExists      = "node-exists"
	CodeNotAdopted      = "not-adopted"
	CodeModuleUnknown   = "module-unknown"
	CodeAlreadyAssigned = "already-assigned"
	CodeNotAssigned     = "not-assigned"
	CodeAlreadyTaken    = "already-taken"
)

// Rejection is a command refused by its aggregate: a code callers branch on,
// and a sentence for the operator.
type Rejection struct {
	Code string
	Msg  string
}

func (r *Rejection) Error() string { return r.Msg }

// Is makes errors.Is(err, ErrRejected) true.
func (r *Rejection) Is(target error) bool { return target == ErrRejected }

func reject(code, format string, args ...any) error {
	return &Rejection{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ReadError is a failed read during compose: which node was being composed,
// what could not be read, and why. It is never ErrIncoherent.
type ReadError struct {
	Node string // the node whose declaration was being composed
	Read string // "node g14", "module forge", "the node list"
	Err  error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("compose %s: read %s: %v", e.Node, e.Read, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// IncoherentError says why a node's plan does not compose.
type IncoherentError struct {
	Node   string
	Reason string
}

func (e *IncoherentError) Error() string {
	return fmt.Sprintf("node %s does not compose: %s", e.Node, e.Reason)
}

// Is makes errors.Is(err, ErrIncoherent) true.
func (e *IncoherentError) Is(target error) bool { return target == ErrIncoherent }
