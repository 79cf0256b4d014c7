package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
)

// Queries are the api.Service reads the page makes (api.Service, and so
// the controller, has them all).
type Queries interface {
	Info(ctx context.Context) (api.Info, error)
	Status(ctx context.Context, req api.StatusRequest) (api.StatusResponse, error)
	Resources(ctx context.Context, node string) (api.NodeResources, error)
	Timeline(ctx context.Context, req api.TimelineRequest) (api.TimelinePage, error)
	Why(ctx context.Context, req api.WhyRequest) (api.WhyResponse, error)
	RosterDiff(ctx context.Context, req api.RosterDiffRequest) (api.RosterDiff, error)
	Churn(ctx context.Context, req api.ChurnRequest) (api.ChurnResponse, error)
}

var _ Queries = api.Service(nil)

// Feed tells the page when the projections have moved (the controller's
// WaitPast). Without one, /ui/events answers 503 and the page is not live.
type Feed interface {
	// WaitPast blocks until the projections have folded a position after
	// pos, or ctx ends, and returns the position folded.
	WaitPast(ctx context.Context, pos uint64) (uint64, error)
}

// Options are how the page is served. The zero value is usable.
type Options struct {
	// Feed makes the page live (see Feed); nil: no live updates.
	Feed Feed
	// Logger gets failures of queries (500s); nil: slog.Default().
	Logger *slog.Logger
	// MinInterval is the least time between two events of one stream, so
	// a burst of appends is one refresh (250ms when zero).
	MinInterval time.Duration
	// KeepAlive is how often an idle stream gets a comment line (25s when
	// zero).
	KeepAlive time.Duration
	// Authenticate, if set, tells the per-operator API tokens (the
	// controller's Authenticate, as the API is given it): the page takes
	// them beside the bootstrap token, refuses a revoked one at once, and
	// ends an event stream whose token is revoked while it runs. nil: the
	// bootstrap token alone.
	Authenticate httpapi.Authenticator
	// Done, when closed, ends every event stream: an http.Server's
	// Shutdown waits for requests in flight, and a stream never ends by
	// itself. Close it as the server stops (the daemon passes its serving
	// context's Done).
	Done <-chan struct{}
}

// Page sizes of the swimlanes.
const (
	DefaultColumns = 150  // timeline entries a node's page shows unless asked
	MaxColumns     = 1000 // the most a request may ask for
	declChoices    = 50   // latest declarations offered to the diff
	whyTouches     = 200  // latest touches a why shows (after collapsing runs)
	maxEpisodes    = 10   // latest churn episodes listed beside those on the page
	maxResources   = 24   // resources an entry's detail names
)

//go:embed templates static
var assets embed.FS

// Handler serves the page and its fragments from q, under the API's
// tokens: the bootstrap token and, with opts.Authenticate, every live
// per-operator one (httpapi.Gate). An empty token and no Authenticate
// refuse every fragment.
func Handler(q Queries, token string, opts Options) http.Handler {
	h := &handler{
		q: q, gate: httpapi.NewGate(token, opts.Authenticate),
		opts: opts, log: opts.Logger, mux: http.NewServeMux(),
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.opts.MinInterval <= 0 {
		h.opts.MinInterval = 250 * time.Millisecond
	}
	if h.opts.KeepAlive <= 0 {
		h.opts.KeepAlive = 25 * time.Second
	}
	h.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "templates/*.html"))
	static, err := fs.Sub(assets, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	h.mux.HandleFunc("GET /{$}", h.page)
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /ui/status", h.authed(h.status))
	h.mux.HandleFunc("GET /ui/node", h.authed(h.node))
	h.mux.HandleFunc("GET /ui/diff", h.authed(h.diff))
	h.mux.HandleFunc("GET /ui/why", h.authed(h.why))
	h.mux.HandleFunc("GET /ui/events", h.authed(h.events))
	return h
}

type handler struct {
	q    Queries
	gate *httpapi.Gate
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	tmpl *template.Template
}

// contentSecurity allows the page's own script, style and images, and
// nothing else: no inline script, no other origin, no framing.
const contentSecurity = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", contentSecurity)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	h.mux.ServeHTTP(w, r)
}

// authed wants a token the API takes, as httpapi.Handler does
// (httpapi.Gate): the bootstrap token, compared in constant time over
// digests, or a live per-operator token.
func (h *handler) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := h.gate.Check(r); err != nil {
			httpapi.WriteRefusal(w, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Query().Has("at") {
			var err error
			if r, err = h.at(r); err != nil {
				h.fail(w, r, err)
				return
			}
		}
		next(w, r)
	}
}

// atKey holds, in a request's context, the Queries of the moment its
// ?at= names.
type atKey struct{}

// at makes r's fragment answer as the mesh stood at its ?at= (a position
// or an RFC 3339 time), through q's api.Historian (the controller's At).
func (h *handler) at(r *http.Request) (*http.Request, error) {
	at, err := api.ParseAt(r.URL.Query().Get("at"))
	var rej *commands.Rejection
	if errors.As(err, &rej) {
		return r, err // ?at=0: before the first event, as the controller refuses one
	} else if err != nil {
		return r, badRequestf("at %v", err)
	}
	hs, ok := h.q.(api.Historian)
	if !ok {
		return r, badRequestf("at: this page answers for now only")
	}
	svc, err := hs.At(r.Context(), at)
	if err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), atKey{}, Queries(svc))), nil
}

// qs is what answers r: the moment's Queries (?at=), else the handler's.
func (h *handler) qs(r *http.Request) Queries {
	if q, ok := r.Context().Value(atKey{}).(Queries); ok {
		return q
	}
	return h.q
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "page.html", nil)
}

// render executes a template into a buffer first, so a failure is a clean
// 500 rather than half a fragment.
func (h *handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var b bytes.Buffer
	if err := h.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		h.fail(w, r, fmt.Errorf("web: render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	b.WriteTo(w)
}

// fail answers a fragment's failure as a fragment: a rejection (an unknown
// node or declaration, a bad cursor) with its status and sentence, anything
// else as a 500, logged.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var rej *commands.Rejection
	var bad *badRequest
	switch {
	case errors.As(err, &rej):
		status = httpapi.StatusOf(rej.Code)
	case errors.As(err, &bad):
		status = http.StatusBadRequest
	case r.Context().Err() != nil:
		return // the browser went away
	default:
		h.log.Error("web: "+r.URL.Path, "err", err)
	}
	var b bytes.Buffer
	if terr := h.tmpl.ExecuteTemplate(&b, "error.html", err.Error()); terr != nil {
		http.Error(w, err.Error(), status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	b.WriteTo(w)
}

// badRequest is a request whose parameters do not parse.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{fmt.Sprintf(format, args...)}
}

// uintParam reads an optional unsigned query parameter.
func uintParam(r *http.Request, name string) (uint64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, badRequestf("%s %q: want a position (a whole number)", name, s)
	}
	return n, nil
}

// required reads a query parameter that must be given.
func required(r *http.Request, name string) (string, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return "", badRequestf("want %s", name)
	}
	return s, nil
}
