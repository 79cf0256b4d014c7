package safehttp

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"meshplane/internal/safego"
)

func logTo(b *lockedBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestHandler(t *testing.T) {
	var logs lockedBuffer
	mux := http.NewServeMux()
	mux.HandleFunc("/before", func(http.ResponseWriter, *http.Request) { panic("before writing") })
	mux.HandleFunc("/after", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "partial")
		http.NewResponseController(w).Flush()
		panic("after writing")
	})
	mux.HandleFunc("/abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) {
		// A handler reaches the connection through the wrapper.
		if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
			t.Errorf("SetWriteDeadline through the wrapper: %v", err)
		}
		io.WriteString(w, "fine")
	})
	fail := func(w http.ResponseWriter, _ *http.Request, pe *safego.PanicError) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "custom: "+pe.Where)
	}
	srv := httptest.NewServer(Handler("test.http", logTo(&logs), mux, fail))
	defer srv.Close()
	srv.Config.ErrorLog = nil

	get := func(path string) (int, string, error) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	if code, body, err := get("/before"); err != nil || code != 500 || body != "custom: test.http" {
		t.Errorf("/before = %d %q %v, want the 500 fail writes", code, body, err)
	}
	if _, body, err := get("/after"); err == nil {
		t.Errorf("/after = %q, nil error: want the response cut short", body)
	}
	if _, _, err := get("/abort"); err == nil {
		t.Errorf("/abort: want the response aborted")
	}
	if code, body, err := get("/ok"); err != nil || code != 200 || body != "fine" {
		t.Errorf("/ok = %d %q %v", code, body, err)
	}
	// The server carries on: the next request after the panics is served.
	if code, _, err := get("/ok"); err != nil || code != 200 {
		t.Errorf("after the panics /ok = %d %v", code, err)
	}
	if n := safego.Panics()["test.http"]; n != 2 {
		t.Errorf("counted %d, want 2 (before and after; an abort is not a panic of ours)", n)
	}
	out := logs.String()
	for _, want := range []string{"path=/before", "path=/after", "method=GET"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "/abort") {
		t.Errorf("an abort was reported as a panic:\n%s", out)
	}

	// Without fail: a plain-text 500.
	plain := httptest.NewServer(Handler("test.http.plain", nil, mux, nil))
	defer plain.Close()
	resp, err := http.Get(plain.URL + "/before")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("default fail: %d, want 500", resp.StatusCode)
	}
}

func TestTrackingWriterFlushes(t *testing.T) {
	rec := httptest.NewRecorder()
	tw := &trackingWriter{ResponseWriter: rec}
	if err := http.NewResponseController(tw).Flush(); err != nil {
		t.Fatalf("Flush through the wrapper: %v", err)
	}
	if !rec.Flushed || !tw.wrote {
		t.Errorf("flushed %v, wrote %v", rec.Flushed, tw.wrote)
	}
}
