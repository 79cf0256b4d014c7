package events

import (
	"strings"

	"github.com/google/uuid"
)

// passCausePrefix begins the causation of a controller's event recorded in
// a pass over every node (PassCause).
const passCausePrefix = "pass:"

// PassCause is the causation the controller records on its events of one
// pass over every node (its interval pass, or a push of every node):
// declaration.composed, declaration.compose-failed, declaration.pushed,
// declaration.push-failed and roster.changed. Every node's events of the
// pass share it, so a reader of the history (mesh replay) knows which
// pass each belongs to without guessing from their order. A push of named
// nodes records none.
func PassCause(pass uuid.UUID) string { return passCausePrefix + pass.String() }

// PassOf is the pass an event's causation names (PassCause), "" when it
// names none: an event of no pass over every node, or one recorded before
// passes were (its reader falls back on the events' order).
func PassOf(ev Event) string {
	id, ok := strings.CutPrefix(ev.Causation, passCausePrefix)
	if !ok {
		return ""
	}
	return id
}
