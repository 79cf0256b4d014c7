package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/meshup"
)

func (e *env) moduleDefineCmd() *cobra.Command {
	var plan bool
	cmd := &cobra.Command{
		Use:   "define FILE...",
		Short: "define (or redefine) modules from module files, all or none",
		Long:  commands.DefineHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one module file")
			}
			if plan { // append nothing: the plan of every node the definitions reach
				req, err := meshup.DefinePlanRequest(args)
				if err != nil {
					return err
				}
				return runPlan(cmd, req)
			}
			if cmd.Flags().Changed("output") || cmd.Flags().Changed("json") {
				return usagef("-o goes with --plan: a definition prints what it appended")
			}
			cs, err := meshup.ModuleCommands(args)
			if err != nil {
				return err
			}
			return e.execute(cmd, cs...)
		},
	}
	cmd.Flags().BoolVar(&plan, "plan", false, "append nothing: show the plan of every node the definitions reach (exit 4: heavy)")
	addOutput(cmd)
	return cmd
}
