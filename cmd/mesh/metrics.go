package main

// The wiring of package metrics into mesh agent (the controller's is in
// package daemon).

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"meshplane/agent"
	"meshplane/internal/httpstop"
	"meshplane/internal/safego/safehttp"
	"meshplane/metrics"
)

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
