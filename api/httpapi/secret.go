package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"meshplane/api"
)

// Secrets: the routes /v1/secrets (api.Secrets). A value goes in a PUT's
// body, to the controller, and is never in an answer nor a log line.

var _ api.Secrets = (*Client)(nil)

// secrets is the service's api.Secrets, or a refusal.
func (h *handler) secrets(w http.ResponseWriter, r *http.Request) (api.Secrets, bool) {
	return optional[api.Secrets](h, w, r, "this service keeps no secrets")
}

func (h *handler) setSecret(w http.ResponseWriter, r *http.Request) {
	s, ok := h.secrets(w, r)
	var req api.SetSecretRequest
	if ok && h.decode(w, r, &req) && h.samePath(w, r, "name", &req.Name) && h.valid(w, r, req) {
		h.reply(w, r)(s.SetSecret(r.Context(), req))
	}
}

func (h *handler) listSecrets(w http.ResponseWriter, r *http.Request) {
	if s, ok := h.secrets(w, r); ok {
		h.reply(w, r)(s.SecretList(r.Context()))
	}
}

// SetSecret asks PUT /v1/secrets/{name}.
func (c *Client) SetSecret(ctx context.Context, req api.SetSecretRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPut, "/v1/secrets/"+url.PathEscape(req.Name), nil, req, &out)
}

// SecretList asks GET /v1/secrets.
func (c *Client) SecretList(ctx context.Context) (api.SecretList, error) {
	var out api.SecretList
	return out, c.do(ctx, http.MethodGet, "/v1/secrets", nil, nil, &out)
}
