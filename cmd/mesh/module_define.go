package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/meshup"
)

func (e *env) moduleDefineCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "define FILE...",
		Short: "define (or redefine) modules from module files, all or none",
		Long: `Define (or redefine) modules from module files, all or none: every file is
read and checked before anything is written, and one refused file defines
nothing. A module file holds one module (its format is in commands.ParseModuleFile):
a second YAML document in it (after "---") is refused, naming the file and
the line it starts on, never dropped; put each module in a file of its own.
Module, container and port names are DNS labels (1 to 63 lower-case
letters, digits and '-', no '-' at either end): the refusal names the rule
a name breaks.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one module file")
			}
			defs, err := meshup.ReadModuleFiles(args)
			if err != nil {
				return err
			}
			cs := make([]commands.Command, len(defs))
			for i, d := range defs {
				cs[i] = d
			}
			return e.execute(cmd, cs...)
		},
	}
}
