// Package safehttp is package safego's boundary for an HTTP server: a
// request whose handler panics is a logged, counted 500 (where
// "api.request", "agent.metrics", ...), never a dropped connection. It is
// apart from safego so that the core, which recovers through safego.Do,
// links no net/http.
package safehttp

import (
	"errors"
	"log/slog"
	"net/http"

	"meshplane/internal/safego"
)

// Handler is h with a panic in a request recovered: reported (logged with
// the request's method and path, counted under where) and answered by
// fail, a 500 (nil: a plain-text 500). net/http would log it and drop the
// connection instead. A response already begun cannot become a 500: it is
// cut short (http.ErrAbortHandler, as net/http does), the panic reported
// all the same. A handler's own panic(http.ErrAbortHandler) passes
// through.
func Handler(where string, log *slog.Logger, h http.Handler, fail func(http.ResponseWriter, *http.Request, *safego.PanicError)) http.Handler {
	safego.Register(where)
	if fail == nil {
		fail = func(w http.ResponseWriter, _ *http.Request, _ *safego.PanicError) {
			http.Error(w, "internal error: the server panicked serving this request (a bug; it is logged)", http.StatusInternalServerError)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		err := safego.Do(where, func() error { h.ServeHTTP(tw, r); return nil })
		pe, ok := safego.As(err)
		if !ok {
			return
		}
		if v, isErr := pe.Value.(error); isErr && errors.Is(v, http.ErrAbortHandler) {
			panic(http.ErrAbortHandler)
		}
		safego.Report(log, pe, "method", r.Method, "path", r.URL.Path)
		if tw.wrote {
			panic(http.ErrAbortHandler)
		}
		fail(w, r, pe)
	})
}

// trackingWriter notes whether the response has begun. Unwrap lets
// http.ResponseController reach the connection's writer (deadlines,
// flushes).
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	if code >= 200 { // an informational header (1xx) does not begin the response
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// FlushError flushes the response, as http.ResponseController asks, and
// says whether it could.
func (w *trackingWriter) FlushError() error {
	w.wrote = true
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements http.Flusher for the handlers that ask for one.
func (w *trackingWriter) Flush() { _ = w.FlushError() }

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
