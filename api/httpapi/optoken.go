package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"meshplane/api"
)

// Per-operator API tokens: the routes /v1/tokens (api.Tokens).

var _ api.Tokens = (*Client)(nil)

// tokens is the service's api.Tokens, or a refusal.
func (h *handler) tokens(w http.ResponseWriter, r *http.Request) (api.Tokens, bool) {
	return optional[api.Tokens](h, w, r, "this service keeps no per-operator API tokens")
}

// optional is the service as T, one of the interfaces a Service may add
// (api.Tokens, api.Access, api.Secrets, api.Rebuilder), or, when it does
// not, a refusal (unsupported) saying so with msg, answered on w.
func optional[T any](h *handler, w http.ResponseWriter, r *http.Request, msg string) (T, bool) {
	t, ok := h.svc.(T)
	if !ok {
		h.fail(w, r, &api.Rejection{Code: api.CodeUnsupported, Msg: msg})
	}
	return t, ok
}

func (h *handler) createToken(w http.ResponseWriter, r *http.Request) {
	t, ok := h.tokens(w, r)
	var req api.CreateTokenRequest
	if ok && h.decode(w, r, &req) && h.valid(w, r, req) {
		h.reply(w, r)(t.CreateToken(r.Context(), req))
	}
}

func (h *handler) listTokens(w http.ResponseWriter, r *http.Request) {
	if t, ok := h.tokens(w, r); ok {
		h.reply(w, r)(t.Tokens(r.Context()))
	}
}

func (h *handler) revokeToken(w http.ResponseWriter, r *http.Request) {
	t, ok := h.tokens(w, r)
	var req api.RevokeTokenRequest
	if ok && h.decode(w, r, &req) && h.samePath(w, r, "name", &req.Name) && h.valid(w, r, req) {
		h.reply(w, r)(t.RevokeToken(r.Context(), req))
	}
}

// CreateToken asks POST /v1/tokens.
func (c *Client) CreateToken(ctx context.Context, req api.CreateTokenRequest) (api.CreateTokenResponse, error) {
	var out api.CreateTokenResponse
	return out, c.do(ctx, http.MethodPost, "/v1/tokens", nil, req, &out)
}

// Tokens asks GET /v1/tokens.
func (c *Client) Tokens(ctx context.Context) (api.TokenList, error) {
	var out api.TokenList
	return out, c.do(ctx, http.MethodGet, "/v1/tokens", nil, nil, &out)
}

// RevokeToken asks DELETE /v1/tokens/{name}.
func (c *Client) RevokeToken(ctx context.Context, req api.RevokeTokenRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(req.Name), nil, req, &out)
}
