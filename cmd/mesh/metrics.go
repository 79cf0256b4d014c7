package main

// The wiring of package metrics into mesh up and mesh agent.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"meshplane/agent"
	"meshplane/events"
	"meshplane/internal/httpstop"
	"meshplane/internal/safego"
	"meshplane/internal/safego/safehttp"
	"meshplane/metrics"
)

// controllerMetrics instruments a controller: its store (wrap it before
// the controller is made), the stream it follows, and the /metrics route
// beside the API.
type controllerMetrics struct {
	m *metrics.Controller
}

func newControllerMetrics() *controllerMetrics {
	return &controllerMetrics{m: metrics.NewController(nil)}
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

// handler serves /metrics (behind token, as the API) and h for the rest.
func (cm *controllerMetrics) handler(h http.Handler, token string) http.Handler {
	return metrics.Mount(h, cm.m, token)
}

// serveAgentMetrics serves an agent's metrics on addr (mesh agent
// --metrics) until stop is called: plain HTTP, no token (counts only; see
// package metrics), so addr should be a private or loopback address.
func serveAgentMetrics(addr string, node string, box *agent.Outbox, log *slog.Logger) (m *metrics.Agent, stop func() error, err error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, nil, fmt.Errorf("agent: --metrics %q: %w", addr, err)
	}
	m = metrics.NewAgent(node, box)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("agent: --metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+metrics.Path, metrics.Handler(m.Registry(), ""))
	srv := &http.Server{Handler: safehttp.Handler("agent.metrics", log, mux, nil), ReadHeaderTimeout: 10 * time.Second}
	stopper := httpstop.Track(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("agent: metrics", "url", "http://"+ln.Addr().String()+metrics.Path)
	stop = func() error {
		err := stopper.Stop(5 * time.Second)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		return err
	}
	return m, stop, nil
}
