package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"meshplane/api"
)

// Client is a Service over HTTP: every call is one request to a controller.
// A rejection comes back as the same *api.Rejection the controller
// made; a refused token as ErrUnauthorized; any other failure as an *Error
// or a transport error.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
	at    string // ?at= on every GET (At); "" for now
}

var (
	_ api.Service   = (*Client)(nil)
	_ api.Historian = (*Client)(nil)
)

// At is a client whose reads ask as of at (?at= on every GET); the
// controller resolves it, and refuses a moment outside the history.
func (c *Client) At(_ context.Context, at api.At) (api.Service, error) {
	cc := *c
	cc.at = at.String()
	return &cc, nil
}

// ClientOption configures a Client.
type ClientOption func(*clientConfig) error

type clientConfig struct {
	tls     *tls.Config
	http    *http.Client
	timeout time.Duration
}

// WithTLSConfig verifies the controller with cfg.
func WithTLSConfig(cfg *tls.Config) ClientOption {
	return func(c *clientConfig) error { c.tls = cfg; return nil }
}

// WithCA verifies the controller's certificate against the PEM-encoded CA
// certificates in caPEM (a private CA: mesh up --tls-ca).
func WithCA(caPEM []byte) ClientOption {
	return func(c *clientConfig) error {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return errors.New("api: the CA file holds no PEM certificate")
		}
		if c.tls == nil {
			c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.tls.RootCAs = pool
		return nil
	}
}

// WithHTTPClient sends requests with hc (its transport is used as is).
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *clientConfig) error { c.http = hc; return nil }
}

// WithTimeout bounds each request (30s otherwise; 0: no bound but the
// context's).
func WithTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) error { c.timeout = d; return nil }
}

// NewClient returns a client of the controller at baseURL
// ("https://10.0.0.5:7480") presenting token.
func NewClient(baseURL, token string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("api: server address %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("api: server address %q: want http://HOST:PORT or https://HOST:PORT", baseURL)
	}
	cfg := clientConfig{timeout: 30 * time.Second}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	hc := cfg.http
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if cfg.tls != nil {
			tr.TLSClientConfig = cfg.tls
		}
		hc = &http.Client{Transport: tr, Timeout: cfg.timeout}
	}
	return &Client{base: u, token: token, http: hc}, nil
}

// do sends one request and decodes the answer into out.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	target := c.base.String() + path // path's segments are escaped
	if c.at != "" && method == http.MethodGet {
		query = maps.Clone(query)
		if query == nil {
			query = url.Values{}
		}
		query.Set("at", c.at)
	}
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("api: %s %s: encode: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("api: %s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("api: %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// decodeError turns an error answer back into what the controller's
// Service returned: a *api.Rejection for 400/404/409/422 in the API's
// error form, ErrUnauthorized for 401, an *Error otherwise.
func decodeError(status int, b []byte) error {
	if status == http.StatusUnauthorized {
		var eb errorBody
		if err := json.Unmarshal(b, &eb); err == nil && eb.Error.Message != "" {
			return fmt.Errorf("%w: %s", ErrUnauthorized, eb.Error.Message)
		}
		return ErrUnauthorized
	}
	var eb errorBody
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return &Error{Status: status, Message: msg}
	}
	if rejectionStatus(status) {
		return &api.Rejection{Code: eb.Error.Code, Msg: eb.Error.Message}
	}
	return &Error{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
}

func node(name string) string { return "/v1/nodes/" + url.PathEscape(name) }

// Info asks GET /v1/info.
func (c *Client) Info(ctx context.Context) (api.Info, error) {
	var out api.Info
	return out, c.do(ctx, http.MethodGet, "/v1/info", nil, nil, &out)
}

// Status asks GET /v1/nodes.
func (c *Client) Status(ctx context.Context, req api.StatusRequest) (api.StatusResponse, error) {
	var out api.StatusResponse
	return out, c.do(ctx, http.MethodGet, "/v1/nodes", url.Values{"node": req.Nodes}, nil, &out)
}

// NodeShow asks GET /v1/nodes/{node}.
func (c *Client) NodeShow(ctx context.Context, name string) (api.NodeShow, error) {
	var out api.NodeShow
	return out, c.do(ctx, http.MethodGet, node(name), nil, nil, &out)
}

// Timeline asks GET /v1/timeline.
func (c *Client) Timeline(ctx context.Context, req api.TimelineRequest) (api.TimelinePage, error) {
	var out api.TimelinePage
	return out, c.do(ctx, http.MethodGet, "/v1/timeline", timelineQuery(req), nil, &out)
}

// Why asks GET /v1/nodes/{node}/why.
func (c *Client) Why(ctx context.Context, req api.WhyRequest) (api.WhyResponse, error) {
	var out api.WhyResponse
	return out, c.do(ctx, http.MethodGet, node(req.Node)+"/why", url.Values{"resource": {req.Resource}}, nil, &out)
}

// Resources asks GET /v1/nodes/{node}/resources.
func (c *Client) Resources(ctx context.Context, name string) (api.NodeResources, error) {
	var out api.NodeResources
	return out, c.do(ctx, http.MethodGet, node(name)+"/resources", nil, nil, &out)
}

// Roster asks GET /v1/nodes/{node}/roster.
func (c *Client) Roster(ctx context.Context, name string) (api.ComposedDecl, error) {
	var out api.ComposedDecl
	return out, c.do(ctx, http.MethodGet, node(name)+"/roster", nil, nil, &out)
}

// RosterHistory asks GET /v1/nodes/{node}/roster/history.
func (c *Client) RosterHistory(ctx context.Context, name string) (api.RosterHistory, error) {
	var out api.RosterHistory
	return out, c.do(ctx, http.MethodGet, node(name)+"/roster/history", nil, nil, &out)
}

// RosterDiff asks GET /v1/nodes/{node}/roster/diff.
func (c *Client) RosterDiff(ctx context.Context, req api.RosterDiffRequest) (api.RosterDiff, error) {
	var out api.RosterDiff
	return out, c.do(ctx, http.MethodGet, node(req.Node)+"/roster/diff", url.Values{"from": {req.From}, "to": {req.To}}, nil, &out)
}

// Churn asks GET /v1/churn.
func (c *Client) Churn(ctx context.Context, req api.ChurnRequest) (api.ChurnResponse, error) {
	var out api.ChurnResponse
	return out, c.do(ctx, http.MethodGet, "/v1/churn", url.Values{"node": req.Nodes}, nil, &out)
}

// RegisterNodes sends POST /v1/nodes.
func (c *Client) RegisterNodes(ctx context.Context, req api.RegisterNodesRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, "/v1/nodes", nil, req, &out)
}

// AdoptNode sends POST /v1/nodes/{node}/adopt.
func (c *Client) AdoptNode(ctx context.Context, req api.NodeRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, node(req.Node)+"/adopt", nil, req, &out)
}

