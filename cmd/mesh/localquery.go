package main

import (
	"github.com/spf13/cobra"

	"meshplane/projections/snapstore"
	"meshplane/session"
)

// snapshotOptions tune the snapshot of local queries (a variable: tests
// make the thresholds small, to save snapshots on small stores).
var snapshotOptions snapstore.Options

// slowLocal ends the help of the verbs that fold every event on a local
// store.
const slowLocal = `

On a local store (--data) this folds every event from position 0 (it needs every
declaration and timeline entry in memory), so on a long history it is slower
than status, node show, timeline and churn, which resume from the snapshot the
data directory keeps. A controller (--server) answers it from memory.`

// withQuery is withSession for the queries a snapshot answers: status,
// node show, timeline and churn. On the local bolt store they resume from
// the projections saved in the data directory and fold only the events
// appended since; a cache file that cannot be used is passed over with a
// note on stderr (projections/snapstore says what is checked and kept).
func withQuery(cmd *cobra.Command, fn func(*session.Session) error) error {
	t, err := targetOf(cmd, false)
	if err != nil {
		return err
	}
	t.resume, t.notes = true, cmd.ErrOrStderr()
	s, err := t.open(cmd.Context(), false, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}
