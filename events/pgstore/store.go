package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"meshplane/events"
	"meshplane/events/internal/groupcommit"
)

var _ events.Store = (*Store)(nil)

// Advisory locks, in PostgreSQL's two-key form: the class is "mesh" in
// ASCII, so that they stay clear of single-key locks of other software on
// the same database. Each is per database.
const (
	lockClass   int32 = 0x6d657368
	lockAppend  int32 = 1 // transaction-scoped: positions are assigned under it
	lockMigrate int32 = 2 // transaction-scoped: one Migrate at a time
	lockLeader  int32 = 3 // session-scoped, on a dedicated connection: the leader
)

// notifyChannel is the LISTEN/NOTIFY channel a commit wakes subscribers on.
// The payload is the new head, for people watching with psql; subscribers
// ignore it and read the table.
const notifyChannel = "pgstore_events"

// Option configures a Store.
type Option func(*config)

type config struct {
	now           func() time.Time
	poll          time.Duration
	commitTimeout time.Duration
	leaderCheck   time.Duration
	migrate       bool
	onRetry       func(op string, err error)
	notify        string                          // the channel commits notify: notifyChannel but in tests
	beforeWrite   func(ctx context.Context) error // tests: runs in the append transaction before the rows are written
	unchained     bool                            // benchmarks: appends as before the chain (no value; pipelined)
}

// WithClock sets the clock that dates events appended with a zero At
// (time.Now by default).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPollInterval sets how often subscriptions look for new events when no
// notification woke them (1s by default): the fallback for a lost LISTEN
// connection or a notification dropped in an outage.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// WithCommitTimeout bounds one group commit (30s by default).
func WithCommitTimeout(d time.Duration) Option { return func(c *config) { c.commitTimeout = d } }

// WithLeaderCheckInterval sets how often a held leader lock checks that its
// connection is alive (1s by default).
func WithLeaderCheckInterval(d time.Duration) Option {
	return func(c *config) { c.leaderCheck = d }
}

// WithoutMigrate makes Open refuse a database that is not at this build's
// schema version, instead of migrating it.
func WithoutMigrate() Option { return func(c *config) { c.migrate = false } }

// WithRetryHook is called each time a subscription, the LISTEN
// connection or the notifier fails to reach the server and will try again
// ("subscribe", "listen", "notify"): op says which.
// Nothing is logged without it.
func WithRetryHook(f func(op string, err error)) Option { return func(c *config) { c.onRetry = f } }

// Store is an events.Store on a PostgreSQL database. It is safe for
// concurrent use; several Stores, in one process or many, may share one
// database.
type Store struct {
	cfg    config
	url    string
	pool   *pgxpool.Pool
	connCf *pgx.ConnConfig // for dedicated connections (LISTEN, leader)
	sig    *events.Signal

	commits   *groupcommit.Committer
	tail      tail          // the log as the last commit left it: the committer's alone
	quit      chan struct{} // closed by Close
	bg        context.Context
	stop      context.CancelFunc // cancels bg: the listener, poller and notifier
	wg        sync.WaitGroup     // listener, poller and notifier
	notifyReq chan struct{}      // a commit to tell other processes of (notifyOthers)
	closeOnce sync.Once
}

// Open connects to the database at url (a libpq URL or key=value string;
// pgxpool's pool_* parameters apply), migrates it to this build's schema
// unless WithoutMigrate is given, and starts the store's committer, its
// LISTEN connection and its poller.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg := config{now: time.Now, poll: time.Second, commitTimeout: 30 * time.Second, leaderCheck: time.Second, migrate: true, notify: notifyChannel}
	for _, o := range opts {
		o(&cfg)
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	pcfg.ConnConfig = poolConnConfig(pcfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open %s: %w", pcfg.ConnConfig.Database, err)
	}
	if err := prepare(ctx, pool, cfg.migrate); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", pcfg.ConnConfig.Database, err)
	}
	bg, stop := context.WithCancel(context.Background())
	s := &Store{
		cfg: cfg, url: url, pool: pool, connCf: pcfg.ConnConfig.Copy(), sig: events.NewSignal(),
		quit: make(chan struct{}), bg: bg, stop: stop, notifyReq: make(chan struct{}, 1),
	}
	if err := s.startCommitter(); err != nil {
		stop()
		pool.Close()
		return nil, fmt.Errorf("pgstore: open %s: %w", pcfg.ConnConfig.Database, err)
	}
	s.wg.Go(s.listen)
	s.wg.Go(s.poll)
	s.wg.Go(s.notifier)
	return s, nil
}

// prepare migrates the database, or checks that it needs no migration.
func prepare(ctx context.Context, pool *pgxpool.Pool, doMigrate bool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if doMigrate {
		_, err := migrate(ctx, conn.Conn())
		return err
	}
	var current int
	err = conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&current)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		current, err = 0, nil
	}
	if err != nil {
		return err
	}
	if want := SchemaVersion(); current != want {
		if current > want {
			return fmt.Errorf("%w: it is at version %d, this build knows %d", ErrSchemaTooNew, current, want)
		}
		return fmt.Errorf("database at schema version %d, this build needs %d: run mesh store migrate", current, want)
	}
	return nil
}

