package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"meshplane/api"
)

func (h *handler) revert(w http.ResponseWriter, r *http.Request) {
	var req api.RevertRequest
	if h.decode(w, r, &req) && h.samePath(w, r, "module", &req.Module) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.Revert(r.Context(), req))
	}
}

// Revert sends POST /v1/modules/{module}/revert.
func (c *Client) Revert(ctx context.Context, req api.RevertRequest) (api.RevertResult, error) {
	var out api.RevertResult
	return out, c.do(ctx, http.MethodPost, "/v1/modules/"+url.PathEscape(req.Module)+"/revert", nil, req, &out)
}
