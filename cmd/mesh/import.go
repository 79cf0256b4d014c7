package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/events/storeurl"
)

// Batches of an import: consecutive events of one stream, appended in one
// call (one transaction of the store), up to importBatch events or
// importBatchBytes of payload.
const (
	importBatch      = 1000
	importBatchBytes = 4 << 20
)

// maxImportLine bounds one line of an import file: the largest payload an
// event may carry, and room for its envelope.
const maxImportLine = events.MaxDataSize + 64<<10

// maxListed bounds the refused lines an import lists on stderr.
const maxListed = 100

func (e *env) importCmd() *cobra.Command {
	var skipInvalid bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "append the events of a mesh export file to the store (any backend, --store), keeping their ids: importing twice appends nothing",
		Long: `Import reads FILE, written by mesh export (JSON lines, one event a line),
and appends its events to the store in the file's order, keeping each
event's id, time, actor, correlation and payload; the store assigns
versions and positions. An event whose id the store holds already, with
the same content, is not appended again, so importing a file twice (or
after an import that stopped midway) appends only what is missing. An id
the store holds with other content is refused.

The whole file is checked before anything is appended, as the live path
checks what it appends: each line is one event, decoded strictly (no key
given twice, none in another case, no unknown envelope field), with an id
on no earlier line and a time; its type is known and its
schema no newer than this build's; its payload decodes to its type (a
field this build does not know is let by); its node is its stream's
(node-NAME; a module's on module-NAME) and an agent's event is that node's;
every node and module name is a valid name (a DNS label); a setting, a
module's spec, an artifact or a deploy is valid as its command would check
it; an apply report's counts add up and it names one of its node's
declarations; and an event of a node or a module comes after the node's
registration or the module's definition, earlier in the file or in the
store. A file with a bad line appends nothing: every bad line is listed on
stderr with its number and why, and import exits 3 (refused).
--skip-invalid appends the others instead, listing what it skipped.
Consecutive events of one stream are appended together, in batches.

A progress bar (events/s, time left) is shown on stderr when it is a
terminal.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("give one FILE to import (written by mesh export)")
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			return e.importRun(cmd.Context(), t, args[0], skipInvalid)
		},
	}
	cmd.Flags().BoolVar(&skipInvalid, "skip-invalid", false, "append the lines that pass the checks and list the others on stderr, instead of refusing the whole file")
	return cmd
}

// importRun is mesh import: check the file, settle what it needs of the
// store, refuse it or skip its bad lines, append the rest.
func (e *env) importRun(ctx context.Context, t target, path string, skipInvalid bool) error {
	reg := events.NewRegistry()
	im := commands.NewImport(reg)
	accepted, bad, err := checkImportFile(path, im)
	if err != nil {
		return err
	}
	var s *session
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	openStore := func() (events.Store, error) {
		if s == nil {
			if s, err = t.open(ctx, true, nil); err != nil {
				return nil, err
			}
		}
		store, ok := s.store.(events.Store)
		if s.remote() || !ok {
			return nil, fmt.Errorf("the store in %s is held by a running controller: import appends to the store itself; stop the controller first", t.data)
		}
		return store, nil
	}
	if len(im.Pending()) > 0 {
		// What the file needs of the store: read it there, or, on a data
		// directory with no store yet, know it holds nothing (and create
		// nothing for a file that may be refused).
		empty := memstore.New()
		defer empty.Close()
		var r commands.Reader = commands.NewHandler(empty, reg)
		if !t.bolt() || fileExists(storeurl.Path(t.data)) {
			store, err := openStore()
			if err != nil {
				return err
			}
			r = commands.NewHandler(store, reg)
		}
		refused, err := im.Settle(ctx, r)
		if err != nil {
			return err
		}
		accepted -= len(refused)
		bad = mergeLines(bad, refused)
	}
	if len(bad) > 0 {
		listBadLines(e.stderr, path, bad, skipInvalid)
		if !skipInvalid {
			return &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
				"import %s: %d of %d line(s) are not events to import (listed above): nothing was appended (--skip-invalid appends the others)",
				path, len(bad), accepted+len(bad))}
		}
	}
	store, err := openStore()
	if err != nil {
		return err
	}
	p := newProgress(e.stderr, int64(accepted), "importing")
	res, err := importFile(ctx, store, path, im, p.add)
	p.done()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d event(s) from %s: %d appended, %d already in the store", res.read, path, res.appended, res.read-res.appended)
	if len(bad) > 0 {
		fmt.Fprintf(e.stdout, "; %d invalid line(s) skipped", len(bad))
	}
	fmt.Fprintln(e.stdout)
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// mergeLines merges two lists of refused lines, each in line order.
func mergeLines(a, b []*commands.ImportLineError) []*commands.ImportLineError {
	out := append(slices.Clip(a), b...)
	slices.SortStableFunc(out, func(x, y *commands.ImportLineError) int { return cmp.Compare(x.Line, y.Line) })
	return out
}

// listBadLines writes each refused line to w, at most maxListed of them.
func listBadLines(w io.Writer, path string, bad []*commands.ImportLineError, skipped bool) {
	what := ""
	if skipped {
		what = " (skipped)"
	}
	for i, b := range bad {
		if i == maxListed {
			fmt.Fprintf(w, "mesh import: %s: and %d more line(s)%s\n", path, len(bad)-maxListed, what)
			return
		}
		fmt.Fprintf(w, "mesh import: %s: %v%s\n", path, b, what)
	}
}

// eachImportLine calls fn with the number of every non-blank line of the
// file at path and the line, trimmed, or the refusal of a line longer than
// maxImportLine (whose bytes are passed over).
func eachImportLine(path string, fn func(n int, line []byte, tooLong error) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		buf = buf[:0]
		long := false
		var rerr error
		for {
			chunk, err := r.ReadSlice('\n')
			if !long {
				if len(buf)+len(chunk) > maxImportLine+1 { // +1: the newline
					long, buf = true, buf[:0]
				} else {
					buf = append(buf, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			rerr = err
			break
		}
		switch {
		case long:
			err = fn(n, nil, &commands.ImportLineError{Line: n, Err: fmt.Errorf("longer than %d bytes", maxImportLine)})
		case len(bytes.TrimSpace(buf)) > 0:
			err = fn(n, bytes.TrimSpace(buf), nil)
		default:
			err = nil
		}
		if err != nil {
			return err
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("import %s: %w", path, rerr)
		}
	}
}

// checkImportFile is an import's first pass: every line of the file at
// path checked by im, nothing else opened. It returns how many lines im
// accepted and the ones it refused, in line order.
func checkImportFile(path string, im *commands.Import) (int, []*commands.ImportLineError, error) {
	accepted := 0
	var bad []*commands.ImportLineError
	err := eachImportLine(path, func(n int, line []byte, tooLong error) error {
		var le *commands.ImportLineError
		if tooLong == nil {
			_, tooLong = im.Line(line, n)
		}
		switch {
		case tooLong == nil:
			accepted++
		case errors.As(tooLong, &le):
			bad = append(bad, le)
		default:
			return tooLong
		}
		return nil
	})
	return accepted, bad, err
}

// importResult counts what an import read and appended.
type importResult struct {
	read, appended int
}

// importFile is an import's second pass: it appends the events of the file
// at path that im accepted on the first pass (im.Replay) to store, in
// batches of consecutive events of one stream (see importBatch), and calls
// done after each batch with how many it took. A line that is not the one
// checked (the file changed since) stops the import, having appended the
// batches before it.
func importFile(ctx context.Context, store events.Store, path string, im *commands.Import, done func(int)) (importResult, error) {
	var res importResult
	var batch []events.Event
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := appendBatch(ctx, store, batch)
		if err != nil {
			return err
		}
		res.appended += n
		if done != nil {
			done(len(batch))
		}
		batch, size = batch[:0], 0
		return nil
	}
	changed := func(err error) error {
		return fmt.Errorf("import %s: %w: nothing more was appended", path, err)
	}
	err := eachImportLine(path, func(n int, line []byte, tooLong error) error {
		if tooLong != nil {
			return nil // refused on the first pass, and never replayed
		}
		ev, ok, err := im.Replay(line, n)
		switch {
		case err != nil:
			return changed(err)
		case !ok:
			return nil // refused on the first pass: --skip-invalid
		}
		res.read++
		if len(batch) > 0 && (batch[0].Stream != ev.Stream || len(batch) == importBatch || size+len(ev.Data) > importBatchBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, ev)
		size += len(ev.Data)
		return nil
	})
	if err == nil && im.Unreplayed() > 0 {
		err = changed(fmt.Errorf("%d line(s) at its end are gone: %w", im.Unreplayed(), commands.ErrImportChanged))
	}
	if err == nil {
		err = flush()
	}
	return res, err
}

// appendBatch appends evs, all of one stream, and returns how many the
// store did not hold already. A batch the store holds in part (an import
// that stopped midway) is appended one event at a time.
func appendBatch(ctx context.Context, store events.Store, evs []events.Event) (int, error) {
	head, err := store.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("import: head: %w", err)
	}
	stored, err := store.Append(ctx, evs[0].Stream, events.Any, evs...)
	if errors.Is(err, events.ErrIDConflict) && len(evs) > 1 {
		n := 0
		for i := range evs {
			k, err := appendBatch(ctx, store, evs[i:i+1])
			if err != nil {
				return n, err
			}
			n += k
		}
		return n, nil
	}
	if err != nil {
		return 0, fmt.Errorf("import: append %d event(s) to %s from %s: %w", len(evs), evs[0].Stream, evs[0].ID, err)
	}
	// Events the store held already keep their positions, at or below the
	// head before this append; those it appended are above it.
	n := 0
	for _, ev := range stored {
		if ev.Position > head {
			n++
		}
	}
	return n, nil
}
