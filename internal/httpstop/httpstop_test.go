package httpstop_test

import (
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meshplane/internal/httpstop"
)

// serve starts h on a loopback port and returns its address and the
// channel Serve's error arrives on.
func serve(t *testing.T, srv *http.Server) (string, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return ln.Addr().String(), done
}

// get makes one request and reads its answer, so the server has every
// connection dialed before it.
func get(t *testing.T, addr string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestStopPastAConnectionThatSentNothing: http.Server.Shutdown alone would
// wait five seconds for it and fail a five-second grace.
func TestStopPastAConnectionThatSentNothing(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	stopper := httpstop.Track(srv)
	addr, done := serve(t, srv)
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	get(t, addr)
	start := time.Now()
	if err := stopper.Stop(5 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stop took %v past a connection that sent nothing", took)
	}
	if err := <-done; err != http.ErrServerClosed {
		t.Errorf("serve: %v, want http.ErrServerClosed", err)
	}
}

// TestStopWaitsForARequestInFlight, and cuts one that outlives the grace,
// saying so.
func TestStopWaitsForARequestInFlight(t *testing.T) {
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	var states atomic.Int32
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			started <- struct{}{}
			if r.URL.Path == "/slow" {
				<-r.Context().Done()
				return
			}
			<-release
		}),
		ConnState: func(net.Conn, http.ConnState) { states.Add(1) },
	}
	stopper := httpstop.Track(srv)
	addr, done := serve(t, srv)

	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- stopper.Stop(5 * time.Second) }()
	time.Sleep(100 * time.Millisecond) // let the stop begin with the request in flight
	close(release)
	if err := <-answered; err != nil {
		t.Errorf("the request in flight: %v, want its answer", err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("stop: %v", err)
	}
	<-done
	if states.Load() == 0 {
		t.Error("the server's own ConnState hook was not called")
	}

	// A request that outlives the grace is cut, and Stop says so.
	srv = &http.Server{Handler: srv.Handler}
	stopper = httpstop.Track(srv)
	addr, done = serve(t, srv)
	go http.Get("http://" + addr + "/slow") //nolint:errcheck // cut by the stop
	<-started
	err := stopper.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "in flight") {
		t.Errorf("stop past the grace: %v, want it to say requests were cut", err)
	}
	<-done
}
