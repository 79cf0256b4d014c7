package commands

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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

// Rejection codes: stable, for the CLI's exit codes and API clients. A
// command whose work is already done is no rejection (see Decide), so there
// is no code for "already registered", "already assigned" or "already
// taken".
const (
	CodeInvalid       = "invalid"        // the command's input is malformed, or too long
	CodeNodeUnknown   = "node-unknown"   // the node is not registered
	CodeNotAdopted    = "not-adopted"    // a take on a node that was not adopted
	CodeModuleUnknown = "module-unknown" // the module is not defined
	CodeNotAssigned   = "not-assigned"   // a take of a module not assigned to the node
	CodeRouteClaimed  = "route-claimed"  // another module already routes one of the module's names
	CodeNoBuild       = "no-build"       // a deploy of a build (or a module) of which no build is recorded
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

// MaxOperatorLen bounds an operator's name, recorded in every event an
// operator's command appends ("operator:NAME").
const MaxOperatorLen = 128

// CheckOperator checks the name of an operator who asks for a command: 1
// to MaxOperatorLen bytes of UTF-8, printable (no control or format
// character: a NUL, a newline, a bidirectional override), no space at
// either end. The refusal is a *Rejection (invalid) naming the rule.
func CheckOperator(name string) error {
	bad := func(format string, args ...any) error {
		return reject(CodeInvalid, "operator %s: %s", quote(name), fmt.Sprintf(format, args...))
	}
	switch {
	case strings.TrimSpace(name) == "":
		return reject(CodeInvalid, "the request names no operator (who asks is recorded with every event)")
	case len(name) > MaxOperatorLen:
		return bad("%d bytes, over the limit of %d", len(name), MaxOperatorLen)
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.TrimSpace(name) != name:
		return bad("a space at the start or the end")
	}
	for i, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return bad("byte %d is %U: no control or format characters", i, r)
		}
	}
	return nil
}

// maxQuoted is how much of a name or other input a message quotes: enough
// to recognise it, never a megabyte of it.
const maxQuoted = 40

// quote quotes s for a message, shortened to its first maxQuoted bytes (on a
// rune boundary) with its length when it is longer.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

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
