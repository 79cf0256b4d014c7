package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
)

func (e *env) nodeSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set NODE KEY VALUE",
		Short: "set a node setting (private-address, artifact-store, port.NAME); an empty VALUE clears it",
		Args:  exactArgs(3, "want NODE KEY VALUE (an empty VALUE clears the setting)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.execute(cmd, commands.SetNodeSetting{Node: args[0], Key: args[1], Value: args[2]})
		},
	}
}

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
