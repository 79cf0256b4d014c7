package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
)

// moduleNodeCmd is a verb taking MODULE NODE: assign, take, release.
func (e *env) moduleNodeCmd(verb, short string, mk func(module, node string) commands.Command) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " MODULE NODE",
		Short: short,
		Args:  exactArgs(2, "want MODULE NODE"),
		RunE:  func(cmd *cobra.Command, args []string) error { return e.execute(cmd, mk(args[0], args[1])) },
	}
}

func (e *env) assignCmd() *cobra.Command {
	return e.moduleNodeCmd("assign", "assign a module to a node", commands.NewAssignModule)
}

func (e *env) takeCmd() *cobra.Command {
	return e.moduleNodeCmd("take", "take an assigned module on an adopted node", commands.NewTakeModule)
}

func (e *env) releaseCmd() *cobra.Command {
	return e.moduleNodeCmd("release", "release a module from a node", commands.NewReleaseModule)
}
