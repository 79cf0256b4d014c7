package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
)

func (e *env) nodeAdoptCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "adopt NODE",
		Short:             "mark a node as adopted: it existed before the mesh",
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(1, "name one node"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.execute(cmd, commands.AdoptNode{Node: args[0]})
		},
	}
}
