package pgstore

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
)

// TestLeader: two clients of one database. One leads; the other's TryLeader
// says no and its AcquireLeader waits, then leads once the first releases,
// or once the first's connection dies (as when its process is killed).
func TestLeader(t *testing.T) {
	pgtest.Need(t, srv)
	cases := []struct {
		name string
		end  func(t *testing.T, url string, l *Leader)
	}{
		{"release", func(t *testing.T, _ string, l *Leader) {
			if err := l.Release(); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if err := l.Release(); err != nil {
				t.Errorf("second Release: %v", err)
			}
		}},
		{"connection killed", func(t *testing.T, url string, l *Leader) {
			ctx := testCtx(t, time.Minute)
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			pid := l.conn.PgConn().PID()
			var ok bool
			if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
				t.Fatalf("terminate the leader's backend %d: %v, %v", pid, ok, err)
			}
			select {
			case <-l.Lost():
				if !errors.Is(l.Err(), ErrLeaderLost) {
					t.Errorf("Err after Lost: %v", l.Err())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the leader was not told it lost its lock")
			}
			l.Release()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.Database(t)
			a := openURL(t, url, WithLeaderCheckInterval(100*time.Millisecond))
			b := openURL(t, url, WithLeaderCheckInterval(100*time.Millisecond))
			ctx := testCtx(t, time.Minute)

			la, err := a.AcquireLeader(ctx)
			if err != nil {
				t.Fatalf("a: AcquireLeader: %v", err)
			}
			if l, ok, err := b.TryLeader(ctx); ok || err != nil || l != nil {
				t.Fatalf("b: TryLeader while a leads: %v, %v, %v; want not acquired", l, ok, err)
			}
			if la.Err() != nil {
				t.Errorf("a: Err while leading: %v", la.Err())
			}
			acquired := make(chan *Leader, 1)
			failed := make(chan error, 1)
			go func() {
				l, err := b.AcquireLeader(ctx)
				if err != nil {
					failed <- err
					return
				}
				acquired <- l
			}()
			select {
			case <-acquired:
				t.Fatal("b acquired the lock while a holds it")
			case err := <-failed:
				t.Fatalf("b: AcquireLeader: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			tc.end(t, url, la)
			select {
			case lb := <-acquired:
				defer lb.Release()
			case err := <-failed:
				t.Fatalf("b: AcquireLeader: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("b did not lead within 10s of a's end")
			}
			if l, ok, err := a.TryLeader(ctx); ok || err != nil {
				if l != nil {
					l.Release()
				}
				t.Fatalf("a: TryLeader while b leads: %v, %v", ok, err)
			}
		})
	}
}

// TestAcquireLeaderEnds: a blocked AcquireLeader returns when its ctx ends
// or its store is closed, and holds nothing afterwards.
func TestAcquireLeaderEnds(t *testing.T) {
	pgtest.Need(t, srv)
	url := srv.Database(t)
	holder := openURL(t, url)
	ctx := testCtx(t, time.Minute)
	l, err := holder.AcquireLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()

	waiter := openURL(t, url)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := waiter.AcquireLeader(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AcquireLeader past its deadline: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := waiter.AcquireLeader(ctx); done <- err }()
	time.Sleep(200 * time.Millisecond)
	waiter.Close()
	select {
	case err := <-done:
		if !errors.Is(err, events.ErrClosed) {
			t.Errorf("AcquireLeader after Close: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a blocked AcquireLeader")
	}
	l.Release()
	other := openURL(t, url)
	lo, ok, err := other.TryLeader(ctx)
	if !ok || err != nil {
		t.Fatalf("TryLeader once everyone let go: %v, %v (a cancelled acquire kept the lock?)", ok, err)
	}
	lo.Release()
}

// TestLeaderSessionBounds: the leader lock's session carries the bounds
// that let PostgreSQL end it when the leader's link goes down (keepalives
// and tcp_user_timeout of the server's socket, set by the session itself),
// over TCP as over a Unix socket; a URL's own setting wins.
func TestLeaderSessionBounds(t *testing.T) {
	pgtest.Need(t, srv)
	for _, tc := range []struct {
		name, url string
		want      map[string]string
	}{
		{"tcp", srv.TCPURL("postgres"), map[string]string{"tcp_keepalives_idle": "3", "tcp_keepalives_interval": "1", "tcp_keepalives_count": "3", "tcp_user_timeout": "6000"}},
		{"tcp, the URL's own idle", srv.TCPURL("postgres") + "&tcp_keepalives_idle=7", map[string]string{"tcp_keepalives_idle": "7", "tcp_user_timeout": "6000"}},
	} {
		t.Run(tc.name+", the pool's session", func(t *testing.T) {
			s := openURL(t, tc.url)
			want := map[string]string{"idle_in_transaction_session_timeout": "15s"}
			maps.Copy(want, tc.want)
			for k, want := range want {
				var got string
				if err := s.Pool().QueryRow(testCtx(t, time.Minute), "SHOW "+k).Scan(&got); err != nil || got != want {
					t.Errorf("a session of the pool: %s = %q (%v), want %q", k, got, err, want)
				}
			}
		})
		t.Run(tc.name, func(t *testing.T) {
			s := openURL(t, tc.url)
			l, ok, err := s.TryLeader(testCtx(t, time.Minute))
			if err != nil || !ok {
				t.Fatalf("TryLeader: %v, %v", ok, err)
			}
			defer l.Release()
			for k, want := range tc.want {
				var got string
				if err := l.conn.QueryRow(testCtx(t, time.Minute), "SHOW "+k).Scan(&got); err != nil || got != want {
					t.Errorf("the leader's session: %s = %q (%v), want %q", k, got, err, want)
				}
			}
		})
	}
}

// TestAppendLockOfAStalledWriter: a writer that stops between an append's
// round trips (its transaction holding the append lock, as a controller
// whose link goes down after the first) does not stop every other writer
// for good: PostgreSQL ends its session after
// idle_in_transaction_session_timeout (here the URL's own, 1 s; 15 s by
// default) and the other's append goes through. Over a partition the
// keepalives end it sooner (TestHostsFailover, in cmd/mesh).
func TestAppendLockOfAStalledWriter(t *testing.T) {
	pgtest.Need(t, srv)
	url := srv.Database(t)
	stalled := openURL(t, url+"&idle_in_transaction_session_timeout=1000")
	other := openURL(t, url, WithCommitTimeout(20*time.Second))
	ctx := testCtx(t, time.Minute)
	tx, err := stalled.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, $2)", lockClass, lockAppend); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := other.Append(ctx, "node-novox", events.NoStream, event("test.first")); err != nil {
		t.Fatalf("an append while another writer stalls in its transaction: %v", err)
	}
	waited := time.Since(began)
	if waited < 500*time.Millisecond {
		t.Errorf("the append went through in %v: the stalled writer did not hold the append lock", waited)
	}
	t.Logf("the append went through %v after the stalled writer took the lock", waited.Round(time.Millisecond))
	if err := tx.Commit(ctx); err == nil {
		t.Error("the stalled writer's transaction committed after its session was ended")
	}
}
