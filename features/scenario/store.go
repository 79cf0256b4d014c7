package scenario

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meshplane/events"
	"meshplane/events/pgstore/pgscratch"
	"meshplane/events/storeurl"
	"meshplane/features"
)

// EnvESDBURL names the KurrentDB server `scenario run --store esdb` uses.
const EnvESDBURL = "MESH_ESDB_URL"

// ErrStore is the error of a --store ParseStore refuses: errors.Is finds
// it; the message says what to give.
var ErrStore = errors.New("scenario: a store scenarios cannot run on")

// storeError is a refused --store, its message for the user.
type storeError string

func (e storeError) Error() string        { return string(e) }
func (e storeError) Is(target error) bool { return target == ErrStore }

// Store is where a run's scenarios keep their events: each scenario gets a
// new, empty store of its kind.
//
//   - memory, bolt: the step library opens them.
//   - postgres: a throwaway cluster (pgscratch) started by the first scenario
//     and stopped by Close; a new database per scenario, dropped after it.
//   - postgres://URL: a new database per scenario on that server (the role
//     needs CREATEDB), dropped after it; URL's own database is only
//     connected to.
//   - esdb://URL (or esdb with $MESH_ESDB_URL): one server; each scenario
//     writes under a stream prefix of its own, so it starts empty. Nothing
//     is deleted after it.
//
// A Store is safe for the concurrent use of a run's scenarios.
type Store struct {
	kind string
	url  string // postgres://, esdb:// or ""

	once sync.Once
	srv  *pgscratch.Server // --store postgres
	err  error
	n    atomic.Int64
}

// ParseStore reads scenario run's --store: memory, bolt, postgres, esdb,
// postgres://... or esdb://... (kurrentdb://...). Anything else, and esdb
// without $MESH_ESDB_URL, is an error wrapping ErrStore. Nothing is opened
// or started yet.
func ParseStore(v string) (*Store, error) {
	switch v {
	case features.StoreMemory, features.StoreBolt, features.StorePostgres:
		return &Store{kind: v}, nil
	case features.StoreESDB:
		u := os.Getenv(EnvESDBURL)
		if u == "" {
			return nil, storeError(fmt.Sprintf("--store esdb needs a KurrentDB server: set %s=esdb://HOST:2113?tls=false or give --store esdb://HOST:2113 "+
				"(this build has no KurrentDB of its own to start)", EnvESDBURL))
		}
		v = u
	}
	kind, err := storeurl.KindOf(v)
	if err != nil || kind == storeurl.Bolt || kind == storeurl.Memory {
		return nil, storeError(fmt.Sprintf("--store %q: want memory, bolt, postgres, esdb, postgres://... or esdb://...", storeurl.Redact(v)))
	}
	if kind == storeurl.Postgres {
		return &Store{kind: features.StorePostgres, url: v}, nil
	}
	return &Store{kind: features.StoreESDB, url: v}, nil
}

// Kind is the store's kind, as features.Options.Store takes it.
func (s *Store) Kind() string { return s.kind }

// Options are the step library's options for scenarios on s.
func (s *Store) Options() features.Options {
	return features.Options{Store: s.kind, OpenStore: s.Open}
}

// Open opens a new, empty store for one scenario (features.Options.OpenStore)
// and returns the function that closes it and drops its database. Memory
// and bolt are the step library's to open: an error here.
func (s *Store) Open() (events.Store, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch s.kind {
	case features.StorePostgres:
		return s.openPostgres(ctx)
	case features.StoreESDB:
		prefix := fmt.Sprintf("scenario-%s-", uuid.NewString()[:8])
		st, err := storeurl.Open(ctx, s.url, storeurl.Options{StreamPrefix: prefix})
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
	return nil, nil, fmt.Errorf("store %s is opened by the step library", s.kind)
}

func (s *Store) openPostgres(ctx context.Context) (events.Store, func(), error) {
	var create func(context.Context) (string, error)
	var drop func(context.Context, string) error
	if s.url == "" {
		s.once.Do(func() {
			s.srv, s.err = pgscratch.Start(ctx)
			if errors.Is(s.err, pgscratch.ErrNoPostgres) {
				s.err = fmt.Errorf("%w (install PostgreSQL, set PGTEST_BIN to its bin directory, or give --store postgres://URL)", s.err)
			}
		})
		if s.err != nil {
			return nil, nil, s.err
		}
		create, drop = s.srv.CreateDatabase, s.srv.DropDatabase
	} else {
		create, drop = s.createDatabase, s.dropDatabase
	}
	u, err := create(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := storeurl.Open(ctx, u, storeurl.Options{})
	if err != nil {
		_ = drop(ctx, u)
		return nil, nil, err
	}
	return st, func() {
		st.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = drop(ctx, u)
	}, nil
}

// createDatabase makes a new database on s.url's server and returns its URL.
func (s *Store) createDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("mesh_scenario_%d_%d", os.Getpid(), s.n.Add(1))
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s on %s: %w", name, storeurl.Redact(s.url), err)
	}
	u, err := neturl.Parse(s.url)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func (s *Store) dropDatabase(ctx context.Context, dbURL string) error {
	u, err := neturl.Parse(dbURL)
	if err != nil {
		return err
	}
	return s.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" WITH (FORCE)")
}

func (s *Store) exec(ctx context.Context, sql string) error {
	c, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// Close stops the throwaway cluster, if one was started.
func (s *Store) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}
