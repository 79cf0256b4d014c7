package events_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meshplane/events"
)

// pages is a PageReader over a fixed list of positions.
func pages(ps ...uint64) events.PageReader {
	return func(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
		var out []events.Event
		for _, p := range ps {
			if p > after && len(out) < limit {
				out = append(out, events.Event{Position: p})
			}
		}
		return out, nil
	}
}

func TestFollowRefusesGapsAndRepeats(t *testing.T) {
	cases := []struct {
		name      string
		after     uint64
		positions []uint64
		delivered int
		wantMsg   string
	}{
		{"gap", 0, []uint64{1, 2, 4}, 2, "expected position 3, store returned 4"},
		{"gap at the start", 2, []uint64{4}, 0, "expected position 3, store returned 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			n := 0
			err := events.Follow(ctx, tc.after, pages(tc.positions...), events.NewSignal(), func(events.Event) error { n++; return nil })
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Follow: got %v, want an error containing %q", err, tc.wantMsg)
			}
			if n != tc.delivered {
				t.Errorf("delivered %d events, want %d", n, tc.delivered)
			}
		})
	}
	t.Run("repeat", func(t *testing.T) {
		repeat := func(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
			return []events.Event{{Position: 1}}, nil // whatever after says
		}
		sig := events.NewSignal()
		sig.Close() // never wait: read again at once
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n := 0
		err := events.Follow(ctx, 0, repeat, sig, func(events.Event) error { n++; return nil })
		if err == nil || !strings.Contains(err.Error(), "expected position 2, store returned 1") || n != 1 {
			t.Errorf("Follow over a reader that repeats: %d delivered, %v", n, err)
		}
	})
}

func TestFollowPagesWithoutWaiting(t *testing.T) {
	total := 2*events.FollowPage + 3
	ps := make([]uint64, total)
	for i := range ps {
		ps[i] = uint64(i + 1)
	}
	errEnough := errors.New("enough")
	n := 0
	// The signal never fires: every page must be read without waiting for it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := events.Follow(ctx, 0, pages(ps...), events.NewSignal(), func(e events.Event) error {
		if n++; n == total {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) || n != total {
		t.Errorf("Follow: %d of %d delivered, then %v", n, total, err)
	}
}

func TestFollowEnds(t *testing.T) {
	t.Run("read error", func(t *testing.T) {
		errRead := errors.New("disk on fire")
		read := func(context.Context, uint64, int) ([]events.Event, error) { return nil, errRead }
		if err := events.Follow(context.Background(), 0, read, events.NewSignal(), nil); !errors.Is(err, errRead) {
			t.Errorf("Follow: got %v, want the read error", err)
		}
	})
	t.Run("ctx done while waiting", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		err := events.Follow(ctx, 0, pages(), events.NewSignal(), func(events.Event) error { return nil })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Follow: got %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("signal wakes it", func(t *testing.T) {
		sig := events.NewSignal()
		ch := make(chan []uint64, 1)
		ch <- nil
		var stored []uint64
		read := func(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
			select {
			case stored = <-ch:
			default:
			}
			return pages(stored...)(ctx, after, limit)
		}
		errEnough := errors.New("enough")
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		go func() {
			done <- events.Follow(ctx, 0, read, sig, func(e events.Event) error { return errEnough })
		}()
		ch <- []uint64{1}
		sig.Notify()
		select {
		case err := <-done:
			if !errors.Is(err, errEnough) {
				t.Errorf("Follow: got %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Follow did not wake on Notify")
		}
	})
}

func TestSignal(t *testing.T) {
	s := events.NewSignal()
	before := s.Changed()
	select {
	case <-before:
		t.Fatal("Changed closed before any Notify")
	default:
	}
	s.Notify()
	<-before // closed by Notify
	after := s.Changed()
	select {
	case <-after:
		t.Fatal("the channel after a Notify is already closed")
	default:
	}
	s.Close()
	s.Close()  // harmless
	s.Notify() // harmless after Close
	<-after
	<-s.Changed() // closed for good
}
