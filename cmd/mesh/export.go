package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/events/export"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) exportCmd() *cobra.Command {
	var since uint64
	var output string
	var compact bool
	cmd := &cobra.Command{
		Use:   "export [--since POS] [-f FILE]",
		Short: "write the event stream as JSON lines (one event a line, in position order) for mesh import",
		Long:  export.Help,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			s, err := session.OpenStore(cmd.Context(), t.Target, session.Options{Clock: wallClock}, "export reads the store itself; stop the controller, or export from its database with --store")
			if err != nil {
				return err
			}
			defer s.Close()
			report, stop := render.ProgressFunc(e.stderr, "exporting")
			var unresolved []export.Unresolved
			n, err := export.WriteToNoting(cmd.Context(), s.Store, since, compact, output, e.stdout, report,
				func(u export.Unresolved) { unresolved = append(unresolved, u) })
			stop()
			if err != nil {
				return err
			}
			render.HeldUnresolved(e.stderr, unresolved)
			if output != "" && output != "-" {
				fmt.Fprintf(e.stdout, "exported %d event(s) after position %d to %s\n", n, since, output)
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&since, "since", 0, "export the events after this `position` (0: every event)")
	cmd.Flags().StringVarP(&output, "file", "f", "", "write to this `file` instead of stdout (replaced whole; a device or FIFO is written through, a symbolic link or socket refused)")
	cmd.Flags().BoolVar(&compact, "compact", false, "write each payload as stored: a quiet apply report's held_since without its holds")
	return cmd
}
