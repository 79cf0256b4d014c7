package render_test

import (
	"strings"
	"testing"
	"time"

	"meshplane/api"
	"meshplane/render"
)

// TestTokenListGolden: token list's table (times and ids fixed).
func TestTokenListGolden(t *testing.T) {
	at := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	list := api.TokenList{Tokens: []api.TokenInfo{
		{Name: "admin", ID: "0123456789abcdef", Created: at, By: "controller"},
		{Name: "alice", ID: "fedcba9876543210", Created: at.Add(time.Minute), By: "operator:root", ExpiresAt: at.Add(720 * time.Hour), Revoked: at.Add(time.Hour), RevokedBy: "operator:root"},
		{Name: "bob", ID: "00112233445566ff", Created: at.Add(2 * time.Minute), By: "operator:alice", ExpiresAt: at.Add(24 * time.Hour)},
	}}
	var b strings.Builder
	if err := render.Tokens(&b, list); err != nil {
		t.Fatal(err)
	}
	golden(t, "token-list", b.String())
}
