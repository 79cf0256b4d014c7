package controller

import (
	"context"
	"fmt"
)

// WaitPast blocks until the projections have folded a position after pos
// (an event appended since pos), or ctx ends, and returns the position they
// have folded then. The web page's live updates (package web) wait on it:
// one waiter per open page, woken by the runner each time it advances, so
// an idle mesh costs them nothing.
//
// A rebuild moves the projections back to 0 and forward again; a waiter
// past pos during it sees the position when it passes pos again.
func (c *Controller) WaitPast(ctx context.Context, pos uint64) (uint64, error) {
	if err := c.runner.WaitFor(ctx, pos+1); err != nil {
		return 0, fmt.Errorf("controller: wait past %d: %w", pos, err)
	}
	return c.runner.Position(), nil
}
