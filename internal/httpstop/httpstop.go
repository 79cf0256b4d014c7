// Package httpstop stops an http.Server the way the mesh's servers want
// stopping: at once past the connections that never sent a request, after
// a grace for the requests in flight, and by force after that.
//
// http.Server.Shutdown counts a connection that has sent nothing yet
// (http.StateNew) as busy for its first five seconds, and a client's
// transport often dials a spare connection it then never uses. A server
// stopped with a five-second grace then fails its stop for a connection
// that carried nothing (CI saw it in the artifact store). The connections
// tracked here are closed as the stop begins instead: the server is
// refusing new requests from then on, so nothing is lost.
package httpstop

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Stopper stops one http.Server. Make it with Track before the server
// serves.
type Stopper struct {
	srv   *http.Server
	mu    sync.Mutex
	fresh map[net.Conn]struct{} // connections in http.StateNew
}

// Track takes srv's ConnState hook (calling any hook srv already has) and
// returns the Stopper that stops srv.
func Track(srv *http.Server) *Stopper {
	s := &Stopper{srv: srv, fresh: make(map[net.Conn]struct{})}
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		s.mu.Lock()
		if state == http.StateNew {
			s.fresh[c] = struct{}{}
		} else {
			delete(s.fresh, c)
		}
		s.mu.Unlock()
		if prev != nil {
			prev(c, state)
		}
	}
	return s
}

// Stop shuts the server down: it stops listening, closes the connections
// that never sent a request, and waits up to grace for the requests in
// flight. Those still running then are cut, and Stop says how many
// seconds they were given; otherwise it returns nil.
func (s *Stopper) Stop(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.srv.Shutdown(ctx) }()
	// Shutdown closes the listeners as it starts, but a connection accepted
	// just before is fresh after the first sweep: sweep until it returns.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
sweep:
	for {
		s.closeFresh()
		select {
		case err = <-shut:
			break sweep
		case <-tick.C:
		}
	}
	if err != nil {
		s.srv.Close()
		return fmt.Errorf("requests still in flight after %v were cut: %w", grace, err)
	}
	return nil
}

// closeFresh closes every connection that has not sent a request yet.
func (s *Stopper) closeFresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.fresh {
		c.Close()
	}
	clear(s.fresh)
}
