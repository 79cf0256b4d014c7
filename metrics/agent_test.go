package metrics_test

import (
	"meshplane/agent"
	"meshplane/metrics"
)

// The agent's outbox and reporter are what the agent's metrics take and
// give; checked here so that package metrics does not link the agent.
var (
	_ metrics.Pending  = (*agent.Outbox)(nil)
	_ metrics.Reporter = agent.Reporter(nil)
	_ agent.Reporter   = metrics.Reporter(nil)
)