// Pool returns the store's connection pool, for callers that read the
// events table with their own SQL. They must not write to it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// check is the common preamble of every operation.
func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-s.quit:
		return events.ErrClosed
	default:
		return nil
	}
}

// columns, in the order every write inserts them; readColumns, in the
// order every read selects and decodeRow expects them (the chain value,
// NULL in rows older than the chain, last).
const (
	columns     = "position, id, stream, version, type, schema, at_ns, actor, causation, correlation, data"
	readColumns = columns + ", chain"
)

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, after uint64, limit int) ([]events.Event, error) {
	if err := events.ValidateStream(stream); err != nil {
		return nil, fmt.Errorf("pgstore: read %s: %w", stream, err)
	}
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: read %s: %w", stream, err)
	}
	evs, err := s.query(ctx, limit, "SELECT "+readColumns+" FROM events WHERE stream = $1 AND version > $2 ORDER BY version LIMIT $3",
		stream, clampAfter(after), sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("pgstore: read %s: %w", stream, s.closedOr(err))
	}
	return evs, nil
}

// ReadAll implements events.Store. Positions commit in order (see the
// package comment), so what one statement sees is always a prefix of the
// log: a reader never sees position p+1 before p.
func (s *Store) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, fmt.Errorf("pgstore: read all: %w", err)
	}
	evs, err := s.query(ctx, limit, "SELECT "+readColumns+" FROM events WHERE position > $1 ORDER BY position LIMIT $2",
		clampAfter(after), sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("pgstore: read all: %w", s.closedOr(err))
	}
	return evs, nil
}

// Head implements events.Store.
func (s *Store) Head(ctx context.Context) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, fmt.Errorf("pgstore: head: %w", err)
	}
	var head int64
	if err := s.pool.QueryRow(ctx, "SELECT coalesce(max(position), 0) FROM events").Scan(&head); err != nil {
		return 0, fmt.Errorf("pgstore: head: %w", s.closedOr(err))
	}
	return uint64(head), nil
}

// ChainHead implements events.Store: the last row's position, chain value
// and time, in one statement.
func (s *Store) ChainHead(ctx context.Context) (events.ChainHead, error) {
	if err := s.check(ctx); err != nil {
		return events.ChainHead{}, fmt.Errorf("pgstore: chain head: %w", err)
	}
	var (
		pos, at int64
		chain   []byte
	)
	err := s.pool.QueryRow(ctx, "SELECT position, chain, at_ns FROM events ORDER BY position DESC LIMIT 1").Scan(&pos, &chain, &at)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return events.ChainHead{}, nil
	case err != nil:
		return events.ChainHead{}, fmt.Errorf("pgstore: chain head: %w", s.closedOr(err))
	}
	h := events.ChainHead{Position: uint64(pos), At: time.Unix(0, at).UTC()}
	if len(chain) != 0 && copy(h.Chain[:], chain) != len(chain) {
		return events.ChainHead{}, fmt.Errorf("pgstore: chain head: %w: chain value of %d bytes", errCorrupt, len(chain))
	}
	return h, nil
}

// closedOr returns ErrClosed for an error caused by Close (the pool closed
// under a call), and err otherwise.
func (s *Store) closedOr(err error) error {
	select {
	case <-s.quit:
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w (%v)", events.ErrClosed, err)
		}
	default:
	}
	return err
}

func clampAfter(after uint64) int64 {
	if after > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(after)
}

// sqlLimit maps the contract's limit (<= 0: all) to SQL's (NULL: all).
func sqlLimit(limit int) *int64 {
	if limit <= 0 {
		return nil
	}
	l := int64(limit)
	return &l
}

