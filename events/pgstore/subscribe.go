package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"meshplane/events"
	"meshplane/internal/safego"
)

// Subscribe implements events.Store with events.Follow: it reads pages of
// ReadAll and waits on the store's signal, which three things raise: this
// store's own commits, a NOTIFY received on the LISTEN connection (another
// process's commits), and the poll ticker. A notification is only a
// wake-up: the events are always read from the table, so a lost or
// coalesced notification delays a subscriber by one poll interval at most
// and never loses it an event.
//
// A read that fails to reach the server (down, restarting, connection
// lost) is retried at the poll interval until it succeeds, ctx ends or the
// store is closed; the subscription then goes on from the last position it
// delivered, so an outage costs it neither a gap nor a repeat.
func (s *Store) Subscribe(ctx context.Context, after uint64, fn func(events.Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("pgstore: subscribe: %w", err)
	}
	read := func(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
		for {
			if err := ctx.Err(); err != nil {
				return nil, err // as is: Subscribe returns ctx.Err()
			}
			page, err := s.ReadAll(ctx, after, limit)
			if err == nil || !transient(err) {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return nil, ctxErr
				}
				return page, err
			}
			s.retrying("subscribe", err)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-s.quit:
				return nil, fmt.Errorf("pgstore: subscribe: %w", events.ErrClosed)
			case <-time.After(s.cfg.poll):
			}
		}
	}
	return events.Follow(ctx, after, read, s.sig, fn)
}

func (s *Store) retrying(op string, err error) {
	if s.cfg.onRetry != nil {
		s.cfg.onRetry(op, err)
	}
}

// poll raises the signal every poll interval, until Close.
func (s *Store) poll() {
	defer safego.Catch("pgstore.poll", nil)
	t := time.NewTicker(s.cfg.poll)
	defer t.Stop()
	for {
		select {
		case <-s.bg.Done():
			return
		case <-t.C:
			s.sig.Notify()
		}
	}
}

// notifyEvery is the least time between two notifications of one store:
// the commits made meanwhile share the next.
const notifyEvery = 5 * time.Millisecond

// notifyOthers asks the notifier to tell other processes' subscribers that
// this store committed. It never blocks: a request already pending covers
// this commit too.
func (s *Store) notifyOthers() {
	select {
	case s.notifyReq <- struct{}{}:
	default:
	}
}

// notifier sends a NOTIFY on the store's channel for each request of
// notifyOthers, after the commits it follows, at most one every
// notifyEvery, until Close. It is only a wake-up for subscribers in other
// processes (this store's own are woken by the commit itself), so it stays
// off the commit's path: a NOTIFY inside the append's transaction held
// every append for the notification's queue lock and woke this store's own
// LISTEN connection at each commit, which cost a single writer a third of
// its rate. A notification lost (the process dies after its commit, the
// server is away) delays another process's subscriber by one poll
// interval at most, as before.
func (s *Store) notifier() {
	defer safego.Catch("pgstore.notify", nil)
	for {
		select {
		case <-s.bg.Done():
			return
		case <-s.notifyReq:
		}
		ctx, cancel := context.WithTimeout(s.bg, s.cfg.commitTimeout)
		_, err := s.pool.Exec(ctx, "SELECT pg_notify($1, '')", s.cfg.notify)
		cancel()
		if err != nil && s.bg.Err() == nil {
			s.retrying("notify", err)
		}
		select {
		case <-s.bg.Done():
			return
		case <-time.After(notifyEvery):
		}
	}
}

// listen keeps one dedicated connection LISTENing on notifyChannel, and
// raises the signal at every notification, and after every (re)connection
// since notifications sent while it was away are lost. Connection failures
// are retried at the poll interval until Close.
func (s *Store) listen() {
	defer safego.Catch("pgstore.listen", nil)
	for {
		err := s.listenOnce()
		if s.bg.Err() != nil {
			return
		}
		s.retrying("listen", err)
		select {
		case <-s.bg.Done():
			return
		case <-time.After(s.cfg.poll):
		}
	}
}

func (s *Store) listenOnce() error {
	conn, err := pgx.ConnectConfig(s.bg, s.connCf)
	if err != nil {
		return fmt.Errorf("pgstore: listen: connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(s.bg, "LISTEN "+notifyChannel); err != nil {
		return fmt.Errorf("pgstore: listen: %w", err)
	}
	s.sig.Notify()
	for {
		if _, err := conn.WaitForNotification(s.bg); err != nil {
			return fmt.Errorf("pgstore: listen: %w", err)
		}
		s.sig.Notify()
	}
}
