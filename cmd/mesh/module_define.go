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
		Long:  commands.DefineHelp,
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
