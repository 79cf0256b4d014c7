package events_test

import (
	"testing"

	"github.com/google/uuid"

	"meshplane/events"
)

// TestPassOf: the pass an event's causation names, and none for every
// other causation the build records.
func TestPassOf(t *testing.T) {
	id := uuid.MustParse("01a252d5-7816-72c9-9acb-c83e984d7f00")
	for _, c := range []struct{ causation, want string }{
		{events.PassCause(id), id.String()},
		{"pass:" + id.String(), id.String()},
		{"", ""},
		{id.String(), ""},             // a report's apply id
		{"revert web --to 12", ""},    // a revert
		{"passes:" + id.String(), ""}, // not the prefix
		{"Pass:" + id.String(), ""},   // case counts
		{"x pass:" + id.String(), ""}, // a prefix only
	} {
		if got := events.PassOf(events.Event{Causation: c.causation}); got != c.want {
			t.Errorf("PassOf(causation %q) = %q, want %q", c.causation, got, c.want)
		}
	}
}
