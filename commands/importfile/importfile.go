// Package importfile is mesh import without the CLI: it reads an export
// file (events/export's format, one event a line) and appends its events
// to a store, in two passes over the file.
//
// The first pass (Check) reads every line and hands it to a
// commands.Import, the pure check at the door, which decides what each
// line is; what the accepted lines need of the store (a node registered, a
// module defined, before the file registers or defines it) is then looked
// up in the store, once. Nothing is appended by Check, and a store that
// does not exist yet is not created: its caller says so and what the file
// needs is settled against an empty store.
//
// The file is read once (source.go): a pipe, a FIFO, /dev/stdin or a
// device is copied to a temporary file as the first pass reads it, and the
// second pass reads the copy; a line longer than MaxLine stops the read
// (ErrLineTooLong), and so does the context (a signal), also while a read
// waits on a FIFO.
//
// The second pass (Checked.Append) reads the file again and replays each
// line through the same commands.Import, which refuses a line that is not
// byte for byte the one it checked (the file changed between the passes:
// commands.ErrImportChanged). Consecutive events of one stream are
// appended together, in one call of the store (one transaction), up to
// Batch events or BatchBytes of payload; a batch the store holds in part
// (an import that stopped midway) is appended one event at a time, so an
// import appends only what the store lacks.
//
// Unlike the core it serves, this package does file I/O: it opens and reads
// the import file, and writes nothing but through the store and the
// temporary copy of a file that can be read only once.
package importfile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
)

// Batches of an import: consecutive events of one stream, appended in one
// call (one transaction of the store), up to Batch events or BatchBytes of
// payload.
const (
	Batch      = 1000
	BatchBytes = 4 << 20
)

// MaxLine bounds one line of an import file: the largest payload an event
// may carry, and room for its envelope.
const MaxLine = events.MaxDataSize + 64<<10

// Store is the store an import appends to, opened only when the import
// needs it: to look up what the file needs of it, and to append.
type Store struct {
	// Open opens it; Checked.Close closes what it opened.
	Open func() (events.Store, error)
	// None says it does not exist yet: it holds nothing, and is not to be
	// created by a file that may be refused (Open is called only to
	// append).
	None bool
}

// Checked is an import file after the first pass: what it holds, and the
// commands.Import that checked it, for the second.
type Checked struct {
	// Path is the file's.
	Path string
	// Accepted counts the lines that passed every check.
	Accepted int
	// Bad are the lines refused, in line order.
	Bad []*commands.ImportLineError

	im     *commands.Import
	target Store
	store  events.Store // opened, or nil
	src    source
}

