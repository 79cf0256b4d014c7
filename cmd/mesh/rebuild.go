package main

import (
	"context"
	"errors"
	"slices"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/controller"
	"meshplane/projections"
	"meshplane/projections/snapstore"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) rebuildCmd() *cobra.Command {
	var only []string
	cmd := &cobra.Command{
		Use:   "rebuild [--projection NAME]...",
		Short: "rebuild projections from position 0: in the shadow and swapped in on a running controller; locally, checked against a second rebuild and saved as the data directory's snapshot",
		Long:  controller.RebuildHelp(),
		RunE: func(cmd *cobra.Command, args []string) error {
			args = append(slices.Clone(only), args...)
			if err := projections.CheckNames(args); err != nil {
				return usagef("%v", err)
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
			if s.Remote() {
				return e.rebuildRemote(cmd.Context(), s, args)
			}
			return e.rebuildLocal(cmd.Context(), t, s, args)
		},
	}
	cmd.Flags().StringSliceVar(&only, "projection", nil, "rebuild only this `projection` (repeat, or a,b)")
	return cmd
}

// rebuildRemote asks the controller to rebuild in the shadow.
func (e *env) rebuildRemote(ctx context.Context, s *session.Session, names []string) error {
	rb, ok := s.Service.(api.Rebuilder)
	if !ok {
		return errors.New("this controller does not rebuild projections")
	}
	p := render.NewProgress(e.stderr, -1, "rebuilding on the controller")
	res, err := rb.Rebuild(ctx, api.RebuildRequest{Projections: names})
	p.Done()
	if err != nil {
		return err
	}
	return render.Rebuild(e.stdout, names, res)
}

// rebuildLocal rebuilds from the local store twice, checked
// byte-identical, and saves a rebuild of every projection as the data
// directory's snapshot (bolt stores only; session.RebuildLocal).
func (e *env) rebuildLocal(ctx context.Context, t target, s *session.Session, names []string) error {
	report, stop := render.ProgressFunc(e.stderr, "rebuilding")
	res, saved, err := s.RebuildLocal(ctx, t.Target, names, report)
	stop()
	if err != nil {
		return err
	}
	render.RebuildLocal(e.stdout, names, res.Runner.Position(), res.Took, res.Bytes)
	if saved {
		render.SnapshotSaved(e.stdout, res.Runner.Position(), snapstore.SnapshotFile, snapstore.TimelineFile)
	}
	return render.Noted(e.stdout, s.Skipped(api.Skipped{}))
}
