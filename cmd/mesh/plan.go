package main

import (
	"github.com/spf13/cobra"

	"meshplane/internal/flagcheck"
)

// exitHeavy is mesh plan's exit code when a node's plan is heavy: it would
// create, replace or remove at least half of that node's resources, or of
// its containers (rule 7, events.Heavy), so a script or a CI gate stops
// before the push.
const exitHeavy = 4

// planCmd is mesh plan: what the next push would do, before it is done
// (seed 002: a data-path move and a build deployed by policy were both
// invisible until they took the forge down).
func (e *env) planCmd() *cobra.Command {
	var after []string
	cmd := &cobra.Command{
		Use:   "plan [NODE...]",
		Short: "what the next push would do on each node, and why: nothing is appended (exit 4: a heavy plan)",
		Long: `plan composes what the next push would send each node (every node when none is named)
and asks the node's agent what it would do with it, against what the node holds, without
applying it: per resource create, replace (with the fields that change, from what to what),
update in place, remove, or hold (with the reason), and how many are unchanged. A node that
does not answer is planned from the declaration its last apply report applied, and says so
(and names a push it has not applied yet): what it found and holds is not known then.
--after plans as if commands had run first (repeatable): --after "deploy forge",
--after "assign route-proxy novox", --after "release forge novox", --after "node set novox
port.store 3001", --after "module define forge.yaml" (the file is read here and sent with the
plan). Nothing is stored.

A plan that would create, replace or remove at least half of a node's resources, or of its
containers (a container its last apply failed, created now, is a retry and not counted), is
heavy (a heavy pass, rule 7): its first line says so, and mesh plan exits 4.`,
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := planRequest(args, after)
			if err != nil {
				return err
			}
			return runPlan(cmd, req)
		},
	}
	cmd.Flags().StringArrayVar(&after, "after", nil, "plan as if this `command` had run first (\"deploy forge\", \"assign route-proxy novox\", \"node set N K V\", \"module define FILE\"); repeatable")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"after": planAfter})
	addOutput(cmd)
	return cmd
}
