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
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("name one node")
			}
			return e.execute(cmd, commands.AdoptNode{Node: args[0]})
		},
	}
}
