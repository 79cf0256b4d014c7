package httpapi

// The day-one verbs' routes: the lists, one module, the removals.

import (
	"context"
	"net/http"
	"net/url"

	"meshplane/api"
)

func (h *handler) nodeList(w http.ResponseWriter, r *http.Request) {
	h.reply(w, r)(h.service(r).NodeList(r.Context()))
}

func (h *handler) moduleList(w http.ResponseWriter, r *http.Request) {
	h.reply(w, r)(h.service(r).ModuleList(r.Context()))
}

func (h *handler) moduleShow(w http.ResponseWriter, r *http.Request) {
	if m := r.PathValue("module"); h.valid(w, r, api.ModuleRef(m)) {
		h.reply(w, r)(h.service(r).ModuleShow(r.Context(), m))
	}
}

func (h *handler) removeModule(w http.ResponseWriter, r *http.Request) {
	var req api.RemoveModuleRequest
	if h.decode(w, r, &req) && h.samePath(w, r, "module", &req.Module) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.RemoveModule(r.Context(), req))
	}
}

func (h *handler) removeNode(w http.ResponseWriter, r *http.Request) {
	var req api.RemoveNodeRequest
	if h.decode(w, r, &req) && h.samePath(w, r, "node", &req.Node) && h.valid(w, r, req) {
		h.reply(w, r)(h.svc.RemoveNode(r.Context(), req))
	}
}

func module(name string) string { return "/v1/modules/" + url.PathEscape(name) }

// NodeList asks GET /v1/inventory/nodes.
func (c *Client) NodeList(ctx context.Context) (api.NodeList, error) {
	var out api.NodeList
	return out, c.do(ctx, http.MethodGet, "/v1/inventory/nodes", nil, nil, &out)
}

// ModuleList asks GET /v1/inventory/modules.
func (c *Client) ModuleList(ctx context.Context) (api.ModuleList, error) {
	var out api.ModuleList
	return out, c.do(ctx, http.MethodGet, "/v1/inventory/modules", nil, nil, &out)
}

// ModuleShow asks GET /v1/modules/{module}.
func (c *Client) ModuleShow(ctx context.Context, name string) (api.ModuleShow, error) {
	var out api.ModuleShow
	return out, c.do(ctx, http.MethodGet, module(name), nil, nil, &out)
}

// RemoveModule asks POST /v1/modules/{module}/remove.
func (c *Client) RemoveModule(ctx context.Context, req api.RemoveModuleRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, module(req.Module)+"/remove", nil, req, &out)
}

// RemoveNode asks POST /v1/nodes/{node}/remove.
func (c *Client) RemoveNode(ctx context.Context, req api.RemoveNodeRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, node(req.Node)+"/remove", nil, req, &out)
}
