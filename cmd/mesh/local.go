package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections"
)

// dataFlag adds --data to fs.
func dataFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("MESH_DATA")
	if def == "" {
		def = ".mesh"
	}
	return fs.String("data", def, "the data `directory` holding the event store (env MESH_DATA)")
}

// local is the mesh as local mode sees it: the store in the data directory,
// the write side over it, and the projections folded from it.
type local struct {
	store   *boltstore.Store
	reg     *events.Registry
	handler *commands.Handler
	views   *projections.Set
	runner  *projections.Runner
	noted   bool // noteSkipped has printed the skipped events
}

// openLocal opens the store in dir. create says whether the command writes:
// only those may create a store, and they hold the file alone. The others
// open it read-only, with a shared lock (two reads run at once), and never
// create or write a file; an empty events.db is reported as damaged, never
// initialised.
func openLocal(dir string, create bool) (*local, error) {
	path := filepath.Join(dir, "events.db")
	var opts []boltstore.Option
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	} else {
		opts = append(opts, boltstore.ReadOnly())
	}
	s, err := boltstore.Open(path, opts...)
	if !create && errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no event store at %s (run 'mesh up' first, or pass --data)", path)
	}
	if err != nil {
		return nil, err
	}
	reg := events.NewRegistry()
	views := projections.New()
	return &local{
		store:   s,
		reg:     reg,
		handler: commands.NewHandler(s, reg),
		views:   views,
		runner:  projections.NewRunner(s, reg, views.All()...),
	}, nil
}

// fold brings the projections up to the store's head.
func (l *local) fold(ctx context.Context) error {
	if err := l.runner.CatchUp(ctx); err != nil {
		return fmt.Errorf("fold projections: %w", err)
	}
	return nil
}

func (l *local) Close() error { return l.store.Close() }

// withLocal opens the store, folds the projections when fold is set, runs
// fn, and closes the store. If the projections had to skip events that did
// not decode, it fails with a *skippedError once fn has printed what it
// could: the answer is partial, and the exit code says so.
func withLocal(ctx context.Context, dir string, create, fold bool, fn func(*local) error) error {
	l, err := openLocal(dir, create)
	if err != nil {
		return err
	}
	defer l.Close()
	if fold {
		if err := l.fold(ctx); err != nil {
			return err
		}
	}
	if err := fn(l); err != nil {
		return err
	}
	if _, total := l.runner.Failures(); total > 0 {
		se := &skippedError{total: total}
		if !l.noted {
			var b strings.Builder
			l.noteSkipped(&b)
			se.note = strings.TrimSpace(b.String())
		}
		return se
	}
	return nil
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

// nodesOr returns names, or every node the status projection knows when
// names is empty.
func (l *local) nodesOr(names []string) []string {
	if len(names) > 0 {
		return names
	}
	return l.views.Status.Nodes()
}

// noteSkipped tells what the projections could not fold: events of types
// this build does not know, and events that did not decode. They are kept
// in the store and counted here, never silently lost.
func (l *local) noteSkipped(w io.Writer) {
	l.noted = true
	if u := l.runner.Unknown(); len(u) > 0 {
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
	if kept, total := l.runner.Failures(); total > 0 {
		fmt.Fprintf(w, "\n%d event(s) could not be folded; the first at position %d (%s): %s\n", total, kept[0].Position, kept[0].Type, kept[0].Err)
	}
}