// SetSetting sends PUT /v1/nodes/{node}/settings/{key}.
func (c *Client) SetSetting(ctx context.Context, req api.SetSettingRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPut, node(req.Node)+"/settings/"+url.PathEscape(req.Key), nil, req, &out)
}

// DefineModules sends POST /v1/modules.
func (c *Client) DefineModules(ctx context.Context, req api.DefineModulesRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, "/v1/modules", nil, req, &out)
}

func (c *Client) moduleNode(ctx context.Context, verb string, req api.ModuleNodeRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, node(req.Node)+"/modules/"+url.PathEscape(req.Module)+"/"+verb, nil, req, &out)
}

// Assign sends POST /v1/nodes/{node}/modules/{module}/assign.
func (c *Client) Assign(ctx context.Context, req api.ModuleNodeRequest) (api.CommandResult, error) {
	return c.moduleNode(ctx, "assign", req)
}

// Take sends POST /v1/nodes/{node}/modules/{module}/take.
func (c *Client) Take(ctx context.Context, req api.ModuleNodeRequest) (api.CommandResult, error) {
	return c.moduleNode(ctx, "take", req)
}

// Release sends POST /v1/nodes/{node}/modules/{module}/release.
func (c *Client) Release(ctx context.Context, req api.ModuleNodeRequest) (api.CommandResult, error) {
	return c.moduleNode(ctx, "release", req)
}

// RecordArtifact sends POST /v1/modules/{module}/artifacts.
func (c *Client) RecordArtifact(ctx context.Context, req api.RecordArtifactRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, "/v1/modules/"+url.PathEscape(req.Module)+"/artifacts", nil, req, &out)
}

// Plan sends POST /v1/plan.
func (c *Client) Plan(ctx context.Context, req api.PlanRequest) (api.PlanResponse, error) {
	var out api.PlanResponse
	return out, c.do(ctx, http.MethodPost, "/v1/plan", nil, req, &out)
}

// Deploy sends POST /v1/modules/{module}/deploy.
func (c *Client) Deploy(ctx context.Context, req api.DeployRequest) (api.CommandResult, error) {
	var out api.CommandResult
	return out, c.do(ctx, http.MethodPost, "/v1/modules/"+url.PathEscape(req.Module)+"/deploy", nil, req, &out)
}

// Push sends POST /v1/nodes/{node}/push, or POST /v1/push for every node.
func (c *Client) Push(ctx context.Context, req api.PushRequest) (api.PushResponse, error) {
	var out api.PushResponse
	path := "/v1/push"
	if req.Node != "" {
		path = node(req.Node) + "/push"
	}
	return out, c.do(ctx, http.MethodPost, path, nil, req, &out)
}
