package controllerd

// The wiring of package metrics into the controller.

import (
	"context"
	"log/slog"
	"net/http"

	"meshplane/api/httpapi"
	"meshplane/events"
	"meshplane/internal/safego"
	"meshplane/metrics"
)

// controllerMetrics instruments a controller: its store (wrap it before
// the controller is made), the stream it follows, and the /metrics route
// beside the API.
type controllerMetrics struct {
	m *metrics.ControllerMetrics
}

func newControllerMetrics(version string) *controllerMetrics {
	m := metrics.NewControllerMetrics(nil)
	m.SetVersion(version)
	return &controllerMetrics{m: m}
}

// store is s with every append timed.
func (cm *controllerMetrics) store(s events.Store) events.Store { return cm.m.Store(s) }

// start follows the store from its head and reads ctl's projections at
// each scrape, until the returned stop is called.
func (cm *controllerMetrics) start(ctx context.Context, ctl metrics.Watched, store events.Store, log *slog.Logger) func(context.Context) error {
	cm.m.Watch(ctl, store)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// A loop: its panic stops the process (safego.Go), an error only
	// the counters.
	done := safego.Go("controller.metrics", log, func() error {
		if err := cm.m.Run(ctx, store, events.NewRegistry()); err != nil && ctx.Err() == nil {
			log.Error("controller: metrics stopped following the store; counters stay where they are", "err", err)
		}
		return nil
	})
	return func(context.Context) error { cancel(); <-done; return nil }
}

// handler serves /metrics (behind gate, the API's) and h for the rest.
func (cm *controllerMetrics) handler(h http.Handler, gate *httpapi.Gate) http.Handler {
	return metrics.Mount(h, cm.m, gate.Require)
}
