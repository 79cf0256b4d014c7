// Package session opens what one CLI command works on: a controller over a
// local event store (not running as a daemon: its projections are folded
// for the call, or resumed from the snapshot the data directory keeps), or
// a client of a running controller's API. Either way the command gets an
// api.Service, so every verb reads and writes alike in both modes.
//
// It touches files: the data directory's event store (through storeurl),
// its snapshot (projections/snapstore), controller.json (a store locked by a
// live controller is reached through that controller), and the token and
// CA files a Target names.
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/commands/importfile"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
	"meshplane/events/storeurl"
	"meshplane/projections"
	"meshplane/projections/snapstore"
	"meshplane/secrets"
)

// ErrNoStore means a read found no event store in the data directory: there
// is no mesh there yet. The error Open returns is also os.ErrNotExist.
var ErrNoStore = errors.New("no event store")

// noStore is ErrNoStore at a path.
type noStore struct{ path string }

func (e noStore) Error() string {
	return fmt.Sprintf("no event store at %s (run 'mesh up' first, or pass --data)", e.path)
}

func (e noStore) Is(target error) bool { return target == ErrNoStore || target == os.ErrNotExist }

// ErrNoToken means a client has no API token to send.
var ErrNoToken = errors.New("no API token")

// Target is where a command works, as its flags and environment say.
type Target struct {
	Data      string // the data directory (local mode)
	Server    string // the controller's URL; "" for local mode
	TokenFile string // the API token's file; "" for Token
	Token     string // the API token itself ($MESH_TOKEN), when there is no TokenFile
	TLSCA     string // a PEM file of CA certificates to verify the controller against
	Store     string // "" or "bolt" for DATA/events.db, else a store URL
	// At, for a read, is the moment it answers for (--at): the session's
	// Service is then the mesh as it stood then (api.Historian). Zero: now.
	At api.At
}

// Bolt reports whether t's store is the bolt file in t.Data.
func (t Target) Bolt() bool {
	k, err := storeurl.KindOf(t.Store)
	return err == nil && k == storeurl.Bolt
}

// Options say how a session is opened.
type Options struct {
	// Write opens the local store for writing (creating it); reads open it
	// read-only and never create one.
	Write bool
	// Fresh, on a data directory holding no store yet, are checked against
	// an empty mesh before the store is created, so that a refused command
	// leaves no store behind.
	Fresh []commands.Command
	// Resume, for a read on the local bolt store, loads the projections from
	// the data directory's snapshot and folds only what is new; Snapshot
	// tunes it, and OnNote hears what it could not use.
	Resume   bool
	Snapshot snapstore.Options
	OnNote   func(string)
	// Clock is the controller's clock in local mode.
	Clock func() time.Time
}

// Session is one command's api.Service: a controller over the local store,
// or a client of a running controller.
type Session struct {
	Service api.Service
	// Local is the controller over the local store; nil when the session
	// asks a running controller.
	Local *controller.Controller
	// Store is the local event store; nil when remote.
	Store events.Store

	// Snapshot is what a local read resumed from (Options.Resume); nil
	// otherwise.
	Snapshot *snapstore.Local

	// at is the moment the session answers for (Target.At), nil for now;
	// remotely resolved on first use (Moment), asked being Target.At.
	at    *api.Moment
	asked api.At
}

// Close closes what the session opened.
func (s *Session) Close() error {
	if s.Snapshot != nil {
		s.Snapshot.Close()
	}
	if s.Store != nil {
		return s.Store.Close()
	}
	return nil
}

// Remote reports whether s asks a running controller.
func (s *Session) Remote() bool { return s.Local == nil }

// Skipped is what the projections could not fold: locally the controller's
// counts, remotely what the answer said (from, for the queries that carry
// it; the others carry none).
func (s *Session) Skipped(from api.Skipped) api.Skipped {
	if s.Local == nil {
		return from
	}
	return s.Local.Skipped()
}

