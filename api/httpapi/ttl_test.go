package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"meshplane/commands"
)

// TestTTLBounds: a ttl_seconds is checked before it is converted to a
// duration: one past the bound (7 days for a join token, 10 years for an
// API token), however large, is refused naming the field and the bound,
// and nothing is recorded; the bound itself is taken, and expires at now
// plus the bound. Before, 36028797018967568 on a join token overflowed to
// a token of about an hour (200), and 9223372036854775807 on an API token
// recorded one that expired a second before it was made.
func TestTTLBounds(t *testing.T) {
	e := newEnv(t)
	e.ctrl.SetMinter(&joinMinter{url: "https://127.0.0.1:1", ca: "sha256:" + strings.Repeat("0", 64)})
	now := time.Date(2026, 9, 29, 22, 0, 0, 0, time.UTC) // newEnv's clock
	bearer := "Bearer " + token
	cases := []struct {
		name, path, body string
		status           int
		want             string        // in the refusal's message
		expires          time.Duration // after now, when taken
	}{
		{"join token, 2^55+", "/v1/nodes/n6/join-token", `{"operator":"x","ttl_seconds":36028797018967568}`, 422, "ttl_seconds: 36028797018967568: give 1 to 604800", 0},
		{"join token, max int64", "/v1/nodes/n6/join-token", `{"operator":"x","ttl_seconds":9223372036854775807}`, 422, "give 1 to 604800", 0},
		{"join token, a second past 7 days", "/v1/nodes/n6/join-token", `{"operator":"x","ttl_seconds":604801}`, 422, "give 1 to 604800", 0},
		{"join token, negative", "/v1/nodes/n6/join-token", `{"operator":"x","ttl_seconds":-1}`, 422, "give 1 to 604800", 0},
		{"join token, 7 days", "/v1/nodes/n6/join-token", `{"operator":"x","ttl_seconds":604800}`, 200, "", 7 * 24 * time.Hour},
		{"api token, max int64", "/v1/tokens", `{"operator":"x","name":"eve","ttl_seconds":9223372036854775807}`, 422, "ttl_seconds: 9223372036854775807: give 1 to 315360000", 0},
		{"api token, 2^55+", "/v1/tokens", `{"operator":"x","name":"eve","ttl_seconds":36028797018967568}`, 422, "give 1 to 315360000", 0},
		{"api token, a second past 10 years", "/v1/tokens", `{"operator":"x","name":"eve","ttl_seconds":315360001}`, 422, "give 1 to 315360000", 0},
		{"api token, 10 years", "/v1/tokens", `{"operator":"x","name":"eve","ttl_seconds":315360000}`, 200, "", commands.MaxTokenTTL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.head(t)
			status, body := raw(t, e, "POST", tc.path, bearer, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", status, tc.status, body)
			}
			if tc.status != 200 {
				var eb struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal([]byte(body), &eb); err != nil {
					t.Fatalf("body %.300s: %v", body, err)
				}
				if eb.Error.Code != commands.CodeInvalid || !strings.Contains(eb.Error.Message, tc.want) {
					t.Errorf("%s %q, want invalid saying %q", eb.Error.Code, eb.Error.Message, tc.want)
				}
				if e.head(t) != before {
					t.Error("a refused ttl_seconds appended events")
				}
				return
			}
			var ok struct {
				ExpiresAt time.Time `json:"expires_at"`
			}
			if err := json.Unmarshal([]byte(body), &ok); err != nil {
				t.Fatalf("body %.300s: %v", body, err)
			}
			// newEnv's clock moves a second on each reading.
			if want := now.Add(tc.expires); ok.ExpiresAt.Before(want) || ok.ExpiresAt.After(want.Add(time.Minute)) {
				t.Errorf("expires at %v, want %v (within the minute the test's clock moved)", ok.ExpiresAt, want)
			}
		})
	}
}
