package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/controller"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/events/memstore"
	"meshplane/events/storeurl"
)

// Where a command works: the flags every command takes (persistent on the
// root, so they go anywhere on the line).
const (
	flagData      = "data"
	flagServer    = "server"
	flagTokenFile = "token-file"
	flagTLSCA     = "tls-ca"
	flagStore     = "store"
)

// addTarget declares the flags naming where commands work.
func addTarget(root *cobra.Command) {
	fs := root.PersistentFlags()
	def := os.Getenv("MESH_DATA")
	if def == "" {
		def = ".mesh"
	}
	fs.String(flagData, def, "the data `directory` holding the event store (env MESH_DATA)")
	fs.String(flagServer, "", "work against the controller at this `URL` (https://HOST:7480) instead of a local store (env MESH_SERVER)")
	fs.String(flagTokenFile, "", "the controller's API token, read from this `file` (its DATA/api-token; env MESH_TOKEN holds the token itself)")
	fs.String(flagTLSCA, "", "verify the controller's certificate against the CA certificates in this PEM `file`")
	fs.String(flagStore, os.Getenv("MESH_STORE"), "the event store: bolt (the file in --data, the default), postgres://... or esdb://... (kurrentdb://...) (env MESH_STORE)")
	checkFlags(fs, map[string]flagCheck{flagServer: optional(urlOf("http", "https"))})
}

// target is where one command works, read from its flags and environment.
type target struct {
	data      string // the data directory (local mode)
	server    string // the controller's URL; "" for local mode
	tokenFile string
	tlsCA     string
	store     string // --store: "" or "bolt" for DATA/events.db, else a URL

	// resume, for a query on the local bolt store, loads the projections
	// from the snapshot in the data directory and folds only what is new
	// (localquery.go); notes is where it says what it could not use.
	resume bool
	notes  io.Writer
}

// targetOf reads cmd's target. --server wins; else an explicit --data
// means local mode; else $MESH_SERVER, if set; else the local store.
// localOnly verbs refuse --server and ignore $MESH_SERVER.
func targetOf(cmd *cobra.Command, localOnly bool) (target, error) {
	fs := cmd.Flags()
	get := func(name string) string {
		v, err := fs.GetString(name)
		if err != nil {
			panic(fmt.Sprintf("flag --%s is not declared on %s: %v", name, cmd.CommandPath(), err))
		}
		return v
	}
	t := target{data: get(flagData), server: get(flagServer), tokenFile: get(flagTokenFile), tlsCA: get(flagTLSCA)}
	// scenario run's own --store (memory|bolt|postgres|esdb) shadows this one.
	if f := fs.Lookup(flagStore); f != nil && f == cmd.Root().PersistentFlags().Lookup(flagStore) {
		t.store = f.Value.String()
	}
	if err := checkStoreURL(t.store); err != nil {
		return t, err
	}
	if t.server != "" && !t.bolt() && fs.Changed(flagStore) {
		return t, usagef("give --server or --store, not both")
	}
	if localOnly {
		if t.server != "" {
			return t, usagef("%s works on a local store only (--data DIR); it does not go through --server", cmd.CommandPath())
		}
		return t, nil
	}
	if t.server != "" && fs.Changed(flagData) {
		return t, usagef("give --server or --data, not both")
	}
	if t.server == "" && !fs.Changed(flagData) {
		t.server = os.Getenv("MESH_SERVER")
	}
	return t, nil
}

// session is one command's api.Service: a controller over the local store
// (not running: every query catches its projections up), or a client of a
// running controller.
type session struct {
	svc   api.Service
	ctrl  *controller.Controller // local mode
	store io.Closer              // local mode: the events.Store
	local io.Closer              // local mode resuming from a snapshot: its files
}

func (s *session) Close() error {
	if s.local != nil {
		s.local.Close()
	}
	if s.store != nil {
		return s.store.Close()
	}
	return nil
}

// remote reports whether s asks a controller.
func (s *session) remote() bool { return s.ctrl == nil }

// skipped is what the projections could not fold: locally the controller's
// counts, remotely what the answer said (from, for the queries that carry
// it; the others carry none).
func (s *session) skipped(from api.Skipped) api.Skipped {
	if s.ctrl == nil {
		return from
	}
	return s.ctrl.Skipped()
}

// open opens t for a command: a client of t.server, or the local store,
// read-only unless write is set (only writers create or change it). On a
// fresh data directory, fresh are checked against an empty mesh first, so a
// refused command leaves no store behind. A store locked by a live
// controller (DATA/controller.json) is reached through that controller.
func (t target) open(ctx context.Context, write bool, fresh []commands.Command) (*session, error) {
	if t.server != "" {
		return t.client(t.server, t.tokenFile)
	}
	if write && t.bolt() {
		if err := checkFresh(ctx, t.data, fresh); err != nil {
			return nil, batchRefused(err, len(fresh))
		}
	}
	s, err := storeurl.Open(ctx, t.store, storeurl.Options{Data: t.data, ReadOnly: !write, Create: write})
	switch {
	case !write && t.bolt() && errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("no event store at %s (run 'mesh up' first, or pass --data)", storeurl.Path(t.data))
	case errors.Is(err, boltstore.ErrLocked):
		info, ierr := controller.ReadInfo(t.data)
		if ierr != nil {
			return nil, err
		}
		tokenFile := t.tokenFile
		if tokenFile == "" {
			tokenFile = filepath.Join(t.data, httpapi.TokenFile)
		}
		return t.client(info.URL, tokenFile)
	case err != nil:
		return nil, err
	}
	if bs, ok := s.(*boltstore.Store); ok && t.resume && !write {
		return t.resumed(ctx, bs)
	}
	c, err := controller.New(controller.Config{Store: s, Clock: wallClock})
	if err != nil {
		s.Close()
		return nil, err
	}
	return &session{svc: c, ctrl: c, store: s}, nil
}

