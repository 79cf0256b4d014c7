package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"meshplane/api"
)

// CodeNoCA is the error of GET /v1/join/ca on a controller whose API is
// plain HTTP: there is no CA to give (404).
const CodeNoCA = "no-ca"

// maxJoinBody bounds a join's body: a token, a key, a version.
const maxJoinBody = 64 << 10

var _ api.Access = (*Client)(nil)

// CAFingerprint is what a join token carries of a CA: the hex SHA-256 of
// the DER of the first certificate in caPEM.
func CAFingerprint(caPEM []byte) (string, error) {
	for rest := caPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return "", errors.New("api: the CA holds no PEM certificate")
		}
		if b.Type == "CERTIFICATE" {
			sum := sha256.Sum256(b.Bytes)
			return hex.EncodeToString(sum[:]), nil
		}
	}
}

// JoinHandler serves the two routes of joining that carry no operator
// token: POST /v1/join (authorised by the join token in its body alone)
// and GET /v1/join/ca (the CA certificate caPEM, PEM text; 404 no-ca when
// caPEM is empty, an API on plain HTTP). Mount it at those two paths,
// beside Handler at /v1/.
func JoinHandler(a api.Access, caPEM []byte, opts ...HandlerOption) http.Handler {
	h := &handler{maxBody: maxJoinBody, log: slog.Default(), mux: http.NewServeMux()}
	for _, o := range opts {
		o(h)
	}
	h.maxBody = min(h.maxBody, maxJoinBody)
	m := registrar{h.mux, &h.patterns}
	m.HandleFunc("POST /v1/join", func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
		var req api.JoinRequest
		if h.decode(w, r, &req) && h.valid(w, r, req) {
			req.From = r.RemoteAddr
			h.reply(w, r)(a.Join(r.Context(), req))
		}
	})
	m.HandleFunc("GET /v1/join/ca", func(w http.ResponseWriter, r *http.Request) {
		if len(caPEM) == 0 {
			writeError(w, http.StatusNotFound, CodeNoCA, "this controller's API is plain HTTP: it has no CA certificate to give (join with a token whose ca is empty)")
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(caPEM)
	})
	return joinMux{h}
}

// joinMux is JoinHandler's handler: its mux, and its patterns for the
// route table's test.
type joinMux struct{ h *handler }

func (j joinMux) ServeHTTP(w http.ResponseWriter, r *http.Request) { j.h.mux.ServeHTTP(w, r) }

func (h *handler) access(w http.ResponseWriter, r *http.Request) (api.Access, bool) {
	return optional[api.Access](h, w, r, "this service does not mint bus users (join tokens, credentials, revokes)")
}

func (h *handler) joinToken(w http.ResponseWriter, r *http.Request) {
	a, ok := h.access(w, r)
	var req api.JoinTokenRequest
	if ok && h.decode(w, r, &req) && h.samePath(w, r, "node", &req.Node) && h.valid(w, r, req) {
		h.reply(w, r)(a.JoinToken(r.Context(), req))
	}
}

func (h *handler) nodeCreds(w http.ResponseWriter, r *http.Request) {
	a, ok := h.access(w, r)
	var req api.NodeRequest
	if ok && h.decode(w, r, &req) && h.samePath(w, r, "node", &req.Node) && h.valid(w, r, req) {
		h.reply(w, r)(a.NodeCreds(r.Context(), req))
	}
}

func (h *handler) revoke(w http.ResponseWriter, r *http.Request) {
	a, ok := h.access(w, r)
	var req api.RevokeRequest
	if ok && h.decode(w, r, &req) && h.samePath(w, r, "node", &req.Node) && h.valid(w, r, req) {
		h.reply(w, r)(a.Revoke(r.Context(), req))
	}
}

// JoinToken asks POST /v1/nodes/{node}/join-token.
func (c *Client) JoinToken(ctx context.Context, req api.JoinTokenRequest) (api.JoinTokenResponse, error) {
	var out api.JoinTokenResponse
	return out, c.do(ctx, http.MethodPost, node(req.Node)+"/join-token", nil, req, &out)
}

// NodeCreds asks POST /v1/nodes/{node}/creds.
func (c *Client) NodeCreds(ctx context.Context, req api.NodeRequest) (api.NodeCredsResponse, error) {
	var out api.NodeCredsResponse
	return out, c.do(ctx, http.MethodPost, node(req.Node)+"/creds", nil, req, &out)
}

// Revoke asks POST /v1/nodes/{node}/revoke.
func (c *Client) Revoke(ctx context.Context, req api.RevokeRequest) (api.RevokeResponse, error) {
	var out api.RevokeResponse
	return out, c.do(ctx, http.MethodPost, node(req.Node)+"/revoke", nil, req, &out)
}

// Join asks POST /v1/join. The client's token, if any, is sent and not
// needed: the join token authorises it.
func (c *Client) Join(ctx context.Context, req api.JoinRequest) (api.JoinResponse, error) {
	var out api.JoinResponse
	return out, c.do(ctx, http.MethodPost, "/v1/join", nil, req, &out)
}

// JoinCA asks GET /v1/join/ca: the PEM of the CA the controller's
// certificates chain to. A joining host asks it over a connection it has
// not verified yet, and checks it against its token's fingerprint
// (CAFingerprint) before trusting it.
func (c *Client) JoinCA(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base.String()+"/v1/join/ca", nil)
	if err != nil {
		return nil, fmt.Errorf("api: GET /v1/join/ca: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("api: GET /v1/join/ca: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("api: GET /v1/join/ca: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, decodeError(resp.StatusCode, b)
	}
	if !strings.Contains(string(b), "-----BEGIN CERTIFICATE-----") {
		return nil, errors.New("api: GET /v1/join/ca: the answer is not a PEM certificate")
	}
	return b, nil
}
