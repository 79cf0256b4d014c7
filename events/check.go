package events

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// ErrBadName means a node, module or resource name cannot be used in every
// place a name goes. The concrete error is a *NameError.
var ErrBadName = errors.New("bad name")

// MaxNameLen is the longest node, module or resource name: a DNS label.
const MaxNameLen = 63

// NameError says which name was refused, and the rule it broke.
type NameError struct {
	What string // "node", "module", "container", ...
	Name string
	Rule string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("%s name %s: %s: %v", e.What, quoteName(e.Name), e.Rule, ErrBadName)
}

// Is makes errors.Is(err, ErrBadName) true.
func (e *NameError) Is(target error) bool { return target == ErrBadName }

// quoteName quotes a name for an error, cut to a readable length.
func quoteName(s string) string {
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "..."
	}
	return strconv.Quote(s)
}

// CheckName is the one rule for the names an operator gives a node, a module
// or a module's resources: a name goes into a stream name (node-NAME), a NATS
// subject token (mesh.report.NAME), a Docker container and network name, a
// DNS label in the hosts file and a file name in the agent's data, so it must
// be what all of them accept: an RFC 1123 label in lower case, 1 to 63
// letters, digits and '-', starting and ending with a letter or digit. what
// names the kind of name in the error ("node", "module", ...).
//
// It is checked at the door (commands, import, the mesh file, the API);
// readers accept whatever history holds.
func CheckName(what, name string) error {
	bad := func(rule string) error { return &NameError{What: what, Name: name, Rule: rule} }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > MaxNameLen:
		return bad(fmt.Sprintf("%d bytes, over the limit of %d", len(name), MaxNameLen))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-':
			if i == 0 || i == len(name)-1 {
				return bad("a '-' at the start or the end")
			}
		default:
			return bad(fmt.Sprintf("byte %d is %s: use lower-case letters, digits and '-' (a DNS label)", i, strconv.QuoteRune(rune(c))))
		}
	}
	return nil
}

// An apply report is checked at one door (commands.CheckReport), whatever
// it came through (the bus, an import): its form (ApplyReported.CheckForm),
// then its counts (ApplyReported.CheckCounts), then what the door knows of
// its declaration. A report written by hand may leave Sent at 0 ("not
// said"); its counts are then not compared with it. Readers accept
// whatever history holds.

// MaxReportCount bounds each count of an apply report: no declaration has
// more resources (a declaration is one event, at most MaxDataSize bytes).
const MaxReportCount = MaxDataSize

// CheckCounts says whether an apply report's counts and lists agree, as
// the agent builds them (nodeplan.Outcome): no count below zero or above
// MaxReportCount, Applied equal to Unchanged plus the resources created,
// replaced and updated, and, when the report says how many resources it
// was sent, no more applied and held than that, nor any count or list
// longer. The door's second check (commands.CheckReport).
func (r ApplyReported) CheckCounts() error {
	for _, c := range []struct {
		field string
		n     int
	}{{"sent", r.Sent}, {"applied", r.Applied}, {"unchanged", r.Unchanged}} {
		if c.n > MaxReportCount {
			return invalid(c.field, "%d, over the limit of %d", c.n, MaxReportCount)
		}
	}
	switch {
	case r.Sent < 0:
		return invalid("sent", "%d is below zero", r.Sent)
	case r.Applied < 0:
		return invalid("applied", "%d is below zero", r.Applied)
	case r.Unchanged < 0:
		return invalid("unchanged", "%d is below zero", r.Unchanged)
	}
	changed := len(r.Created) + len(r.Replaced) + len(r.Updated)
	if r.Applied != r.Unchanged+changed {
		return invalid("applied", "%d, but unchanged (%d), created (%d), replaced (%d) and updated (%d) add up to %d",
			r.Applied, r.Unchanged, len(r.Created), len(r.Replaced), len(r.Updated), r.Unchanged+changed)
	}
	if r.Sent > 0 && r.Applied+len(r.Held) > r.Sent {
		return invalid("applied", "%d applied and %d held, of %d sent", r.Applied, len(r.Held), r.Sent)
	}
	// A failed resource is one sent, or the hosts file: one more.
	if r.Sent > 0 && r.Applied+len(r.Held)+len(r.Failed) > r.Sent+1 {
		return invalid("failed", "%d applied, %d held and %d failed, of %d sent (and the hosts file)", r.Applied, len(r.Held), len(r.Failed), r.Sent)
	}
	if r.HeldSince != "" && len(r.Held) > 0 {
		return invalid("held_since", "given beside a held list of %d", len(r.Held))
	}
	return nil
}

