package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file is the API's error vocabulary (as wtf's error.go): the
// rejection every command and query the mesh refuses comes back as, and
// its codes. The write side (package commands) makes them; callers branch
// on the code, through the API, the CLI's exit codes and HTTP.

// ErrRejected means a command or query was refused (by its aggregate, or
// by a check at the door). The concrete error is a *Rejection carrying a
// code and a sentence.
var ErrRejected = errors.New("rejected")

// Rejection is a command or query the mesh refused: a code callers branch
// on, and a sentence for the operator.
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

// Rejection codes of commands: stable, for the CLI's exit codes and API
// clients. A command whose work is already done is no rejection, so there
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

	// Joining (IssueJoinToken, JoinNode) and a node's bus users
	// (RecordCredentials, RevokeNode).
	CodeTokenUsed      = "token-used"       // the join token was redeemed already
	CodeTokenExpired   = "token-expired"    // the join token's time is over
	CodeTokenOtherNode = "token-other-node" // the join token is another node's
	CodeTokenUnknown   = "token-unknown"    // no join token of that secret was issued for the node (unknown or forged)
	CodeBadPublicKey   = "bad-public-key"   // the public key is not a NATS user nkey (U...), or was used before

	// Removing a module or a node.
	CodeModuleAssigned  = "module-assigned"  // a module removed while it is assigned to a node
	CodeModulesAssigned = "modules-assigned" // a node removed while modules are assigned to it, without a drain

	// API tokens.
	CodeTokenExists = "token-exists"  // a create for a name whose token is live
	CodeNoSuchToken = "no-such-token" // a revoke for a name that never had an API token
)

// MaxOperatorLen bounds an operator's name, recorded in every event an
// operator's command appends ("operator:NAME").
const MaxOperatorLen = 128

// CheckOperator is the one rule for an operator's name: not blank, up
// to MaxOperatorLen bytes of UTF-8, printable (no control or format
// character: a NUL, a newline, a bidirectional override), no space at
// either end. The refusal is a *Rejection (invalid) naming the rule.
func CheckOperator(name string) error {
	bad := func(format string, args ...any) error {
		return reject(CodeInvalid, "operator %s: %s", QuoteInput(name), fmt.Sprintf(format, args...))
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

// MaxQuoted is how much of a name or other input a message quotes: enough
// to recognise it, never a megabyte of it.
const MaxQuoted = 40

// QuoteInput quotes s for a message, shortened to its first MaxQuoted
// bytes (on a rune boundary) with its length when it is longer: the one
// quoting of an input in a rejection, the API's and the write side's.
func QuoteInput(s string) string {
	if len(s) <= MaxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// ReadMoment reads TIME|POSITION, the one reading of a moment (--at, diff
// --from and --to, revert --to): a whole number is a store position,
// anything else a time in RFC 3339 ("2026-09-29T22:46:00Z"), returned in
// UTC. What is neither is a rejection (invalid) naming both forms.
func ReadMoment(s string) (position uint64, at time.Time, err error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		p, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, time.Time{}, reject(CodeInvalid, "%s is not a store position: %v", QuoteInput(s), err)
		}
		return p, time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, time.Time{}, reject(CodeInvalid, "%s is neither a time (RFC 3339: 2026-09-29T22:46:00Z) nor a store position (a whole number)", QuoteInput(s))
	}
	return 0, t.UTC(), nil
}

// BeforeFirst is the one refusal of a moment before the first event, by
// every verb that reads one (--at, diff --from and --to, revert --to):
// position 0, or a time before the first event's. first is the first
// event's time, printed to the nanosecond so that a time that reads like
// it to the second says why it is before it; zero when it is not known
// (position 0, refused before the store is read). It is a *Rejection.
func BeforeFirst(moment string, first time.Time) error {
	if first.IsZero() {
		return reject(CodeInvalid, "%s is before the first event: positions count from 1", moment)
	}
	return reject(CodeInvalid, "%s is before the first event (position 1, at %s): give a position of 1 or more, or a time at or after it",
		moment, first.UTC().Format(time.RFC3339Nano))
}
