package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"meshplane/api"
)

// diff serves GET /v1/diff?from=&to=: what changed in the mesh between two
// moments (to absent: the head).
func (h *handler) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := api.DiffRequest{From: q.Get("from"), To: q.Get("to")}
	if h.valid(w, r, req) {
		h.reply(w, r)(h.svc.Diff(r.Context(), req))
	}
}

// Diff asks GET /v1/diff.
func (c *Client) Diff(ctx context.Context, req api.DiffRequest) (api.MeshDiff, error) {
	q := url.Values{"from": {req.From}}
	if req.To != "" {
		q.Set("to", req.To)
	}
	var out api.MeshDiff
	return out, c.do(ctx, http.MethodGet, "/v1/diff", q, nil, &out)
}
