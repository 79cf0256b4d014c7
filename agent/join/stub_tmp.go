// Package join is a stand-in, in branch i19-install2 only, for the lead's
// agent/join (same signatures); deleted before the branch's last commit.
package join

import (
	"context"
	"errors"
)

// Options say what to join and where to keep it.
type Options struct {
	URL, Token, Data string
	Insecure         bool
	AgentVersion     string
}

// Result is what a join did.
type Result struct {
	Node, Creds string
	Already     bool
}

// CredsFile is the node's bus credentials in the data directory.
const CredsFile = "node.creds"

// Join is not here yet.
func Join(ctx context.Context, o Options) (Result, error) {
	return Result{}, errors.New("join: stub")
}
