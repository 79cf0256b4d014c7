package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/internal/safego"
)

// TestServePanicIsA500: a handler that panics is answered 500 in the API's
// error form, logged with its stack and counted (api.request), and the
// server answers the next request; a response already begun is cut short.
func TestServePanicIsA500(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/boom", func(http.ResponseWriter, *http.Request) { panic("handler bug") })
	mux.HandleFunc("/half", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "half")
		http.NewResponseController(w).Flush()
		panic("late bug")
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	logs := &syncWriter{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- httpapi.Serve(ctx, ln, mux, httpapi.ServeOptions{Logger: log}) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	before := safego.Panics()["api.request"]

	resp, err := http.Get(base + "/boom")
	if err != nil {
		t.Fatalf("a panic dropped the connection: %v", err)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || err != nil || body.Error.Code != api.CodeInternal {
		t.Errorf("/boom = %d %+v (%v), want 500 internal", resp.StatusCode, body, err)
	}
	if strings.Contains(body.Error.Message, "handler bug") {
		t.Errorf("the panic's value is in the answer: %q", body.Error.Message)
	}
	if resp, err := http.Get(base + "/half"); err == nil {
		// The header came; the body must come short.
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr == nil {
			t.Errorf("/half read whole (%q): want the response cut short", b)
		}
	}
	resp, err = http.Get(base + "/ok")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the panics /ok = %v, %v", resp, err)
	}
	resp.Body.Close()
	if d := safego.Panics()["api.request"] - before; d != 2 {
		t.Errorf("api.request panics counted %d, want 2", d)
	}
	for _, want := range []string{`panic="handler bug"`, `panic="late bug"`, "path=/boom", "stack="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// syncWriter is a log written by the server and read by the test.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
