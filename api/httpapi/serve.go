package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"meshplane/api"
	"meshplane/internal/httpstop"
	"meshplane/internal/safego"
	"meshplane/internal/safego/safehttp"
)

// ServeOptions are how Serve serves.
type ServeOptions struct {
	// TLSCert and TLSKey are PEM files; both or neither. With them the API
	// speaks only TLS (1.2 and later).
	TLSCert, TLSKey string
	// Insecure allows plain HTTP beyond loopback (said out loud by the CLI's
	// --insecure).
	Insecure bool
	// ShutdownTimeout bounds the wait for requests in flight when ctx ends
	// (5s when zero).
	ShutdownTimeout time.Duration
	// Logger gets the panics of requests (nil: slog.Default).
	Logger *slog.Logger
}

// CheckListen refuses to serve addr without TLS unless it is a loopback
// address (127.0.0.0/8, ::1, localhost) or insecure is set. An address
// without a host (":7480") listens on every interface: not loopback.
func CheckListen(addr string, tls, insecure bool) error {
	if tls || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("api: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s (give --tls-cert and --tls-key, or --insecure)", ErrInsecureListen, addr)
}

// Serve serves h on ln until ctx ends, then stops accepting and waits for
// requests in flight (bounded by ShutdownTimeout). It checks ln's address
// with CheckListen first. It returns nil after a clean stop.
//
// A request whose handler panics is answered 500, code "internal", the
// panic logged with its stack and counted (safehttp.Handler, where
// api.request); the server goes on. (net/http alone would log it and drop
// the connection.) A response already begun is cut short instead.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts ServeOptions) error {
	withTLS := opts.TLSCert != "" || opts.TLSKey != ""
	if withTLS && (opts.TLSCert == "" || opts.TLSKey == "") {
		return errors.New("api: serve: give both a TLS certificate and its key")
	}
	if err := CheckListen(ln.Addr().String(), withTLS, opts.Insecure); err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           safehttp.Handler("api.request", opts.Logger, h, panicked),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	stopper := httpstop.Track(srv)
	if withTLS {
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return fmt.Errorf("api: serve: TLS: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("api: serve: %w", err)
	case <-ctx.Done():
	}
	timeout := opts.ShutdownTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	err := stopper.Stop(timeout)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("api: stop: %w", err)
	}
	return nil
}

// panicked answers a request whose handler panicked: 500, in the API's
// error form.
// The panic itself is in the controller's log, not in the answer.
func panicked(w http.ResponseWriter, _ *http.Request, _ *safego.PanicError) {
	writeError(w, http.StatusInternalServerError, api.CodeInternal,
		"the controller panicked serving this request (a bug in meshplane; the controller's log has the stack)")
}
