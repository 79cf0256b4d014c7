package metrics

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics are served.
const Path = "/metrics"

// Handler serves reg in Prometheus's exposition formats. With a token, a
// scrape must carry "Authorization: Bearer TOKEN" (compared in constant
// time, as the API compares it) or is answered 401; with an empty token
// every scrape is served (an agent's metrics: see the package doc).
func Handler(reg *prometheus.Registry, token string) http.Handler {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          reg, // promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
	})
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(got))
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="meshplane"`)
			http.Error(w, "a valid token is required (Authorization: Bearer TOKEN; the controller keeps it in DATA/api-token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Mount serves h, but Path with m behind guard: how mesh up puts the
// metrics on the API's listener, guard being the API's gate
// (httpapi.Gate.Require), so that a scrape takes every token the API takes
// (the bootstrap token, a live per-operator one) and none it refuses. A
// nil guard refuses every scrape.
func Mount(h http.Handler, m *ControllerMetrics, guard func(http.Handler) http.Handler) http.Handler {
	var served http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="meshplane"`)
		http.Error(w, "no token is accepted here", http.StatusUnauthorized)
	})
	if guard != nil {
		served = guard(Handler(m.Registry(), ""))
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, served)
	mux.Handle("/", h)
	return mux
}
