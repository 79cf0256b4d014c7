package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"meshplane/internal/safego"
	"meshplane/web"
)

// panickyFeed's WaitPast panics after the first position.
type panickyFeed struct{}

func (panickyFeed) WaitPast(_ context.Context, pos uint64) (uint64, error) {
	if pos == 0 {
		return 7, nil
	}
	panic("feed bug")
}

// TestEventsFeedPanicEndsTheStream: a feed that panics ends that page's
// event stream (counted as web.feed) and nothing else: the server answers
// the next stream.
func TestEventsFeedPanicEndsTheStream(t *testing.T) {
	h := web.Handler(nil, testToken, web.Options{Feed: panickyFeed{}, MinInterval: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(h)
	defer srv.Close()
	before := safego.Panics()["web.feed"]
	for i := range 2 {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ui/events", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		b, err := io.ReadAll(res.Body) // ends when the stream does
		res.Body.Close()
		cancel()
		if err != nil {
			t.Fatalf("stream %d did not end cleanly: %v", i, err)
		}
		if !strings.HasPrefix(string(b), "retry: 2000") {
			t.Errorf("stream %d: %q, want the stream's start before its end", i, b)
		}
	}
	if d := safego.Panics()["web.feed"] - before; d != 2 {
		t.Errorf("web.feed panics counted %d, want 2", d)
	}
}
