package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/internal/flagcheck"
	"meshplane/session"
)

// Where a command works: the flags every command takes (persistent on the
// root, so they go anywhere on the line).
const (
	flagData      = "data"
	flagServer    = "server"
	flagTokenFile = "token-file"
	flagTLSCA     = "tls-ca"
	flagStore     = "store"
	flagAt        = "at" // a read verb's (addQuery)

	defaultData = ".mesh" // --data without MESH_DATA
)

// addTarget declares the flags naming where commands work.
func addTarget(root *cobra.Command) {
	fs := root.PersistentFlags()
	def := os.Getenv("MESH_DATA")
	if def == "" {
		def = defaultData
	}
	fs.String(flagData, def, "the data `directory` holding the event store (env MESH_DATA)")
	fs.String(flagServer, "", "work against the controller at this `URL` (https://HOST:7480) instead of a local store (env MESH_SERVER)")
	fs.String(flagTokenFile, "", "the controller's API token, read from this `file` (its DATA/api-token; env MESH_TOKEN holds the token itself)")
	fs.String(flagTLSCA, "", "verify the controller's certificate against the CA certificates in this PEM `file`")
	fs.String(flagStore, os.Getenv("MESH_STORE"), "the event store: bolt (the file in --data, the default), postgres://... or esdb://... (kurrentdb://...) (env MESH_STORE)")
	flagcheck.Install(fs, map[string]flagcheck.Check{flagServer: flagcheck.Optional(flagcheck.URLOf("http", "https"))})
}

// target is where one command works, read from its flags and environment
// (session.Resolve).
type target struct {
	session.Target

	// resume, for a query on the local bolt store, loads the projections
	// from the snapshot in the data directory and folds only what is new
	// (localquery.go); notes is where it says what it could not use.
	resume bool
	notes  io.Writer
}

// targetOf reads cmd's target (session.Resolve). localOnly verbs refuse
// --server and ignore $MESH_SERVER.
func targetOf(cmd *cobra.Command, localOnly bool) (target, error) {
	fs := cmd.Flags()
	get := func(name string) string {
		v, err := fs.GetString(name)
		if err != nil {
			panic(fmt.Sprintf("flag --%s is not declared on %s: %v", name, cmd.CommandPath(), err))
		}
		return v
	}
	g := session.Given{
		Data: get(flagData), Server: get(flagServer), TokenFile: get(flagTokenFile), TLSCA: get(flagTLSCA),
		DataSet: fs.Changed(flagData), StoreSet: fs.Changed(flagStore),
		EnvServer: os.Getenv("MESH_SERVER"), EnvToken: os.Getenv("MESH_TOKEN"),
	}
	if f := fs.Lookup(flagAt); f != nil {
		g.At = f.Value.String()
	}
	// scenario run's own --store (memory|bolt|postgres|esdb) shadows this one.
	if f := fs.Lookup(flagStore); f != nil && f == cmd.Root().PersistentFlags().Lookup(flagStore) {
		g.Store = f.Value.String()
	}
	t, err := session.Resolve(g, localOnly, cmd.CommandPath())
	return target{Target: t}, err
}

// open opens t for a command (session.Open): read-only unless write is set
// (only writers create or change a store); fresh are checked against an
// empty mesh first on a fresh data directory.
func (t target) open(ctx context.Context, write bool, fresh []commands.Command) (*session.Session, error) {
	o := session.Options{Write: write, Fresh: fresh, Clock: wallClock}
	if t.resume && !write || !t.At.IsZero() {
		o.Resume, o.Snapshot = t.resume, snapshotOptions
		if t.notes != nil {
			o.OnNote = func(n string) { fmt.Fprintf(t.notes, "mesh: note: %s\n", n) }
		}
	}
	return session.Open(ctx, t.Target, o)
}

// withSession opens cmd's target, runs fn, and closes it.
func withSession(cmd *cobra.Command, write bool, fresh []commands.Command, fn func(*session.Session) error) error {
	return opened(cmd, false, write, fresh, fn)
}

// opened is withSession resuming from the snapshot when resume (withQuery).
func opened(cmd *cobra.Command, resume, write bool, fresh []commands.Command, fn func(*session.Session) error) error {
	t, err := targetOf(cmd, false)
	if err != nil {
		return err
	}
	if resume {
		t.resume, t.notes = true, cmd.ErrOrStderr()
	}
	s, err := t.open(cmd.Context(), write, fresh)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}

// Output formats of the queries (-o).
const (
	outTable = "table"
	outJSON  = "json"
)

// addQuery declares a read verb's flags: -o (addOutput) and --at, the
// moment it answers for (session.Target.At).
func addQuery(cmd *cobra.Command) {
	addOutput(cmd)
	cmd.Flags().String(flagAt, "", "answer as the mesh stood at this `moment`: a position, or an RFC 3339 time (the last event at or before it)")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{flagAt: flagcheck.Optional(session.CheckAt)})
}

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
