// Package storeurl opens the event store a URL names. It is the one way
// meshplane opens a store: the mesh command's verbs, the controller, the
// simulator and the scenario runner all call Open.
//
// The forms of a store URL:
//
//	"" or "bolt"     the bolt file DATA/events.db (boltstore), DATA being
//	                 Options.Data
//	postgres://...   a PostgreSQL database (pgstore); postgresql:// too
//	esdb://...       a KurrentDB server (esdbstore); esdb+discover://, and
//	                 kurrentdb:// and kurrentdb+discover://, KurrentDB's
//	                 newer spellings of the same
//	memory           a new, empty store in memory (memstore), for scenarios
//	                 and tests: gone when closed
//
// Anything else is ErrUnknown. A URL is named in messages only with its
// password replaced (Redact).
//
// A store on a server must exist already (Create makes only the bolt file
// and its data directory). Opened for writing, a PostgreSQL database is
// brought to this build's schema first (as mesh store migrate does);
// opened read-only it is left as it is, and a database at another
// version fails, naming mesh store migrate.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/esdbstore"
	"meshplane/events/memstore"
	"meshplane/events/pgstore"
)

// Kind is the kind of store a URL names.
type Kind string

// The kinds of store.
const (
	Bolt      Kind = "bolt"
	Postgres  Kind = "postgres"
	KurrentDB Kind = "esdb"
	Memory    Kind = "memory"
)

// File is the bolt store's file in its data directory.
const File = "events.db"

// Path is the bolt store's file in the data directory data.
func Path(data string) string { return filepath.Join(data, File) }

// ErrUnknown is the error of a URL that names no kind of store.
var ErrUnknown = errors.New("not a store URL (want bolt, memory, postgres://... (postgresql://...) or esdb://... (kurrentdb://...))")

// ErrOptions is the error of Options that cannot go together, or that the
// URL's kind of store needs and lacks.
var ErrOptions = errors.New("bad store options")

// KindOf is the kind of store url names, or an error wrapping ErrUnknown.
func KindOf(url string) (Kind, error) {
	switch {
	case url == "" || url == string(Bolt):
		return Bolt, nil
	case url == string(Memory):
		return Memory, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return Postgres, nil
	case strings.HasPrefix(url, "esdb://"), strings.HasPrefix(url, "esdb+discover://"),
		strings.HasPrefix(url, "kurrentdb://"), strings.HasPrefix(url, "kurrentdb+discover://"):
		return KurrentDB, nil
	}
	return "", fmt.Errorf("storeurl: %q: %w", Redact(url), ErrUnknown)
}

// Redact is url with its password, if it has one, replaced by "xxxxx", for
// messages. A URL that does not parse (a bad port, say) loses its password
// too: whatever stands between "://USER:" and the "@" of its authority.
func Redact(url string) string {
	u, err := neturl.Parse(url)
	if err != nil {
		return redactRaw(url)
	}
	if u.User == nil {
		return url
	}
	if _, ok := u.User.Password(); !ok {
		return url
	}
	return u.Redacted()
}

// redactRaw replaces the password of a URL that does not parse.
func redactRaw(url string) string {
	i := strings.Index(url, "://")
	if i < 0 {
		return url
	}
	auth := url[i+3:]
	if end := strings.IndexAny(auth, "/?#"); end >= 0 {
		auth = auth[:end]
	}
	at := strings.LastIndex(auth, "@")
	if at < 0 {
		return url
	}
	colon := strings.Index(auth[:at], ":")
	if colon < 0 {
		return url
	}
	start := i + 3 + colon + 1
	return url[:start] + "xxxxx" + url[i+3+at:]
}

