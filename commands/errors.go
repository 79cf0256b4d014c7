package commands

import (
	"errors"
	"fmt"
	"strconv"

	"meshplane/api"
)

// Sentinel errors.
var (
	// ErrRejected means a command was refused by its aggregate. The concrete
	// error is a *Rejection carrying a code and a sentence (api.ErrRejected).
	ErrRejected = api.ErrRejected

	// ErrIncoherent marks the two compose failures that are statements about
	// a node rather than failures to read: its module set does not compose,
	// or a setting reaches nothing. Gatherers pass over nodes failing with it
	// (and record them); every other failure aborts the compose.
	ErrIncoherent = errors.New("node does not compose")

	// ErrConflict means a command lost the race for its stream more times
	// than the handler retries.
	ErrConflict = errors.New("conflict")
)

// Rejection codes: the API's (api.Code*), spelled here for the write
// side that makes them.
const (
	CodeInvalid       = api.CodeInvalid
	CodeNodeUnknown   = api.CodeNodeUnknown
	CodeNotAdopted    = api.CodeNotAdopted
	CodeModuleUnknown = api.CodeModuleUnknown
	CodeNotAssigned   = api.CodeNotAssigned
	CodeRouteClaimed  = api.CodeRouteClaimed
	CodeNoBuild       = api.CodeNoBuild
)

// Rejection is a command refused by its aggregate: the API's rejection
// (api.Rejection), a code callers branch on and a sentence for the
// operator.
type Rejection = api.Rejection

func reject(code, format string, args ...any) error {
	return &Rejection{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// MaxOperatorLen bounds an operator's name (api.MaxOperatorLen).
const MaxOperatorLen = api.MaxOperatorLen

// CheckOperator is the one rule for an operator's name
// (api.CheckOperator).
func CheckOperator(name string) error { return api.CheckOperator(name) }

// maxQuoted is how much of an input a message quotes (api.MaxQuoted).
const maxQuoted = api.MaxQuoted

// quote quotes s for a message (api.QuoteInput).
func quote(s string) string { return api.QuoteInput(s) }

// short is s for a message, shortened as quote does but unquoted when it
// fits and needs no escaping.
func short(s string) string {
	if len(s) <= maxQuoted && strconv.Quote(s) == `"`+s+`"` {
		return s
	}
	return quote(s)
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
