package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"meshplane/commands"
)

// FuzzTimelineQuery: whatever a query string holds, the parser either
// refuses it as a bad request or yields a request that survives a round
// trip through its own query form.
func FuzzTimelineQuery(f *testing.F) {
	for _, s := range []string{
		"", "node=a&limit=50", "since=2026-09-29T23:02:00Z&until=2026-09-30T00:00:00+02:00",
		"after=12&before=99&forward=true", "limit=-1", "since=yesterday", "after=18446744073709551616",
		"node=a&node=b&type=apply.reported&correlation=x&resource=container/forge-web&module=forge",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r, err := timelineRequestFromQuery(q)
		if err != nil {
			var bad *badRequest
			if !errors.As(err, &bad) {
				t.Fatalf("a refusal that is not a bad request: %v", err)
			}
			return
		}
		back, err := timelineRequestFromQuery(url.Values(timelineQuery(r)))
		if err != nil {
			t.Fatalf("the query form of %+v does not parse: %v", r, err)
		}
		if !back.Since.Equal(r.Since) || !back.Until.Equal(r.Until) {
			t.Fatalf("times changed: %+v → %+v", r, back)
		}
		back.Since, back.Until = r.Since, r.Until
		if back != r {
			t.Fatalf("round trip changed the request: %+v → %+v", r, back)
		}
	})
}

// FuzzDecodeError: any answer decodes to an error; 401 is ErrUnauthorized;
// a rejection status with the API's error form is the same rejection.
func FuzzDecodeError(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":"node-unknown","message":"node a is not registered"}}`))
	f.Add(409, []byte(`{"error":{"code":"already-assigned","message":"x"}}`))
	f.Add(500, []byte(`{"error":{"code":"internal","message":"boom"}}`))
	f.Add(401, []byte(`{}`))
	f.Add(404, []byte("404 page not found\n"))
	f.Add(400, []byte(`{"error":{"code":"","message":""}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		err := decodeError(status, body)
		if err == nil {
			t.Fatal("no error")
		}
		if status == http.StatusUnauthorized {
			if !errors.Is(err, ErrUnauthorized) {
				t.Fatalf("401 decoded as %v", err)
			}
			return
		}
		var eb errorBody
		if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" && rejectionStatus(status) {
			var rej *commands.Rejection
			if !errors.As(err, &rej) || rej.Code != eb.Error.Code || rej.Msg != eb.Error.Message {
				t.Fatalf("status %d %s decoded as %v", status, body, err)
			}
		}
	})
}
