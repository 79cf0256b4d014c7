package api

import (
	"time"

	"meshplane/events"
)

// RevertRequest makes a module again what it was at a moment (mesh
// revert): To is a time in RFC 3339 or a store position (the event at or
// before it), as ReadMoment reads it.
type RevertRequest struct {
	Operator string `json:"operator"`
	Module   string `json:"module"`
	To       string `json:"to"`
}

// Validate checks the fields of a RevertRequest, as the door says: the
// operator, and To bounded (the revert reads it: ReadMoment).
func (r RevertRequest) Validate() error {
	if err := checkOperator(r.Operator); err != nil {
		return err
	}
	return checkRef("to", r.To)
}

// RevertResult is what a revert found and did: the moment it went back to
// (To, as read), the module's last event at or before it (Position, At),
// what the module was then (its spec's digest, the builds it ran), and the
// events appended: none when the module was already so.
type RevertResult struct {
	Module     string         `json:"module"`
	To         string         `json:"to"`
	Position   uint64         `json:"position"`
	At         time.Time      `json:"at"`
	SpecDigest string         `json:"spec_digest"`
	Builds     []events.Build `json:"builds"`
	Events     []EventRef     `json:"events"`
}