// bolt reports whether t's store is the bolt file in t.data.
func (t target) bolt() bool {
	k, err := storeurl.KindOf(t.store)
	return err == nil && k == storeurl.Bolt
}

// checkStoreURL checks --store: a store URL (storeurl), not memory (a
// verb's writes would be gone when it exits).
func checkStoreURL(url string) error {
	if k, err := storeurl.KindOf(url); err != nil || k == storeurl.Memory {
		return usagef("--store %q: want bolt, postgres://... (postgresql://...) or esdb://... (kurrentdb://...)", storeurl.Redact(url))
	}
	return nil
}

// client is a session asking the controller at url, with the token from
// tokenFile, else $MESH_TOKEN.
func (t target) client(url, tokenFile string) (*session, error) {
	var token string
	switch {
	case tokenFile != "":
		tok, err := httpapi.ReadToken(tokenFile)
		if err != nil {
			return nil, err
		}
		token = tok
	case os.Getenv("MESH_TOKEN") != "":
		token = strings.TrimSpace(os.Getenv("MESH_TOKEN"))
	default:
		return nil, fmt.Errorf("no API token for %s: give --token-file FILE (the controller's DATA/api-token) or set MESH_TOKEN", url)
	}
	var opts []httpapi.ClientOption
	if t.tlsCA != "" {
		pem, err := os.ReadFile(t.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		opts = append(opts, httpapi.WithCA(pem))
	}
	c, err := httpapi.NewClient(url, token, opts...)
	if err != nil {
		return nil, err
	}
	return &session{svc: c}, nil
}

// checkFresh checks cs against an empty mesh when dir holds no store yet,
// so that a command refused there does not leave a new, empty store behind.
// Over an existing store the controller's ExecuteAll checks them.
func checkFresh(ctx context.Context, dir string, cs []commands.Command) error {
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

// withSession opens cmd's target, runs fn, and closes it.
func withSession(cmd *cobra.Command, write bool, fresh []commands.Command, fn func(*session) error) error {
	t, err := targetOf(cmd, false)
	if err != nil {
		return err
	}
	s, err := t.open(cmd.Context(), write, fresh)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}

// skippedError is a read answered in part: the projections skipped events
// that did not decode (exit 1). note is what to print, if the command has
// not printed it already.
type skippedError struct {
	total int
	note  string
}

func (e *skippedError) Error() string {
	if e.note != "" {
		return e.note
	}
	return fmt.Sprintf("%d event(s) could not be folded: the answer above leaves them out", e.total)
}

// partial returns a *skippedError when sk holds events that did not decode,
// with the note unless printed says it is on stdout already.
func partial(sk api.Skipped, printed bool) error {
	if sk.FailuresTotal == 0 {
		return nil
	}
	se := &skippedError{total: sk.FailuresTotal}
	if !printed {
		var b strings.Builder
		noteSkipped(&b, sk)
		se.note = strings.TrimSpace(b.String())
	}
	return se
}

// noteSkipped tells what the projections could not fold: events of types
// this build does not know, and events that did not decode. They are kept
// in the store and counted here, never silently lost.
func noteSkipped(w io.Writer, sk api.Skipped) {
	if u := sk.UnknownTypes; len(u) > 0 {
		types := make([]string, 0, len(u))
		for t := range u {
			types = append(types, t)
		}
		sort.Strings(types)
		parts := make([]string, len(types))
		for i, t := range types {
			parts[i] = fmt.Sprintf("%s: %d", t, u[t])
		}
		fmt.Fprintf(w, "\nskipped events of types this build does not know (kept in the store): %s\n", strings.Join(parts, ", "))
	}
	if sk.FailuresTotal > 0 && len(sk.Failures) > 0 {
		f := sk.Failures[0]
		fmt.Fprintf(w, "\n%d event(s) could not be folded; the first at position %d (%s): %s\n", sk.FailuresTotal, f.Position, f.Type, f.Err)
	} else if sk.FailuresTotal > 0 {
		fmt.Fprintf(w, "\n%d event(s) could not be folded\n", sk.FailuresTotal)
	}
}

// Output formats of the queries (-o).
const (
	outTable = "table"
	outJSON  = "json"
)

// addOutput declares -o table|json on a query, and --json, its old
// spelling, hidden.
func addOutput(cmd *cobra.Command) {
	cmd.Flags().StringP("output", "o", outTable, "output `format`: table or json")
	cmd.Flags().Bool("json", false, "print JSON (deprecated: -o json)")
	_ = cmd.Flags().MarkHidden("json")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{outTable, outJSON}, cobra.ShellCompDirectiveNoFileComp
	})
}

// outputOf is the format a query was asked for.
func outputOf(cmd *cobra.Command) (string, error) {
	if j, _ := cmd.Flags().GetBool("json"); j {
		return outJSON, nil
	}
	o, _ := cmd.Flags().GetString("output")
	switch o {
	case outTable, outJSON:
		return o, nil
	}
	return "", usagef("-o %q: want table or json", o)
}
