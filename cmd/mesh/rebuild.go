package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/events"
	"meshplane/projections"
	"meshplane/projections/snapstore"
)

func (e *env) rebuildCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rebuild [PROJECTION...]",
		Short: "rebuild projections from position 0: in the shadow and swapped in on a running controller; locally, checked against a second rebuild and saved as the data directory's snapshot",
		Long: `Rebuild folds the event stream from position 0 into fresh projections
(every one, or those named: ` + strings.Join(projections.Names(), ", ") + `).

Against a running controller (--server, or a data directory whose store a
controller holds), the controller rebuilds in the shadow while its queries
keep answering from the live projections, compares each rebuilt projection
with the live one at the same position, and swaps it in.

On a local store, the rebuild is checked against a second one (the
projections must be deterministic), and a rebuild of every projection is
saved as the data directory's snapshot (projections.snap and timeline.db).

A progress bar (events/s, time left) is shown on stderr when it is a
terminal.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if !slices.Contains(projections.Names(), a) {
					return usagef("no projection %q: want %s", a, strings.Join(projections.Names(), ", "))
				}
			}
			t, err := targetOf(cmd, false)
			if err != nil {
				return err
			}
			s, err := t.open(cmd.Context(), false, nil)
			if err != nil {
				return err
			}
			defer s.Close()
			if s.remote() {
				return e.rebuildRemote(cmd.Context(), s, args)
			}
			return e.rebuildLocal(cmd.Context(), t, s, args)
		},
	}
}

// rebuildRemote asks the controller to rebuild in the shadow.
func (e *env) rebuildRemote(ctx context.Context, s *session, names []string) error {
	rb, ok := s.svc.(api.Rebuilder)
	if !ok {
		return errors.New("this controller does not rebuild projections")
	}
	p := newProgress(e.stderr, -1, "rebuilding on the controller")
	res, err := rb.Rebuild(ctx, api.RebuildRequest{Projections: names})
	p.done()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "rebuilt %s in the shadow from %d events in %s; swapped in at position %d\n",
		what(names), res.Events, (time.Duration(res.Millis) * time.Millisecond).String(), res.Position)
	for _, c := range res.Projections {
		if c.Same {
			fmt.Fprintf(e.stdout, "  %-9s same as before (%d bytes)\n", c.Name, c.NewBytes)
		} else {
			fmt.Fprintf(e.stdout, "  %-9s DIFFERED from the live one (%d bytes before, %d after): the rebuilt one, from the events, is now live\n", c.Name, c.OldBytes, c.NewBytes)
		}
	}
	noteSkipped(e.stdout, res.Skipped)
	return partial(res.Skipped, true)
}

// what names the projections rebuilt.
func what(names []string) string {
	if len(names) == 0 {
		return "every projection"
	}
	return strings.Join(names, ", ")
}

// rebuildLocal rebuilds from the local store twice, checks the two are
// byte-identical, and saves a rebuild of every projection as the data
// directory's snapshot (bolt stores: the snapshot lives beside the file).
func (e *env) rebuildLocal(ctx context.Context, t target, s *session, names []string) error {
	store, ok := s.store.(events.Store)
	if !ok {
		return errors.New("rebuild: the local session has no event store")
	}
	reg := events.NewRegistry()
	head, err := store.Head(ctx)
	if err != nil {
		return err
	}
	fresh := projections.New()
	r := projections.NewRunner(store, reg, fresh.Feed(names...)...)
	start := time.Now()
	p := newProgress(e.stderr, int64(head), "rebuilding")
	for r.Position() < head {
		if err := r.CatchUpTo(ctx, min(r.Position()+16*projections.PageSize, head)); err != nil {
			p.done()
			return err
		}
		p.set(r.Position())
	}
	p.done()
	took := time.Since(start)
	first, err := snapshotOf(fresh, names)
	if err != nil {
		return err
	}
	// The second rebuild, by the controller's own runner.
	cr := s.ctrl.Runner()
	if err := cr.Rebuild(ctx); err != nil {
		return err
	}
	if cr.Position() != r.Position() {
		return fmt.Errorf("the store's head moved during the rebuild (%d, then %d): run it again", r.Position(), cr.Position())
	}
	second, err := snapshotOf(s.ctrl.Views(), names)
	if err != nil {
		return err
	}
	if !bytes.Equal(first, second) {
		return fmt.Errorf("two rebuilds differ: the projections are not deterministic (a bug: please report it)")
	}
	fmt.Fprintf(e.stdout, "rebuilt %s from %d events in %s; a second rebuild is byte-identical (%d bytes)\n",
		what(names), r.Position(), took.Round(time.Millisecond), len(first))
	if t.bolt() && len(names) == 0 {
		if err := snapstore.Save(ctx, t.data, r, fresh); err != nil {
			return fmt.Errorf("save the snapshot in %s: %w", t.data, err)
		}
		fmt.Fprintf(e.stdout, "saved the snapshot of every projection at position %d (%s, %s)\n", r.Position(), snapstore.SnapshotFile, snapstore.TimelineFile)
	}
	sk := s.skipped(api.Skipped{})
	noteSkipped(e.stdout, sk)
	return partial(sk, true)
}

// snapshotOf serializes the projections of set named (every one when
// none is).
func snapshotOf(set *projections.Set, names []string) ([]byte, error) {
	var ps []projections.Projection
	for _, p := range set.All() {
		if len(names) == 0 || slices.Contains(names, p.Name()) {
			ps = append(ps, p)
		}
	}
	return projections.Snapshot(ps...)
}
