package controllerd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"meshplane/bus"
	"meshplane/events/pgstore"
	"meshplane/internal/safego"
)

// Leadership is the leader election of a store several controllers share:
// one of them holds its lock and leads (composes, pushes, records reports,
// takes writes), the others are standbys until they take it. A PostgreSQL
// store's advisory lock is one (pgLeadership); a test's fake is another.
type Leadership interface {
	// AcquireLeader blocks until this process holds the lock, or ctx ends
	// (an error).
	AcquireLeader(ctx context.Context) (LeaderLock, error)
	// TryLeader takes the lock if it is free, without waiting: ok is false
	// (and the lock nil) when another process holds it.
	TryLeader(ctx context.Context) (l LeaderLock, ok bool, err error)
}

// LeaderLock is a held leader lock.
type LeaderLock interface {
	// Lost is closed when the lock is known to be gone (another process
	// may lead already); Err then says why.
	Lost() <-chan struct{}
	// Err is why the lock was lost once Lost is closed, nil before.
	Err() error
	// Release gives the lock up; it is harmless to repeat.
	Release() error
}

// pgLeadership is a PostgreSQL store's leader election (its advisory lock,
// held on a connection of its own) as a Leadership.
type pgLeadership struct{ s *pgstore.Store }

var _ LeaderLock = (*pgstore.Leader)(nil)

func (p pgLeadership) AcquireLeader(ctx context.Context) (LeaderLock, error) {
	l, err := p.s.AcquireLeader(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (p pgLeadership) TryLeader(ctx context.Context) (LeaderLock, bool, error) {
	l, ok, err := p.s.TryLeader(ctx)
	if err != nil || !ok {
		return nil, false, err // never a nil *pgstore.Leader in the interface
	}
	return l, true, nil
}

// leadOnLock is a standby's wait to lead: it blocks until this process
// holds the leader lock (PostgreSQL's is held on a connection of its own,
// so it ends with the process: a leader killed with SIGKILL frees it at
// once),
// then leads (ctl.Lead: pushes and writes; the report consumer starts)
// until ctx ends (nil, the lock released) or the lock is lost (an error:
// the controller must stop).
//
// Over a network that partitions (the leader's link down, no connection
// closed) the bounds are pgstore's (leader.go): the leader's lock check
// pings every second (pgstore.WithLeaderCheckInterval), each ping bounded
// by a second, and closes Lost at the first that fails, so a partitioned
// leader stops leading (this returns, the controller exits) about 2 s
// after the cut; PostgreSQL ends the partitioned session, freeing the lock
// for a standby, within pgstore.LeaderSessionBound (6 s: the session's own
// TCP keepalives and tcp_user_timeout, set by the client, no server
// setting needed), so a standby leads 6 to 7 s after the cut (about 6 s
// measured by TestHostsFailover). The two never lead at once as far as the
// store knows, but for up to ~2 s a partitioned leader may still act on
// what it can reach.
//
// The controller stays a standby meanwhile: its projections follow the
// store's subscription, its API answers reads and refuses writes
// (api.CodeStandby).
//
// A lock already held (taken by TryLeader) is passed as l: the wait is
// skipped. leading is closed once the controller leads.
func leadOnLock(ctx context.Context, lock Leadership, l LeaderLock, leading chan<- struct{}, bc *bus.ControllerConn, door reportDoor) error {
	ctl, log := door.ctl, door.log
	held := l != nil
	if l == nil {
		log.Info("controller: standby: waiting for the store's leader lock")
		var err error
		if l, err = lock.AcquireLeader(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("leader lock: %w", err)
		}
	}
	defer l.Release()
	// It leads at once (writes taken, pushes sent), and starts the report
	// consumer as soon as the bus takes it (leadReports): a clustered bus
	// that lost the last leader's server elects new leaders for its bucket
	// and stream in 4 to 9 s (NATS's raft election timeout), and reports
	// wait in the stream meanwhile. Having waited, it takes over from
	// another leader (takeOver).
	ctl.Lead()
	close(leading)
	log.Info("controller: leading (holds the store's leader lock)")
	type started struct {
		stop func(context.Context) error
		err  error
	}
	consuming := make(chan started, 1)
	cctx, stopTrying := context.WithCancel(ctx) // the tries, not the consumer started
	defer stopTrying()
	go func() {
		var st started
		st.err = safego.Call("controller.lead", log, func() error {
			var err error
			st.stop, err = leadReports(cctx, bc, door, !held)
			return err
		})
		consuming <- st
	}()
	var stopConsumer func(context.Context) error
	var err error
	for stopConsumer == nil && err == nil {
		select {
		case st := <-consuming:
			if st.err != nil {
				if ctx.Err() != nil {
					return nil // stopping before the consumer started
				}
				return st.err
			}
			stopConsumer = st.stop
		case <-l.Lost():
			err = fmt.Errorf("lost the store's leader lock: %w", l.Err())
			log.Error("controller: " + err.Error())
		}
	}
	if err == nil {
		select {
		case <-ctx.Done():
		case <-l.Lost():
			err = fmt.Errorf("lost the store's leader lock: %w", l.Err())
			log.Error("controller: " + err.Error())
		}
	} else {
		stopTrying()
		if st := <-consuming; st.stop != nil { // started meanwhile
			stopConsumer = st.stop
		}
	}
	if stopConsumer == nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return errors.Join(err, stopConsumer(sctx))
}
