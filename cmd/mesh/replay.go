package main

import (
	"errors"

	"github.com/spf13/cobra"

	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/replay"
)

func (e *env) replayCmd() *cobra.Command {
	var o replay.Options
	cmd := &cobra.Command{
		Use:   "replay HISTORY.jsonl [--until POSITION]",
		Short: "run an exported history again against this build, in a sandbox, and show where today's run diverges (exit 1)",
		Long:  replay.Help,
		Args:  exactArgs(1, "give one HISTORY file (written by mesh export)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			rep, err := replay.Run(cmd.Context(), args[0], o)
			if err != nil && !errors.Is(err, replay.ErrDiverged) {
				return err
			}
			if perr := render.Replay(e.stdout, render.Format(out), rep); perr != nil {
				return perr
			}
			if err != nil {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&o.Until, "until", 0, "replay the history up to this `position` (0: all of it)")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"until": flagcheck.AtLeast(0)})
	addOutput(cmd)
	return cmd
}
