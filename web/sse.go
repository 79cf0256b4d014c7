package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"meshplane/internal/safego"
)

// events streams the projections' position (the format is in the package
// comment): at once, then each time they move, at most once per
// MinInterval, with a keep-alive comment when idle. Before each line it
// checks the request's token again: a token revoked meanwhile ends the
// stream (its revocation moves the projections, so at once), and the
// page's next request is refused.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	if h.opts.Feed == nil {
		http.Error(w, "this page is not live: the server has no feed of changes", http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if h.opts.Done != nil {
		go func() {
			select {
			case <-h.opts.Done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}

	// One goroutine waits on the feed and hands positions over; this one
	// writes them, and keep-alives while none comes.
	moved := make(chan uint64, 1)
	waitErr := make(chan error, 1)
	// A feed that panics ends this stream alone (logged, counted as
	// web.feed); the browser's EventSource comes back.
	go func() {
		waitErr <- safego.Call("web.feed", h.log, func() error {
			var pos uint64
			for {
				p, err := h.opts.Feed.WaitPast(ctx, pos)
				if err != nil {
					return err
				}
				pos = p
				select { // keep only the latest position
				case <-moved:
				default:
				}
				moved <- p
			}
		})
	}()
	send := func(format string, args ...any) bool {
		// A token revoked while the stream runs ends it: the
		// revocation's event moves the feed, so at once.
		if _, _, err := h.gate.Check(r); err != nil {
			return false
		}
		// A write that cannot finish within the keep-alive is a browser
		// that stopped reading: the stream ends.
		_ = rc.SetWriteDeadline(time.Now().Add(h.opts.KeepAlive))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\n\n") {
		return
	}
	keep := time.NewTicker(h.opts.KeepAlive)
	defer keep.Stop()
	var sent uint64
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-waitErr:
			return
		case <-keep.C:
			if !send(": keep-alive\n\n") {
				return
			}
		case p := <-moved:
			if p == sent && !first {
				continue
			}
			first = false
			if !send("event: position\nid: %d\ndata: {\"position\":%d}\n\n", p, p) {
				return
			}
			sent = p
			if !pause(ctx, h.opts.MinInterval) {
				return
			}
		}
	}
}

// pause waits d, or less if ctx ends first (then false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
