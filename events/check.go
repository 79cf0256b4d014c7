package events

import (
	"errors"
	"fmt"
	"strconv"
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

// Check says whether an apply report is consistent in itself, as the agent
// builds it (agent.buildOutcome): no count below zero, Applied equal to
// Unchanged plus the resources created, replaced and updated, and, when the
// report says how many resources it was sent, no more applied and held than
// that. A report written by hand may leave Sent at 0 ("not said"); its
// Applied is then not compared with it. Check is what the controller's door
// and an import ask of a report; readers accept whatever history holds.
func (r ApplyReported) Check() error {
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
	if r.HeldSince != "" && len(r.Held) > 0 {
		return invalid("held_since", "given beside a held list of %d", len(r.Held))
	}
	return nil
}
