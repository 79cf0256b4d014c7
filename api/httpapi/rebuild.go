package httpapi

import (
	"context"
	"net/http"

	"meshplane/api"
)

var _ api.Rebuilder = (*Client)(nil)

// Rebuild asks POST /v1/rebuild. A rebuild may outlast the client's
// request timeout: this call is bounded by ctx alone.
func (c *Client) Rebuild(ctx context.Context, req api.RebuildRequest) (api.RebuildResult, error) {
	var out api.RebuildResult
	long := *c
	hc := *c.http
	hc.Timeout = 0
	long.http = &hc
	return out, long.do(ctx, http.MethodPost, "/v1/rebuild", nil, req, &out)
}

func (h *handler) rebuild(w http.ResponseWriter, r *http.Request) {
	rb, ok := optional[api.Rebuilder](h, w, r, "this service does not rebuild projections")
	if !ok {
		return
	}
	var req api.RebuildRequest
	if h.decode(w, r, &req) && h.valid(w, r, req) {
		h.reply(w, r)(rb.Rebuild(r.Context(), req))
	}
}