// Open opens t: a client of t.Server, or the local store. A bolt store
// locked by a live controller (DATA/controller.json) is reached through
// that controller, with DATA/api-token unless t names a token file.
func Open(ctx context.Context, t Target, o Options) (*Session, error) {
	if o.Clock == nil {
		o.Clock = func() time.Time { return time.Now().UTC() }
	}
	s, err := open(ctx, t, o)
	if err != nil || t.At.IsZero() {
		return s, err
	}
	if err := s.moveTo(ctx, t.At); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// open is Open for now.
func open(ctx context.Context, t Target, o Options) (*Session, error) {
	if t.Server != "" {
		return client(t, t.Server, t.TokenFile)
	}
	if o.Write && t.Bolt() {
		if err := CheckFresh(ctx, t.Data, o.Fresh); err != nil {
			return nil, commands.BatchRefused(err, len(o.Fresh))
		}
	}
	s, err := storeurl.Open(ctx, t.Store, storeurl.Options{Data: t.Data, ReadOnly: !o.Write, Create: o.Write})
	switch {
	case !o.Write && t.Bolt() && errors.Is(err, os.ErrNotExist):
		return nil, noStore{storeurl.Path(t.Data)}
	case errors.Is(err, boltstore.ErrLocked):
		info, ierr := controller.ReadInfo(t.Data)
		if ierr != nil {
			return nil, err
		}
		tokenFile := t.TokenFile
		if tokenFile == "" {
			tokenFile = filepath.Join(t.Data, httpapi.TokenFile)
		}
		return client(t, info.URL, tokenFile)
	case err != nil:
		return nil, err
	}
	if bs, ok := s.(*boltstore.Store); ok && o.Resume && !o.Write {
		return resumed(ctx, t, o, bs)
	}
	key, err := secretKey(t.Data, o.Write)
	if err != nil {
		s.Close()
		return nil, err
	}
	c, err := controller.New(controller.Config{Store: s, Clock: o.Clock, SecretKey: key, Checkpoints: keeper(t, o)})
	if err != nil {
		s.Close()
		return nil, err
	}
	return &Session{Service: c, Local: c, Store: s}, nil
}

// secretKey is the data directory's secret key (secrets.KeyPath): made by
// a write when there is none (mesh secret set needs it), else the one
// there is (nil, no error, when there is none or it does not read: a read
// opens no secret).
func secretKey(dir string, make bool) (*secrets.Key, error) {
	if make {
		return secrets.LoadOrMakeKey(dir)
	}
	k, err := secrets.LoadKey(dir)
	if err != nil {
		return nil, nil
	}
	return k, nil
}

// resumed is the session of a read on store, the read-only bolt store in
// t.Data, resuming from the snapshot there. It takes store.
func resumed(ctx context.Context, t Target, o Options, store *boltstore.Store) (*Session, error) {
	reg := events.NewRegistry()
	opts := o.Snapshot
	if o.OnNote != nil {
		// As they are made: a query that finds timeline.db damaged says
		// so when it does.
		opts.OnNote = o.OnNote
	}
	k := keeper(t, o)
	opts.Keeper = k
	l, err := snapstore.OpenWith(ctx, store, reg, t.Data, opts)
	if err != nil {
		store.Close()
		return nil, err
	}
	c, err := controller.New(controller.Config{
		Store: store, Registry: reg, Clock: o.Clock,
		Views: l.Views, Runner: l.Runner, TimelineQuery: l.Timeline, Checkpoints: k,
	})
	if err != nil {
		l.Close()
		store.Close()
		return nil, err
	}
	return &Session{Service: c, Local: c, Store: store, Snapshot: l}, nil
}

// keeper keeps a local store's checkpoints in the data directory
// (DATA/checkpoints: projections.DirCheckpoints), the notes to o.OnNote.
func keeper(t Target, o Options) *projections.Keeper {
	note := o.OnNote
	if note == nil {
		note = func(string) {}
	}
	dir := projections.DirCheckpoints(filepath.Join(t.Data, projections.CheckpointDir))
	return projections.NewKeeper(dir, projections.KeepPolicy{}, func(n string) { note("checkpoints: " + n) })
}

// moveTo makes s answer as the mesh stood at at: locally the controller's
// At (projections folded from the nearest checkpoint), remotely ?at= on
// every read (resolved by the controller).
func (s *Session) moveTo(ctx context.Context, at api.At) error {
	if s.Local != nil {
		v, err := s.Local.AtView(ctx, at)
		if err != nil {
			return err
		}
		m := v.AsOf()
		s.Service, s.Local, s.at = v, v.Local(), &m
		return nil
	}
	h, ok := s.Service.(api.Historian)
	if !ok {
		return fmt.Errorf("session: %T answers for now only", s.Service)
	}
	svc, err := h.At(ctx, at)
	if err != nil {
		return err
	}
	s.Service, s.asked = svc, at
	return nil
}

// Moment is the moment s answers for: nil for now (no --at). Remotely it
// is asked once, with a timeline page of one entry.
func (s *Session) Moment(ctx context.Context) (*api.Moment, error) {
	if s.asked.IsZero() || s.at != nil {
		return s.at, nil
	}
	p, err := s.Service.Timeline(ctx, api.TimelineRequest{Limit: 1})
	if err != nil {
		return nil, err
	}
	s.at = p.AsOf
	return s.at, nil
}

// client is a session asking the controller at url, with the token from
// tokenFile, else t.Token.
func client(t Target, url, tokenFile string) (*Session, error) {
	var token string
	switch {
	case tokenFile != "":
		tok, err := httpapi.ReadToken(tokenFile)
		if err != nil {
			return nil, err
		}
		token = tok
	case t.Token != "":
		token = t.Token
	default:
		return nil, fmt.Errorf("%w for %s: give --token-file FILE (the controller's DATA/api-token) or set MESH_TOKEN", ErrNoToken, url)
	}
	var opts []httpapi.ClientOption
	if t.TLSCA != "" {
		pem, err := os.ReadFile(t.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		opts = append(opts, httpapi.WithCA(pem))
	}
	c, err := httpapi.NewClient(url, token, opts...)
	if err != nil {
		return nil, err
	}
	return &Session{Service: c}, nil
}

// CheckFresh checks cs against an empty mesh when dir holds no store yet,
// so that a command refused there does not leave a new, empty store behind.
// Over an existing store the controller's ExecuteAll checks them.
func CheckFresh(ctx context.Context, dir string, cs []commands.Command) error {
	if len(cs) == 0 {
		return nil
	}
	if _, err := os.Stat(storeurl.Path(dir)); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	s := memstore.New()
	defer s.Close()
	return commands.NewHandler(s, events.NewRegistry()).Check(ctx, cs)
}

// ErrHeld means a verb that needs the store itself found it held by a
// running controller.
var ErrHeld = errors.New("held by a running controller")

// OpenStore opens t's store itself, never through a controller: for the
// verbs that read or append events as they are (export, import). A store
// a running controller holds is refused (ErrHeld), hint saying what to do.
func OpenStore(ctx context.Context, t Target, o Options, hint string) (*Session, error) {
	s, err := Open(ctx, t, o)
	if err != nil {
		return nil, err
	}
	if s.Remote() || s.Store == nil {
		s.Close()
		return nil, fmt.Errorf("the store in %s is %w: %s", t.Data, ErrHeld, hint)
	}
	return s, nil
}

// Timeline is every entry req selects, at most limit (0: every one), and
// what could not be folded: on a local store with no limit one query of
// the projections the controller folds; else the Service's pages of page
// entries, followed by their cursors (api.FetchTimeline; following them
// locally would read the timeline once a page, each page widening its
// window from the newest match back to its cursor).
func (s *Session) Timeline(ctx context.Context, req api.TimelineRequest, limit, page int) ([]api.Entry, api.Skipped, error) {
	if s.Local != nil && limit == 0 {
		raw, err := s.Local.QueryTimeline(ctx, req)
		return raw, s.Skipped(api.Skipped{}), err
	}
	req.Limit = page
	raw, sk, err := api.FetchTimeline(ctx, s.Service, req, limit)
	return raw, s.Skipped(sk), err
}

// ImportStore is the store an import appends to (importfile.Store): t's
// own, opened when the file's checks need it, never through a running
// controller; None says a bolt data directory holds no store yet. It is
// the store alone, no controller: an import makes no secret key, and a
// data directory or a bolt file is created only by the append.
func ImportStore(ctx context.Context, t Target) importfile.Store {
	open := func() (events.Store, error) {
		if t.Server != "" {
			return nil, fmt.Errorf("import appends to the store itself, not through %s: give --data or --store", t.Server)
		}
		s, err := storeurl.Open(ctx, t.Store, storeurl.Options{Data: t.Data, Create: true})
		if errors.Is(err, boltstore.ErrLocked) {
			return nil, fmt.Errorf("the store in %s is %w: import appends to the store itself; stop the controller first", t.Data, ErrHeld)
		}
		return s, err
	}
	_, err := os.Stat(storeurl.Path(t.Data))
	return importfile.Store{Open: open, None: t.Bolt() && err != nil}
}
