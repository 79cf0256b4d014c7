package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"meshplane/events"
	"meshplane/internal/atomicfile"
)

// The export format (mesh export writes it, mesh import reads it): JSON
// lines, one event a line, in position order, each the event's envelope
// as events.MarshalJSONLine writes it:
//
//	{"id":"0192...","stream":"node-novox","version":3,"position":17,"type":"declaration.composed",
//	 "schema":1,"at":"2026-09-29T22:46:00Z","actor":"controller","correlation":"...","data":{...}}
//
// the line shape of the scenario step `the event stream receives:`, plus
// the id, version, position, schema, actor, causation and correlation the
// store holds. data is the payload as stored: for declaration.composed
// and apply.reported, the public payloads of DESIGN.md. An import keeps
// id, stream, type, schema, at, actor, causation, correlation and data;
// the target store assigns version and position anew.

// exportPage is how many events export reads at a time.
const exportPage = 4096

func (e *env) exportCmd() *cobra.Command {
	var since uint64
	var output string
	cmd := &cobra.Command{
		Use:   "export [--since POS] [-f FILE]",
		Short: "write the event stream as JSON lines (one event a line, in position order) for mesh import",
		Long: `Export writes every event after position --since (default 0: all) to
stdout, or to --file, as JSON lines: each line is one event's envelope
(id, stream, version, position, type, schema, at, actor, causation,
correlation) with its payload as stored in data. It reads the store
directly (any backend, --store); a store a running controller holds is
refused: export from its database (--store postgres://...), or stop it.
A progress bar (events/s, time left) is shown on stderr when it is a
terminal.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			s, err := t.open(cmd.Context(), false, nil)
			if err != nil {
				return err
			}
			defer s.Close()
			store, ok := s.store.(events.Store)
			if s.remote() || !ok {
				return fmt.Errorf("the store in %s is held by a running controller: export reads the store itself; stop the controller, or export from its database with --store", t.data)
			}
			var n int
			if output == "" || output == "-" {
				n, err = exportEvents(cmd.Context(), store, since, e.stdout, e.stderr)
			} else {
				// Written beside the file and renamed over it once whole: a
				// failed export leaves no partial file under its name.
				err = atomicfile.Write(output, 0o600, func(w io.Writer) (err error) {
					n, err = exportEvents(cmd.Context(), store, since, w, e.stderr)
					return err
				})
			}
			if err != nil {
				return err
			}
			if output != "" && output != "-" {
				fmt.Fprintf(e.stdout, "exported %d event(s) after position %d to %s\n", n, since, output)
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&since, "since", 0, "export the events after this `position` (0: every event)")
	cmd.Flags().StringVarP(&output, "file", "f", "", "write to this `file` instead of stdout")
	return cmd
}

// exportEvents writes the events of store after since, up to its head as
// it was when the export began, to w in the export format, showing
// progress on progressTo when that is a terminal. It returns how many it
// wrote.
func exportEvents(ctx context.Context, store events.Store, since uint64, w io.Writer, progressTo io.Writer) (int, error) {
	head, err := store.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("export: head: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	p := newProgress(progressTo, int64(head-min(head, since)), "exporting")
	defer p.done()
	n, pos := 0, since
	for pos < head {
		page, err := store.ReadAll(ctx, pos, int(min(exportPage, head-pos)))
		if err != nil {
			return n, fmt.Errorf("export: read after %d: %w", pos, err)
		}
		if len(page) == 0 {
			return n, fmt.Errorf("export: the store read nothing after %d, below its head %d", pos, head)
		}
		for _, ev := range page {
			line, err := events.MarshalJSONLine(ev)
			if err != nil {
				return n, fmt.Errorf("export: event at position %d: %w", ev.Position, err)
			}
			if _, err := bw.Write(append(line, '\n')); err != nil {
				return n, fmt.Errorf("export: write: %w", err)
			}
			n++
		}
		pos = page[len(page)-1].Position
		p.add(len(page))
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export: write: %w", err)
	}
	return n, nil
}
