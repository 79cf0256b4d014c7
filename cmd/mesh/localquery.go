package main

import (
	"cmp"
	"context"
	"io"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/projections/snapstore"
	"meshplane/render"
	"meshplane/session"
)

// snapshotOptions tune the snapshot of local queries (a variable: tests
// make the thresholds small, to save snapshots on small stores).
var snapshotOptions snapstore.Options

// withQuery is withSession for the queries a snapshot answers: status,
// node show, timeline and churn. On the local bolt store they resume from
// the projections saved in the data directory and fold only the events
// appended since; a cache file that cannot be used is passed over with a
// note on stderr (projections/snapstore says what is checked and kept).
func withQuery(cmd *cobra.Command, fn func(*session.Session) error) error {
	return opened(cmd, true, false, nil, fn)
}

// ask is a query verb's body: it reads -o, opens cmd's target (resuming
// from the data directory's snapshot when resume: withQuery), asks q, and
// prints its answer with print (after the moment it answers for: --at), with what the projections could not fold
// (the answers carry none: that is known locally only).
func ask[T any](cmd *cobra.Command, resume bool, q func(context.Context, api.Service) (T, error), print func(io.Writer, render.Format, T, api.Skipped) error) error {
	out, err := outputOf(cmd)
	if err != nil {
		return err
	}
	return opened(cmd, resume, false, nil, func(s *session.Session) error {
		v, err := q(cmd.Context(), s.Service)
		if err != nil {
			return err
		}
		return cmp.Or(render.AsOfAnswer(cmd.OutOrStdout(), render.Format(out), v), print(cmd.OutOrStdout(), render.Format(out), v, s.Skipped(api.Skipped{})))
	})
}
