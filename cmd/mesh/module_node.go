package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
)

// moduleNodeCmd is a verb taking MODULE NODE: assign, take, release, the
// three verbs of this file.
func (e *env) moduleNodeCmd(verb, short string, mk func(module, node string) commands.Command) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " MODULE NODE",
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("want MODULE NODE")
			}
			return e.execute(cmd, mk(args[0], args[1]))
		},
	}
}

func (e *env) assignCmd() *cobra.Command {
	return e.moduleNodeCmd("assign", "assign a module to a node", func(m, n string) commands.Command {
		return commands.AssignModule{Module: m, Node: n}
	})
}

func (e *env) takeCmd() *cobra.Command {
	return e.moduleNodeCmd("take", "take an assigned module on an adopted node", func(m, n string) commands.Command {
		return commands.TakeModule{Module: m, Node: n}
	})
}

func (e *env) releaseCmd() *cobra.Command {
	return e.moduleNodeCmd("release", "release a module from a node", func(m, n string) commands.Command {
		return commands.ReleaseModule{Module: m, Node: n}
	})
}