// Options are how Open opens a store.
type Options struct {
	// Data is the data directory holding the bolt file (Path). A bolt
	// store needs it; the other kinds ignore it.
	Data string

	// ReadOnly opens the store for reading only: the bolt file with a
	// shared lock (beside other readers, never beside a writer), a
	// PostgreSQL database without migrating it. The caller does not
	// append to it (a bolt store refuses with boltstore.ErrReadOnly).
	ReadOnly bool

	// Create makes the data directory and the bolt file when they are
	// missing. Without it a missing bolt file is an error wrapping
	// os.ErrNotExist. It cannot go with ReadOnly.
	Create bool

	// StreamPrefix, for KurrentDB, is the prefix of the store's streams
	// (esdbstore.DefaultPrefix when empty): stores with different
	// prefixes share a server and never see each other's events.
	StreamPrefix string

	// Logger, when set, is told what the store retries (PostgreSQL: a
	// lost connection, a serialization failure).
	Logger *slog.Logger

	// WalkInBackground, for a bolt file opened for writing, walks its
	// structure after Open returns instead of before
	// (boltstore.WalkInBackground): the controller's start, which resumes
	// from a checkpoint, does not wait for a read of the whole file.
	WalkInBackground bool
}

// Open opens the store url names (see the package comment for the forms).
// Errors name the store: the bolt file's path, or url without its password.
// A bolt file another process holds for writing is an error wrapping
// boltstore.ErrLocked.
func Open(ctx context.Context, url string, o Options) (events.Store, error) {
	kind, err := KindOf(url)
	if err != nil {
		return nil, err
	}
	if o.ReadOnly && o.Create {
		return nil, fmt.Errorf("storeurl: open %s: %w: read-only and create together", Describe(url, o), ErrOptions)
	}
	switch kind {
	case Memory:
		return memstore.New(), nil
	case Bolt:
		return openBolt(o)
	case Postgres:
		var opts []pgstore.Option
		if o.ReadOnly {
			opts = append(opts, pgstore.WithoutMigrate())
		}
		if o.Logger != nil {
			log := o.Logger
			opts = append(opts, pgstore.WithRetryHook(func(op string, err error) {
				log.Warn("event store: retry", "store", Redact(url), "op", op, "err", err)
			}))
		}
		s, err := pgstore.Open(ctx, url, opts...)
		if err != nil {
			return nil, fmt.Errorf("open the event store at %s: %w", Redact(url), err)
		}
		return s, nil
	default: // KurrentDB
		var opts []esdbstore.Option
		if o.StreamPrefix != "" {
			opts = append(opts, esdbstore.WithPrefix(o.StreamPrefix))
		}
		s, err := esdbstore.Open(ctx, esdbScheme(url), opts...)
		if err != nil {
			return nil, fmt.Errorf("open the event store at %s: %w", Redact(url), err)
		}
		return s, nil
	}
}

// openBolt opens the bolt file in o.Data. Its errors (boltstore's) name
// the file already.
func openBolt(o Options) (events.Store, error) {
	if o.Data == "" {
		return nil, fmt.Errorf("storeurl: open bolt: %w: no data directory given", ErrOptions)
	}
	path := Path(o.Data)
	var opts []boltstore.Option
	switch {
	case o.ReadOnly:
		opts = append(opts, boltstore.ReadOnly())
	case o.Create:
		if err := os.MkdirAll(o.Data, 0o755); err != nil {
			return nil, fmt.Errorf("open the event store at %s: %w", path, err)
		}
	default:
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open the event store at %s: %w", path, err)
		}
	}
	if o.WalkInBackground && !o.ReadOnly {
		opts = append(opts, boltstore.WalkInBackground())
	}
	return boltstore.Open(path, opts...)
}

// Describe names the store url and o open, for messages: "bolt
// DATA/events.db", "memory", or the kind and url without its password
// ("postgres postgres://mesh:xxxxx@db/mesh").
func Describe(url string, o Options) string {
	kind, err := KindOf(url)
	switch {
	case err != nil:
		return Redact(url)
	case kind == Bolt:
		return "bolt " + Path(o.Data)
	case kind == Memory:
		return string(Memory)
	}
	return string(kind) + " " + Redact(url)
}

// esdbScheme is a KurrentDB URL in the scheme its client takes:
// kurrentdb:// is its newer spelling of esdb://.
func esdbScheme(url string) string {
	if rest, ok := strings.CutPrefix(url, "kurrentdb"); ok {
		return "esdb" + rest
	}
	return url
}
