package api

import (
	"context"
)

// CodeUnsupported is the rejection of a call the service behind the API
// does not offer (422).
const CodeUnsupported = "unsupported"

// Rebuilder is what a running controller offers beyond Service: rebuilding
// projections in the shadow, while queries answer from the live ones
// (POST /v1/rebuild). controller.Controller and httpapi.Client implement it.
type Rebuilder interface {
	// Rebuild folds the named projections (every one when none is named)
	// from position 0 into a fresh set, compares each with the live one at
	// the same position, and swaps it in. A name that is no projection is a
	// rejection (invalid).
	Rebuild(ctx context.Context, req RebuildRequest) (RebuildResult, error)
}

// RebuildRequest names the projections to rebuild; none means every one
// (Names).
type RebuildRequest struct {
	Projections []string `json:"projections,omitempty"`
}

// RebuildResult is what a rebuild did: the position the rebuilt
// projections were swapped in at, how many events the shadow folded and
// in how long, and for each projection whether the rebuilt state equals
// the one it replaced.
type RebuildResult struct {
	Position    uint64     `json:"position"`
	Events      uint64     `json:"events"`
	Millis      int64      `json:"millis"`
	Projections []Compared `json:"projections"`
	Skipped     Skipped    `json:"skipped"`
}
