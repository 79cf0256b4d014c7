// Package export writes the events of a store as an export file, the
// format mesh export writes and mesh import reads (commands/importfile):
// JSON lines, one event a line, in position order, each the event's
// envelope as events.MarshalJSONLine writes it:
//
//	{"id":"0192...","stream":"node-novox","version":3,"position":17,"type":"declaration.composed",
//	 "schema":1,"at":"2026-09-29T22:46:00Z","actor":"controller","correlation":"...","data":{...}}
//
// the line shape of the scenario step `the event stream receives:`, plus
// the id, version, position, schema, actor, causation and correlation the
// store holds, and last, for a store that chains (events/chain.go), the
// event's chain value, "chain":"sha256:<hex>": the hash of the line
// before's value and the event's record as stored. data is the payload as
// stored: for declaration.composed and apply.reported, the public
// payloads of docs/design.md. An import keeps id, stream, type, schema, at,
// actor, causation, correlation and data; the target store assigns
// version, position and chain anew. An import checks that the chain
// values follow each other within the file, and refuses a line that does
// not (an edited export; commands/importchain.go).
//
// A line is at most importfile.MaxLine bytes (1114112: an event's largest
// payload, events.MaxDataSize, and 64 KiB of envelope); an import refuses
// a file with a longer one at that line.
//
// A quiet apply.reported whose held_since names no held list (history
// written past the door: a random id, another node's report, one that
// held nothing) has no holds to give: its line is written as stored,
// held_since alone with no held key, which reads as "holds unknown", and
// the export goes on; WriteToNoting hands each such event to its caller
// (mesh export names them on stderr and exits 0). mesh store verify names
// them too.
//
// Write reads the store through events.Store and writes to an io.Writer:
// it opens no file (mesh export --file writes through internal/atomicfile).
package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"meshplane/events"
	"meshplane/internal/atomicfile"
)

// Page is how many events Write reads at a time.
const Page = 4096

// Write writes the events of store after position since, up to its head
// as it was when the export began, to w in the export format, and returns
// how many it wrote. progress, if set, is called as it goes with the
// events written and how many it will write in all, first with none.
func Write(ctx context.Context, store events.Store, since uint64, w io.Writer, progress func(done, total uint64)) (int, error) {
	return write(ctx, store, since, w, progress, false, nil)
}

// Unresolved is an apply report whose held_since names no held list,
// written as stored (see the package comment).
type Unresolved struct {
	Position  uint64
	Stream    string
	HeldSince string
	Err       error // what the lookup said (wraps events.ErrHeldUnresolved)
}

// WriteCompact is Write giving each payload in its stored form: a quiet
// apply.reported with held_since alone, and a declaration.composed stored
// by reference with resources_since alone, as the store keeps them.
func WriteCompact(ctx context.Context, store events.Store, since uint64, w io.Writer, progress func(done, total uint64)) (int, error) {
	return write(ctx, store, since, w, progress, true, nil)
}

func write(ctx context.Context, store events.Store, since uint64, w io.Writer, progress func(done, total uint64), compact bool, noted func(Unresolved)) (int, error) {
	pub := public(store)
	head, err := store.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("export: head: %w", err)
	}
	if progress == nil {
		progress = func(uint64, uint64) {}
	}
	total := head - min(head, since)
	progress(0, total)
	bw := bufio.NewWriterSize(w, 1<<20)
	n, pos := 0, since
	for pos < head {
		page, err := store.ReadAll(ctx, pos, int(min(Page, head-pos)))
		if err != nil {
			return n, fmt.Errorf("export: read after %d: %w", pos, err)
		}
		if len(page) == 0 {
			return n, fmt.Errorf("export: the store read nothing after %d, below its head %d", pos, head)
		}
		for _, ev := range page {
			if !compact {
				public, err := pub.Event(ctx, ev)
				switch {
				case errors.Is(err, events.ErrHeldUnresolved):
					if noted != nil {
						noted(Unresolved{Position: ev.Position, Stream: ev.Stream, HeldSince: heldSince(ev), Err: err})
					}
				case err != nil:
					return n, fmt.Errorf("export: %w (mesh export --compact writes it as stored)", err)
				default:
					ev = public
				}
			}
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
		progress(uint64(n), total)
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export: write: %w", err)
	}
	return n, nil
}

// WriteTo is Write (WriteCompact when compact) to the file at path, or
// to stdout when path is "" or "-": a file is renamed over path once whole
// (internal/atomicfile), so a failed export leaves none.
func WriteTo(ctx context.Context, store events.Store, since uint64, compact bool, path string, stdout io.Writer, progress func(done, total uint64)) (n int, err error) {
	return WriteToNoting(ctx, store, since, compact, path, stdout, progress, nil)
}

// WriteToNoting is WriteTo handing each apply report written with its
// held_since unresolved to noted (nil: none), as it goes.
func WriteToNoting(ctx context.Context, store events.Store, since uint64, compact bool, path string, stdout io.Writer, progress func(done, total uint64), noted func(Unresolved)) (n int, err error) {
	out := func(w io.Writer) (err error) {
		n, err = write(ctx, store, since, w, progress, compact, noted)
		return err
	}
	if path == "" || path == "-" {
		return n, out(stdout)
	}
	return n, atomicfile.Write(path, 0o600, out)
}

// heldSince is the held_since an apply report's data gives ("" when it
// does not decode).
func heldSince(ev events.Event) string {
	a, err := events.DecodeAs[events.ApplyReported](events.NewRegistry(), ev)
	if err != nil {
		return ""
	}
	return a.HeldSince
}

// public is the events.Public an export hands its events out through,
// looking held lists and the resources of declarations stored by
// reference up through store when it reads by id, and roster revisions
// through its roster stream.
func public(store events.Store) *events.Public {
	r, _ := store.(events.IDReader)
	return events.NewPublic(events.NewRegistry(), r).WithRosters(store)
}
