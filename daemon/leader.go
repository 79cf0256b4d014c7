package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"meshplane/bus"
	"meshplane/events/pgstore"
)

// leaderLock is a store's leader election (pgstore.Store's).
type leaderLock interface {
	AcquireLeader(ctx context.Context) (*pgstore.Leader, error)
	TryLeader(ctx context.Context) (*pgstore.Leader, bool, error)
}

var _ leaderLock = (*pgstore.Store)(nil)

// leadOnLock is a standby's wait to lead: it blocks until this process
// holds the store's leader lock (held on a connection of its own, so it
// ends with the process: a leader killed with SIGKILL frees it at once),
// then leads (ctl.Lead: pushes and writes; the report consumer starts)
// until ctx ends (nil, the lock released) or the lock is lost (an error:
// the controller must stop).
//
// The controller stays a standby meanwhile: its projections follow the
// store's subscription, its API answers reads and refuses writes
// (api.CodeStandby).
//
// A lock already held (taken by TryLeader) is passed as l: the wait is
// skipped. leading is closed once the controller leads.
func leadOnLock(ctx context.Context, lock leaderLock, l *pgstore.Leader, leading chan<- struct{}, bc *bus.Controller, door reportDoor) error {
	ctl, log := door.ctl, door.log
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
	stopConsumer, err := consumeReports(ctx, bc, door)
	if err != nil {
		return err
	}
	ctl.Lead()
	close(leading)
	log.Info("controller: leading (holds the store's leader lock)")
	select {
	case <-ctx.Done():
	case <-l.Lost():
		err = fmt.Errorf("lost the store's leader lock: %w", l.Err())
		log.Error("controller: " + err.Error())
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return errors.Join(err, stopConsumer(sctx))
}
