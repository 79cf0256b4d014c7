package agentd

// The agent's two servers: the artifact store (--artifact-store) and its
// metrics (--metrics; the controller's are in package controllerd).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"meshplane/agent"
	"meshplane/artifacts"
	"meshplane/internal/httpstop"
	"meshplane/internal/safego/safehttp"
	"meshplane/metrics"
)

// ArtifactsDir is where, in an agent's data directory, the artifact store
// it serves keeps its blobs and manifests (Config.ArtifactStore; format in
// package artifacts).
const ArtifactsDir = "artifacts"

// serveArtifactStore serves the artifact store in dir on addr until ctx is
// done or stop is called (which waits for the server to stop). It listens
// before it returns: an address taken is an error now, not in the log.
func serveArtifactStore(ctx context.Context, addr, dir string, log *slog.Logger) (stop func(), err error) {
	h, err := artifacts.NewHandler(dir)
	if err != nil {
		return nil, fmt.Errorf("agent: artifact store: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agent: artifact store: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	h = safehttp.Handler("agent.artifacts", log, h, nil)
	go func() {
		defer close(done)
		if err := artifacts.ServeOn(sctx, ln, h); err != nil {
			log.Error("agent: artifact store stopped", "err", err)
		}
	}()
	log.Info("agent: serving the artifact store", "addr", ln.Addr().String(), "dir", dir)
	return func() { cancel(); <-done }, nil
}

// serveMetrics serves an agent's metrics on addr (Config.Metrics) until
// stop is called: plain HTTP, no token (counts only; see package metrics),
// so addr should be a private or loopback address.
func serveMetrics(addr string, node string, box *agent.Outbox, log *slog.Logger) (m *metrics.Agent, stop func() error, err error) {
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
