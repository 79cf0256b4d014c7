package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"meshplane/api"
)

// needToken is what a request without an acceptable bearer token is told.
const needToken = "a valid token is required (Authorization: Bearer TOKEN: the controller's DATA/api-token, or an operator's token from mesh token create)"

// Gate tells who a request's bearer token is, as the API's Handler does:
// the bootstrap token (DATA/api-token, compared in constant time over
// digests), or a per-operator token told by an Authenticator (a revoked
// or expired one is refused at once). The controller records the
// bootstrap token too, as the token "admin": once that record is revoked
// (or expired) the bootstrap token is refused like any other, though the
// file still holds it. Before it is recorded (api.ErrTokenUnknown), and
// while the authenticator cannot tell (its store unreachable), the
// bootstrap token is taken: it is the token to repair the mesh with. The page (package web) and /metrics
// stand behind the same gate as the API, so that every token the API
// takes they take, and none it refuses.
type Gate struct {
	token [sha256.Size]byte
	empty bool // no bootstrap token
	auth  Authenticator
}

// NewGate is the gate of the bootstrap token token ("": none) and of the
// per-operator tokens auth tells (nil: none).
func NewGate(token string, auth Authenticator) *Gate {
	return &Gate{token: sha256.Sum256([]byte(token)), empty: token == "", auth: auth}
}

// TokenRefusedError is Check's refusal of a request: no bearer token, or
// one that is neither the bootstrap token nor a live per-operator token.
// Its message says which.
type TokenRefusedError struct{ Msg string }

func (e *TokenRefusedError) Error() string { return e.Msg }

// Check tells whose r's bearer token is: bootstrap true for the bootstrap
// token, else the operator of a live per-operator token. A refusal is an
// *TokenRefusedError (answer 401); any other error is the authenticator
// failing (answer 500).
func (g *Gate) Check(r *http.Request) (operator string, bootstrap bool, err error) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return "", false, &TokenRefusedError{needToken}
	}
	if !g.empty {
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], g.token[:]) == 1 {
			if err := g.bootstrapRevoked(r, got); err != nil {
				return "", false, err
			}
			return "", true, nil
		}
	}
	if g.auth == nil {
		return "", false, &TokenRefusedError{needToken}
	}
	op, err := g.auth(r.Context(), got)
	switch {
	case errors.Is(err, api.ErrTokenRefused):
		return "", false, &TokenRefusedError{err.Error()}
	case err != nil:
		return "", false, fmt.Errorf("api: authenticate: %w", err)
	case op == "":
		return "", false, &TokenRefusedError{needToken}
	}
	return op, false, nil
}

// bootstrapRevoked refuses the bootstrap token secret if its record is
// revoked or expired.
func (g *Gate) bootstrapRevoked(r *http.Request, secret string) error {
	if g.auth == nil {
		return nil
	}
	_, err := g.auth(r.Context(), secret)
	if errors.Is(err, api.ErrTokenRefused) && !errors.Is(err, api.ErrTokenUnknown) {
		return &TokenRefusedError{"the bootstrap token (DATA/api-token): " + err.Error() + "; use an operator's token (mesh token create)"}
	}
	return nil
}

// Require serves next only to a request Check takes; it answers the
// others 401 (a refusal, in plain text, with WWW-Authenticate) or 500 (the
// authenticator failing). It is the gate of the page and of /metrics.
func (g *Gate) Require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := g.Check(r); err != nil {
			WriteRefusal(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WriteRefusal answers a request Check refused, in plain text: 401 for an
// *TokenRefusedError, 500 for anything else.
func WriteRefusal(w http.ResponseWriter, err error) {
	var req *TokenRefusedError
	if errors.As(err, &req) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="meshplane"`)
		http.Error(w, req.Msg, http.StatusUnauthorized)
		return
	}
	http.Error(w, "the controller could not check the token: "+err.Error(), http.StatusInternalServerError)
}
