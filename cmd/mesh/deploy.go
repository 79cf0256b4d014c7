package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
)

// exitRollout is mesh deploy --wait's exit code when the roll-out it
// followed failed (reverted, given up, or a revert that failed too).
const exitRollout = 6

// deployWaitHelp is what --wait adds to mesh deploy's help.
const deployWaitHelp = `

With --wait, mesh deploy follows the roll-out to its end: until every node the module is
assigned to has reported an apply of it (exit 0), or a roll-out of it failed (rollout.failed:
reverted by on_failure: revert, given up by pause, or a revert that failed too; its line is
printed and mesh exits 6), or --timeout passed (exit 1, naming the nodes not heard from).`

// deployCmd is mesh deploy (commands.DeployHelp).
func (e *env) deployCmd() *cobra.Command {
	var (
		digest  string
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "deploy MODULE",
		Short: "deploy a module's latest recorded builds (or, with --digest, one recorded build): the next push runs them",
		Long:  commands.DeployHelp + deployWaitHelp,
		Args:  exactArgs(1, "want MODULE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := commands.DeployModule{Module: args[0], Digest: digest}
			if !wait {
				return e.execute(cmd, c)
			}
			return withSession(cmd, true, []commands.Command{c}, func(s *session.Session) error {
				res, err := session.Send(cmd.Context(), s.Service, operator(), []commands.Command{c})
				render.CommandResult(cmd.OutOrStdout(), res, []commands.Command{c})
				if len(res.Results) == 0 {
					return commands.BatchRefused(err, 1)
				}
				if err != nil || len(res.Results[0].Events) == 0 {
					return err // refused, or nothing to roll out
				}
				evs := res.Results[0].Events
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				defer cancel()
				out, err := session.FollowRollout(ctx, s.Service, args[0], evs[len(evs)-1].Position, time.Second)
				if errors.Is(err, session.ErrRolloutFailed) {
					fmt.Fprintf(cmd.ErrOrStderr(), "mesh deploy: %v\n", err)
					return &exitError{exitRollout}
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "rolled out: %s applied by %d node(s)\n", args[0], len(out.Applied))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&digest, "digest", "", "deploy the recorded build with this `digest` (sha256:...), of whichever artifact it is; a roll-back too")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the roll-out to its end; exit 6 when it failed or was reverted")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "with --wait, follow at most this `duration` before giving up (exit 1)")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"digest": flagcheck.Optional(commands.CheckDigest), "timeout": flagcheck.Positive})
	return cmd
}
