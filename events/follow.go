package events

import (
	"context"
	"fmt"
	"sync"
)

// Signal is a broadcast that the store's head has moved. Stores that have no
// native subscription (memstore, boltstore) notify it after every commit and
// implement Subscribe with Follow. The zero value is not usable; use
// NewSignal.
type Signal struct {
	mu     sync.Mutex
	ch     chan struct{}
	closed bool
}

// NewSignal returns a Signal with nobody waiting.
func NewSignal() *Signal { return &Signal{ch: make(chan struct{})} }

// Changed returns a channel that is closed at the next Notify (or Close).
// Take it before reading, so that a commit between the read and the wait is
// not missed.
func (s *Signal) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// Notify wakes every waiter.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	close(s.ch)
	s.ch = make(chan struct{})
}

// Close wakes every waiter, now and later, for good.
func (s *Signal) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// PageReader reads the events after a position, at most limit of them: a
// Store's ReadAll.
type PageReader func(ctx context.Context, after uint64, limit int) ([]Event, error)

// FollowPage is how many events Follow reads at a time.
const FollowPage = 1024

// Follow implements Store.Subscribe over a paged reader and a Signal: it
// delivers what is stored after the position after, then waits for the
// signal and delivers what was committed meanwhile, until ctx is done, read
// fails (a closed store's read returns ErrClosed), or fn returns an error.
//
// Positions are dense, so Follow checks that each event's position is the
// one after the last it delivered and fails loudly if a store ever breaks
// that promise, rather than skip or repeat an event.
func Follow(ctx context.Context, after uint64, read PageReader, sig *Signal, fn func(Event) error) error {
	for {
		changed := sig.Changed()
		page, err := read(ctx, after, FollowPage)
		if err != nil {
			return err
		}
		for _, e := range page {
			if e.Position != after+1 {
				return fmt.Errorf("events: follow: expected position %d, store returned %d", after+1, e.Position)
			}
			if err := fn(e); err != nil {
				return err
			}
			after = e.Position
		}
		if len(page) == FollowPage {
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}
