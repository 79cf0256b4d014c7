package agent

import "context"

// Watcher is a Runtime that can tell when something it runs changed behind
// the agent's back: a container died, was stopped, killed for memory or
// removed by someone else. A running agent (Run) then makes a pass at once,
// rather than at its next drift check: what it finds is reported as any
// pass's outcome (a stopped container started again is updated, a removed
// one created), and counts in churn as such. The Docker runtime follows the
// engine's event stream; simruntime does not implement it.
type Watcher interface {
	// Changes yields one line per change it saw ("container web died, exit
	// 137"), never blocking on a slow reader: changes that come while one
	// waits to be taken are folded into it (a pass sees them all). What the
	// runtime itself did (a container it replaced or removed) is not a
	// change. The channel is closed when ctx ends; a watch that breaks
	// (the engine restarted) is started again by the runtime, and says so
	// as a change, since what happened meanwhile is unknown.
	Changes(ctx context.Context) (<-chan string, error)
}