// The bounds of what an apply report may say (ApplyReported.CheckForm),
// in bytes. A real agent stays inside them: its resource names are the
// declaration's (events.CheckName: at most MaxNameLen) or the hosts file's
// path, and it cuts a failure's message and a hold's reason to them
// (BoundText).
const (
	// MaxReportName bounds a resource's name and module, a field name of a
	// replaced or updated resource, the declaration, the digest and the
	// held_since of an apply report.
	MaxReportName = 256
	// MaxReportMessage bounds a failed resource's error and a hold's reason.
	MaxReportMessage = 4 << 10
)

// ErrTooLong means a name or a message is longer than its bound; it comes
// wrapped beside ErrInvalid.
var ErrTooLong = errors.New("over its bound")

// tooLong is the error of a value of n bytes over max.
func tooLong(field string, n, max int) error {
	return fmt.Errorf("%w (%w)", invalid(field, "%d bytes, over the limit of %d", n, max), ErrTooLong)
}

// BoundText is s made valid UTF-8 with no NUL (each replaced by U+FFFD)
// and cut to at most max bytes, on a rune boundary, ending in "…" when
// cut: what an agent sends of a message that may be longer than its bound
// (MaxReportMessage), in a form the door takes.
func BoundText(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// CheckForm says whether every value of an apply report has a form the door
// takes: each name and message within its bound (MaxReportName,
// MaxReportMessage; an error wrapping ErrTooLong beside ErrInvalid), valid
// UTF-8 with no NUL, and a held_since that is an apply id (a UUID). It is
// the door's first check (commands.CheckReport).
func (r ApplyReported) CheckForm() error {
	if err := reportText("node", r.Node, MaxReportName); err != nil {
		return err
	}
	if err := reportText("declaration", r.Declaration, MaxReportName); err != nil {
		return err
	}
	if err := reportText("digest", r.Digest, MaxReportName); err != nil {
		return err
	}
	if err := reportText("apply_id", r.ApplyID, MaxReportName); err != nil {
		return err
	}
	if r.HeldSince != "" {
		if err := reportText("held_since", r.HeldSince, MaxReportName); err != nil {
			return err
		}
		if _, err := uuid.Parse(r.HeldSince); err != nil {
			return invalid("held_since", "%s is not an apply id (a UUID)", quoteName(r.HeldSince))
		}
	}
	names := func(field string, list []string) error {
		for i, n := range list {
			if err := reportName(fmt.Sprintf("%s[%d]", field, i), n); err != nil {
				return err
			}
		}
		return nil
	}
	changes := func(field string, list []Replaced) error {
		for i, c := range list {
			if err := reportName(fmt.Sprintf("%s[%d].name", field, i), c.Name); err != nil {
				return err
			}
			if err := names(fmt.Sprintf("%s[%d].fields", field, i), c.Fields); err != nil {
				return err
			}
		}
		return nil
	}
	if err := names("created", r.Created); err != nil {
		return err
	}
	if err := names("removed", r.Removed); err != nil {
		return err
	}
	if err := changes("replaced", r.Replaced); err != nil {
		return err
	}
	if err := changes("updated", r.Updated); err != nil {
		return err
	}
	for i, h := range r.Held {
		if err := reportName(fmt.Sprintf("held[%d].name", i), h.Name); err != nil {
			return err
		}
		if err := reportText(fmt.Sprintf("held[%d].module", i), h.Module, MaxReportName); err != nil {
			return err
		}
		if err := reportText(fmt.Sprintf("held[%d].reason", i), h.Reason, MaxReportMessage); err != nil {
			return err
		}
	}
	for i, f := range r.Failed {
		if err := reportName(fmt.Sprintf("failed[%d].name", i), f.Name); err != nil {
			return err
		}
		if err := reportText(fmt.Sprintf("failed[%d].error", i), f.Error, MaxReportMessage); err != nil {
			return err
		}
	}
	return nil
}

// reportName checks a resource's name in a report: not empty, and
// reportText's rules.
func reportName(field, s string) error {
	if s == "" {
		return invalid(field, "empty")
	}
	return reportText(field, s, MaxReportName)
}

// reportText checks a value of a report: at most max bytes, valid UTF-8,
// no NUL.
func reportText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return tooLong(field, len(s), max)
	case !utf8.ValidString(s):
		return invalid(field, "not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return invalid(field, "holds a NUL byte")
	}
	return nil
}
