package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"meshplane/api"
	"meshplane/events"
)

// ErrRolloutFailed means a followed roll-out failed: reverted by the
// controller (on_failure: revert), given up (pause), or a revert that
// failed too; mesh deploy --wait exits non-zero with it.
var ErrRolloutFailed = errors.New("the roll-out failed")

// Rollout is how a followed roll-out ended: each node of the module that
// applied it, and the rollout.failed entries (their summaries say what
// the mesh did: reverting, gave up, stopped).
type Rollout struct {
	Applied []string    // nodes whose apply of the module was reported, sorted
	Failed  []api.Entry // rollout.failed of the module
}

// FollowRollout follows module's roll-out from store position after (the
// deploy's last event) until every node the module is assigned to has
// reported an apply that touched it, or a roll-out of it failed: then it
// returns, the error ErrRolloutFailed for a failure. It asks s every poll;
// ctx's end (mesh deploy --timeout) is an error naming the nodes still
// waited for.
func FollowRollout(ctx context.Context, s api.Service, module string, after uint64, poll time.Duration) (Rollout, error) {
	var out Rollout
	cursor := after
	for {
		show, err := s.ModuleShow(ctx, module)
		if err != nil {
			return out, fmt.Errorf("follow the roll-out of %s: %w", module, err)
		}
		for {
			page, err := s.Timeline(ctx, api.TimelineRequest{Module: module, After: cursor, Limit: api.MaxTimelineLimit})
			if err != nil {
				return out, fmt.Errorf("follow the roll-out of %s: %w", module, err)
			}
			for _, e := range page.Entries {
				cursor = max(cursor, e.Position)
				switch e.Type {
				case events.TypeRolloutFailed:
					out.Failed = append(out.Failed, e)
				case events.TypeApplyReported:
					if e.Node != "" && !slices.Contains(out.Applied, e.Node) {
						out.Applied = append(out.Applied, e.Node)
					}
				}
			}
			if page.Next == 0 || len(page.Entries) == 0 {
				break
			}
		}
		slices.Sort(out.Applied)
		if len(out.Failed) > 0 {
			return out, fmt.Errorf("%s: %w", out.Failed[0].Summary, ErrRolloutFailed)
		}
		var waiting []string
		for _, n := range show.Nodes {
			if !slices.Contains(out.Applied, n.Node) {
				waiting = append(waiting, n.Node)
			}
		}
		if len(waiting) == 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("follow the roll-out of %s: no apply reported yet by %v: %w", module, waiting, context.Cause(ctx))
		case <-time.After(poll):
		}
	}
}