// Check is an import's first pass over the file at path: every line
// checked by a commands.Import (reg's types), then what the accepted lines
// need of the store settled against target, which is opened only if some
// line needs it (and is not None). A read of the file or the store that
// fails is the error (and what it opened is closed); a refused line is
// in Bad. The caller closes the Checked.
func Check(ctx context.Context, path string, reg *events.Registry, target Store) (*Checked, error) {
	c := &Checked{Path: path, im: commands.NewImport(reg), target: target, src: source{path: path}}
	err := eachLine(ctx, &c.src, func(n int, line []byte) error {
		var le *commands.ImportLineError
		_, err := c.im.Line(line, n)
		switch {
		case err == nil:
			c.Accepted++
		case errors.As(err, &le):
			c.Bad = append(c.Bad, le)
		default:
			return err
		}
		return nil
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	if err := c.settleHeld(ctx, reg); err != nil {
		c.Close()
		return nil, err
	}
	if len(c.im.Pending()) == 0 {
		return c, nil
	}
	var st events.Store
	if target.None {
		empty := memstore.New()
		defer empty.Close()
		st = empty
	} else if st, err = c.open(); err != nil {
		c.Close()
		return nil, err
	}
	refused, err := c.im.Settle(ctx, commands.NewHandler(st, reg))
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Accepted -= len(refused)
	c.Bad = mergeLines(c.Bad, refused)
	return c, nil
}

// open opens the target once.
func (c *Checked) open() (events.Store, error) {
	if c.store == nil {
		st, err := c.target.Open()
		if err != nil {
			return nil, err
		}
		c.store = st
	}
	return c.store, nil
}

// Close closes the store Check or Append opened, if either did, and
// removes the copy of a file that could be read only once.
func (c *Checked) Close() error {
	err := c.src.remove()
	if c.store != nil {
		err = errors.Join(c.store.Close(), err)
		c.store = nil
	}
	return err
}

// Lines calls fn with every non-blank line the first pass checked, trimmed,
// and its number, reading them again (from the copy, when the file could
// be read only once), until fn fails or ctx is done. It reads the lines
// as they are now: Append is the pass that refuses a line that changed.
func (c *Checked) Lines(ctx context.Context, fn func(n int, line []byte) error) error {
	return eachLine(ctx, &c.src, fn)
}

// Listed is how Bad is told, a line each, at most max lines (every one
// when max is below zero): each bad line, and how many more there are
// when they are more than max.
func (c *Checked) Listed(max int) []string {
	var out []string
	for i, b := range c.Bad {
		if i == max {
			return append(out, fmt.Sprintf("and %d more line(s)", len(c.Bad)-max))
		}
		out = append(out, b.Error())
	}
	return out
}

// mergeLines merges two lists of refused lines, each in line order.
func mergeLines(a, b []*commands.ImportLineError) []*commands.ImportLineError {
	out := append(slices.Clip(a), b...)
	slices.SortStableFunc(out, func(x, y *commands.ImportLineError) int { return cmp.Compare(x.Line, y.Line) })
	return out
}

// Result counts what an import read and appended.
type Result struct {
	// Read counts the events read on the second pass (the lines
	// accepted); Appended, those of them the store did not hold already.
	Read, Appended int
}

// Append is an import's second pass: it appends the events of the lines
// the first pass accepted to store, in batches of consecutive events of
// one stream (see Batch), and calls done, if set, after each batch with
// how many it took. A line that is not the one checked (the file changed
// since) stops the import, having appended the batches before it
// (commands.ErrImportChanged). Append is called once, and opens the
// target if Check did not, when it has a batch to append.
func (c *Checked) Append(ctx context.Context, done func(int)) (Result, error) {
	var res Result
	var batch []events.Event
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		// Opened for the first batch: a file found changed before it
		// creates no store.
		store, err := c.open()
		if err != nil {
			return err
		}
		n, err := appendBatch(ctx, store, batch)
		if err != nil {
			return err
		}
		res.Appended += n
		if done != nil {
			done(len(batch))
		}
		batch, size = batch[:0], 0
		return nil
	}
	changed := func(err error) error {
		return fmt.Errorf("import %s: %w: nothing more was appended", c.Path, err)
	}
	err := eachLine(ctx, &c.src, func(n int, line []byte) error {
		ev, ok, err := c.im.Replay(line, n)
		switch {
		case err != nil:
			return changed(err)
		case !ok:
			return nil // refused on the first pass: --skip-invalid
		}
		res.Read++
		if len(batch) > 0 && (batch[0].Stream != ev.Stream || len(batch) == Batch || size+len(ev.Data) > BatchBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, ev)
		size += len(ev.Data)
		return nil
	})
	if err == nil && c.im.Unreplayed() > 0 {
		err = changed(fmt.Errorf("%d line(s) at its end are gone: %w", c.im.Unreplayed(), commands.ErrImportChanged))
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

// Refusal is the import's refusal of a file with bad lines (listed
// first): code invalid, nothing appended.
func (c *Checked) Refusal(path string) error {
	return &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
		"import %s: %d of %d line(s) are not events to import (listed above): nothing was appended (--skip-invalid appends the others)",
		path, len(c.Bad), c.Accepted+len(c.Bad))}
}
