package pgstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"meshplane/events"
	"meshplane/internal/safego"
)

// ErrLeaderLost is the cause of a Leader's Lost channel closing: the
// connection holding the lock failed, so the lock is gone (PostgreSQL drops
// a session's advisory locks with the session) and another controller may
// already lead.
var ErrLeaderLost = errors.New("pgstore: leader lock lost")

// Leader is a held leader lock: a session-scoped advisory lock on a
// connection of its own, outside the pool. Whoever holds it is the one
// controller that composes, pushes and records reports; the others serve
// reads and wait in AcquireLeader.
//
// The lock lives exactly as long as its connection: Release ends both, and
// so does the death of the process (the server sees the socket close and
// ends the session), which is how a standby takes over from a leader killed
// with SIGKILL. While held, the connection is checked every leader check
// interval; when a check fails, Lost is closed and the holder must stop
// acting as leader at once.
type Leader struct {
	conn *pgx.Conn
	lost chan struct{}
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex // serialises use of conn
	once    sync.Once
	lostErr error
}

// AcquireLeader blocks until this process holds the leader lock of the
// store's database, ctx ends, or the store is closed.
func (s *Store) AcquireLeader(ctx context.Context) (*Leader, error) {
	l, ok, err := s.leader(ctx, true)
	if err == nil && !ok {
		err = errors.New("pgstore: acquire leader: not acquired") // cannot happen: a blocking acquire returns held or an error
	}
	return l, err
}

// TryLeader takes the leader lock if it is free, without waiting: ok is
// false (and the Leader nil) when another session holds it.
func (s *Store) TryLeader(ctx context.Context) (l *Leader, ok bool, err error) {
	return s.leader(ctx, false)
}

func (s *Store) leader(ctx context.Context, wait bool) (*Leader, bool, error) {
	if err := s.check(ctx); err != nil {
		return nil, false, fmt.Errorf("pgstore: leader: %w", err)
	}
	// Close ends a blocked acquire.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.bg, cancel)
	defer stop()

	conn, err := pgx.ConnectConfig(ctx, boundedConnConfig(s.connCf, nil))
	if err != nil {
		return nil, false, fmt.Errorf("pgstore: leader: connect: %w", s.closedOr(err))
	}
	held := true
	if wait {
		_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1, $2)", lockClass, lockLeader)
	} else {
		err = conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", lockClass, lockLeader).Scan(&held)
	}
	if err == nil && !held {
		err = conn.Close(context.Background())
		return nil, false, err
	}
	if err != nil {
		conn.Close(context.Background()) // a lock taken as ctx ended goes with the session
		if s.bg.Err() != nil {
			err = events.ErrClosed
		}
		return nil, false, fmt.Errorf("pgstore: leader: %w", err)
	}
	l := &Leader{conn: conn, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go l.watch(s.cfg.leaderCheck)
	return l, true, nil
}

// The bounds of every session of a store over a network that partitions
// (a controller's link goes down: no FIN, no RST, the sockets just go
// quiet). Without them PostgreSQL keeps the partitioned controller's
// sessions until the kernel's keepalive gives up (about 2 h 11 min by
// default): the leader lock's, so that no standby can lead meanwhile, and
// an append's caught between its two round trips, whose transaction holds
// the append lock, so that the standby, leading, cannot append.
//
// The server's side: each session sets PostgreSQL's tcp_keepalives_* and
// tcp_user_timeout for its own socket (user-settable parameters, sent in the
// startup packet, so no server configuration is needed): the server ends
// the session, releasing its locks, once the controller has not answered
// for LeaderSessionBound at most (keepalives idle 3 s, then 3 probes 1 s
// apart; or 6 s of data unacknowledged). A session of the pool also sets
// idle_in_transaction_session_timeout (IdleInTransactionBound), for a
// controller that hangs between an append's round trips with its link up.
// The client's side: the dialer sets the same keepalives and
// TCP_USER_TIMEOUT on every socket, and the leader's check (a ping every
// leader check interval, 1 s by default, each bounded by max(interval,
// 1 s)) closes Lost at the first ping that fails, so a partitioned leader
// steps down within about two check intervals, well before the server
// frees the lock. A URL's own setting of any of these wins.
const (
	leaderKeepIdle     = 3 * time.Second
	leaderKeepInterval = time.Second
	leaderKeepCount    = 3
	leaderUserTimeout  = 6 * time.Second
	// LeaderSessionBound is how long PostgreSQL may keep a session (and
	// the leader lock, or the append lock) of a controller it no longer
	// hears from.
	LeaderSessionBound = leaderUserTimeout
	// IdleInTransactionBound is how long PostgreSQL lets a session of the
	// pool sit in a transaction waiting for its client.
	IdleInTransactionBound = 15 * time.Second
)

// boundedConnConfig is cf with the bounds above, for any of the store's
// connections; extra are further runtime parameters (a URL's own wins).
func boundedConnConfig(cf *pgx.ConnConfig, extra map[string]string) *pgx.ConnConfig {
	cf = cf.Copy()
	if cf.RuntimeParams == nil {
		cf.RuntimeParams = map[string]string{}
	}
	secs := func(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
	params := map[string]string{
		"tcp_keepalives_idle":     secs(leaderKeepIdle),
		"tcp_keepalives_interval": secs(leaderKeepInterval),
		"tcp_keepalives_count":    strconv.Itoa(leaderKeepCount),
		"tcp_user_timeout":        strconv.Itoa(int(leaderUserTimeout / time.Millisecond)),
	}
	maps.Copy(params, extra)
	for k, v := range params {
		if _, set := cf.RuntimeParams[k]; !set { // the URL's own wins
			cf.RuntimeParams[k] = v
		}
	}
	d := &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: leaderKeepIdle, Interval: leaderKeepInterval, Count: leaderKeepCount},
		Control: func(network, _ string, c syscall.RawConn) error {
			if !strings.HasPrefix(network, "tcp") {
				return nil
			}
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(leaderUserTimeout/time.Millisecond))
			})
			return errors.Join(err, serr)
		},
	}
	cf.DialFunc = d.DialContext
	return cf
}

// poolConnConfig is cf with the bounds above, for a connection of the pool.
func poolConnConfig(cf *pgx.ConnConfig) *pgx.ConnConfig {
	return boundedConnConfig(cf, map[string]string{
		"idle_in_transaction_session_timeout": strconv.Itoa(int(IdleInTransactionBound / time.Millisecond)),
	})
}

// watch checks the connection until Release, closing lost at the first
// failure.
func (l *Leader) watch(every time.Duration) {
	defer close(l.done)
	defer safego.Catch("pgstore.leader", nil)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), max(every, time.Second))
		err := l.conn.Ping(ctx)
		cancel()
		l.mu.Unlock()
		if err != nil {
			l.lostErr = fmt.Errorf("%w: %v", ErrLeaderLost, err)
			close(l.lost)
			return
		}
	}
}

// Lost is closed when the lock is known to be gone; Err then says why.
func (l *Leader) Lost() <-chan struct{} { return l.lost }

// Err returns why the lock was lost (wrapping ErrLeaderLost) once Lost is
// closed, and nil before.
func (l *Leader) Err() error {
	select {
	case <-l.lost:
		return l.lostErr
	default:
		return nil
	}
}

// Release gives the lock up by closing its connection. It is harmless to
// repeat.
func (l *Leader) Release() error {
	var err error
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.mu.Lock()
		defer l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = l.conn.Close(ctx)
	})
	return err
}
