package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"meshplane/events"
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

// errImportLine marks a line of an import file that is not an event to
// import; the error names the line.
var errImportLine = errors.New("not an event to import")

func (e *env) importCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE",
		Short: "append the events of a mesh export file to the store (any backend, --store), keeping their ids: importing twice appends nothing",
		Long: `Import reads FILE, written by mesh export (JSON lines, one event a line),
and appends its events to the store in the file's order, keeping each
event's id, time, actor, correlation and payload; the store assigns
versions and positions. An event whose id the store holds already, with
the same content, is not appended again, so importing a file twice (or
after an import that stopped midway) appends only what is missing. An id
the store holds with other content is refused.

The whole file is checked before anything is appended: a line that is not
an event (bad JSON, no id, no time, an invalid field, an id seen twice)
is refused, naming its line, and nothing is written. Consecutive events of
one stream are appended together, in batches.

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
			ctx := cmd.Context()
			total, err := checkImportFile(args[0])
			if err != nil {
				return err
			}
			s, err := t.open(ctx, true, nil)
			if err != nil {
				return err
			}
			defer s.Close()
			store, ok := s.store.(events.Store)
			if s.remote() || !ok {
				return fmt.Errorf("the store in %s is held by a running controller: import appends to the store itself; stop the controller first", t.data)
			}
			p := newProgress(e.stderr, int64(total), "importing")
			res, err := importFile(ctx, store, args[0], p.add)
			p.done()
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "imported %d event(s) from %s: %d appended, %d already in the store\n", res.read, args[0], res.appended, res.read-res.appended)
			return nil
		},
	}
}

// decodeImportLine decodes one line of an export file: an event with an id
// and a time (so that importing it again is a no-op), valid as every store
// validates it. n is the line's number, for the error.
func decodeImportLine(line []byte, n int) (events.Event, error) {
	ev, err := events.UnmarshalJSONLine(line)
	if err != nil {
		return events.Event{}, fmt.Errorf("line %d: %w: %w", n, errImportLine, err)
	}
	switch {
	case ev.ID == uuid.Nil:
		return events.Event{}, fmt.Errorf("line %d: %w: no id (an import keeps each event's id, so that importing again appends nothing)", n, errImportLine)
	case ev.At.IsZero():
		return events.Event{}, fmt.Errorf("line %d: %w: no time (at)", n, errImportLine)
	}
	ev.At = ev.At.UTC()
	ev.Version, ev.Position = 0, 0
	if len(ev.Data) == 0 {
		ev.Data = []byte("{}") // as a store keeps an event without data
	}
	if err := ev.Validate(fmt.Sprintf("line %d", n)); err != nil {
		return events.Event{}, fmt.Errorf("%w: %w", errImportLine, err)
	}
	return ev, nil
}

// eachImportLine calls fn with every non-blank line of the file at path,
// decoded, and its number.
func eachImportLine(path string, fn func(ev events.Event, n int) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxImportLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		ev, err := decodeImportLine(line, n)
		if err != nil {
			return fmt.Errorf("import %s: %w", path, err)
		}
		if err := fn(ev, n); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("import %s: line %d: %w: longer than %d bytes", path, n+1, errImportLine, maxImportLine)
		}
		return fmt.Errorf("import %s: %w", path, err)
	}
	return nil
}

// checkImportFile reads the whole file once and checks every line, and
// that no id appears twice; it returns how many events it holds.
func checkImportFile(path string) (int, error) {
	seen := map[uuid.UUID]int{}
	err := eachImportLine(path, func(ev events.Event, n int) error {
		if first, dup := seen[ev.ID]; dup {
			return fmt.Errorf("import %s: line %d: %w: id %s is also on line %d", path, n, errImportLine, ev.ID, first)
		}
		seen[ev.ID] = n
		return nil
	})
	return len(seen), err
}

// importResult counts what an import read and appended.
type importResult struct {
	read, appended int
}

// importFile appends the events of the file at path to store, in batches
// of consecutive events of one stream (see importBatch), calling done
// after each batch with how many it took. Call checkImportFile first: a
// line that does not decode here stops the import midway.
func importFile(ctx context.Context, store events.Store, path string, done func(int)) (importResult, error) {
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
	err := eachImportLine(path, func(ev events.Event, _ int) error {
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
