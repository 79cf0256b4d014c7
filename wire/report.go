package wire

import (
	"time"

	"meshplane/events"
)

// Report is one apply's outcome as the agent keeps and delivers it: the
// apply.reported payload, and what delivery needs besides.
type Report struct {
	// Outcome is the apply.reported payload. Outcome.ApplyID is the id of the
	// event the controller appends for it, which makes delivery idempotent.
	Outcome events.ApplyReported `json:"outcome"`
	// AppliedAt is when the apply finished, by the agent's clock.
	AppliedAt time.Time `json:"applied_at"`
	// Correlation is the declaration's correlation id (its push's).
	Correlation string `json:"correlation,omitempty"`
	// Attempts is how many delivery rounds (Outbox.Flush) failed while this
	// report was kept, before the one it is handed to: 0 on the first try;
	// above 0, a late delivery. A report waiting behind an earlier one that
	// failed counts the round too, though it was not tried in it.
	Attempts int `json:"attempts"`
	// LastError is the error of the last failed delivery.
	LastError string `json:"last_error,omitempty"`
	// HeldSince and SameDeclaration are what Wire leaves out of Outcome,
	// decided at apply time from the agent's State: HeldSince is the apply
	// id of the earlier report that carried this held list in full, and
	// SameDeclaration says the previous report was of the same declaration
	// (so it carried the digest).
	HeldSince       string `json:"held_since,omitempty"`
	SameDeclaration bool   `json:"same_declaration,omitempty"`
	// Workload is what the pass saw change in how the node's declared
	// containers run (agent.Follower), nil when nothing did or the agent
	// does not follow them (agent.Config.FollowContainers): it travels with
	// the report, and the controller records each change as a container
	// state event.
	Workload *Workload `json:"workload,omitempty"`
	// Kept is set on the report Apply returns when it is still in the
	// outbox, undelivered (its own delivery failed, or an earlier report's
	// did and it waits behind it). It is not stored.
	Kept bool `json:"-"`
}

// Summary is the report's one line (events.ApplyReported.Summary).
func (r Report) Summary() string { return r.Outcome.Summary() }

// Wire is the apply.reported payload as delivered: Outcome in its compact
// form (events.ApplyReported). Empty lists are already absent from Outcome;
// a held list the agent reported before in full is replaced by HeldSince,
// and the digest is left out when the previous report was of the same
// declaration. It is pure.
func (r Report) Wire() events.ApplyReported {
	w := r.Outcome
	if r.HeldSince != "" {
		w.Held, w.HeldSince = nil, r.HeldSince
	}
	if r.SameDeclaration {
		w.Digest = ""
	}
	return w
}