// query runs a read selecting columns, of at most limit rows (<= 0: no
// limit), and decodes its rows. The rows' data share one buffer, each slice
// capped so that appending to one cannot reach the next.
func (s *Store) query(ctx context.Context, limit int, sql string, args ...any) ([]events.Event, error) {
	var out []events.Event
	if limit > 0 {
		// A catch-up reads full pages: growing the slice row by row cost a
		// sixth of a read.
		out = make([]events.Event, 0, min(limit, maxPrealloc))
	}
	var buf arena
	err := s.scan(ctx, sql, args, func(e events.Event) error {
		e.Data = buf.copy(e.Data)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScanAll implements events.Scanner: ReadAll's rows, each handed to fn with
// its data in the connection's buffer.
func (s *Store) ScanAll(ctx context.Context, after uint64, limit int, fn func(events.Event) error) error {
	if err := s.check(ctx); err != nil {
		return fmt.Errorf("pgstore: scan all: %w", err)
	}
	var fnErr error
	err := s.scan(ctx, "SELECT "+readColumns+" FROM events WHERE position > $1 ORDER BY position LIMIT $2",
		[]any{clampAfter(after), sqlLimit(limit)}, func(e events.Event) error {
			fnErr = fn(e)
			return fnErr
		})
	switch {
	case fnErr != nil: // scan stopped there, with fn's error
		return fnErr
	case err != nil:
		return fmt.Errorf("pgstore: scan all: %w", s.closedOr(err))
	}
	return nil
}

// scan runs a read selecting columns and calls fn with each row decoded,
// its Data the row's bytes in the connection's buffer (valid until fn
// returns), stopping at fn's first error.
func (s *Store) scan(ctx context.Context, sql string, args []any, fn func(events.Event) error) error {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for i, fd := range rows.FieldDescriptions() {
		// Text reads the same in both formats; pgx asks for it as text.
		if fd.Format != pgx.BinaryFormatCode && fd.DataTypeOID != pgtype.TextOID {
			return fmt.Errorf("%w: column %d (%s) in text format: the store needs an extended-protocol query mode", errCorrupt, i, fd.Name)
		}
	}
	names := newNames()
	for rows.Next() {
		raw := rows.RawValues() // valid until the next call of Next
		e, err := decodeRow(raw, names)
		if err != nil {
			return err
		}
		e.Data = raw[10]
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// maxPrealloc bounds the events query allocates room for before it has
// read any: a large limit is not a promise of as many rows.
const maxPrealloc = 4096

// arena hands out copies of byte slices from shared chunks, each capped at
// its length.
type arena struct{ buf []byte }

func (a *arena) copy(b []byte) []byte {
	if len(b) > cap(a.buf)-len(a.buf) {
		a.buf = make([]byte, 0, max(64<<10, len(b)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// errCorrupt wraps a row that does not decode: a column of the wrong size or
// format. It is not a connection failure, so nothing retries it.
var errCorrupt = errors.New("pgstore: corrupt row")

// decodeRow decodes the binary wire values of one row of columns, all but
// data (the caller copies it). Its stream, type, actor and correlation come
// from n, which may be nil.
func decodeRow(raw [][]byte, n *names) (events.Event, error) {
	var e events.Event
	if len(raw) != 12 {
		return e, fmt.Errorf("%w: %d columns, want 12", errCorrupt, len(raw))
	}
	switch len(raw[11]) {
	case 0: // NULL: older than the chain
	case len(e.Chain):
		copy(e.Chain[:], raw[11])
	default:
		return e, fmt.Errorf("%w: chain value of %d bytes, want %d", errCorrupt, len(raw[11]), len(e.Chain))
	}
	for i, n := range [...]int{0: 8, 1: 16, 3: 8, 5: 4, 6: 8} {
		if n != 0 && len(raw[i]) != n {
			return e, fmt.Errorf("%w: column %d is %d bytes, want %d", errCorrupt, i, len(raw[i]), n)
		}
	}
	e.Position = binary.BigEndian.Uint64(raw[0])
	copy(e.ID[:], raw[1])
	e.Version = binary.BigEndian.Uint64(raw[3])
	e.Schema = int(int32(binary.BigEndian.Uint32(raw[5])))
	e.At = time.Unix(0, int64(binary.BigEndian.Uint64(raw[6]))).UTC()
	e.Stream, e.Type, e.Actor, e.Correlation = n.get(raw[2]), n.get(raw[4]), n.get(raw[7]), n.get(raw[9])
	if len(raw[8]) > 0 {
		e.Causation = string(raw[8]) // an apply's id, a command's: rarely met twice
	}
	return e, nil
}

// names hands out one string for each distinct name a read meets: the
// events of a page share a few streams, types and actors, and those of one
// command or pass its correlation, so a page of reads allocates each once
// and the projections that keep them (the timeline keeps every entry's)
// hold one copy. A nil *names makes a new string each time.
type names struct{ m map[string]string }

// namesLimit bounds a names; a full one is emptied and fills again.
const namesLimit = 8192

func newNames() *names { return &names{m: make(map[string]string, 256)} }

func (n *names) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if n == nil {
		return string(b)
	}
	if s, ok := n.m[string(b)]; ok { // no allocation: the compiler looks up by the bytes
		return s
	}
	if len(n.m) >= namesLimit {
		clear(n.m)
	}
	s := string(b)
	n.m[s] = s
	return s
}

// transient reports whether err is a failure to reach the server (down,
// restarting, connection lost), which a subscription waits out, rather than
// a refusal or a bug, which it returns.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, events.ErrClosed) || errors.Is(err, errCorrupt) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, crash, starting up
			pgErr.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.Timeout(err) ||
		err.Error() == "conn closed" || errors.Is(err, net.ErrClosed)
}

// Close implements events.Store: it fails queued appends and blocked calls
// with ErrClosed, waits for the commit in progress, and closes the
// connections. It is harmless to repeat.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.quit)
		s.sig.Close()
		s.commits.Close()
		s.stop()
		s.wg.Wait()
		s.pool.Close()
	})
	return nil
}
