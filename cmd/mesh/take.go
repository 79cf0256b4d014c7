package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
)

func (e *env) takeCmd() *cobra.Command {
	return e.moduleNodeCmd("take", "take an assigned module on an adopted node", func(m, n string) commands.Command {
		return commands.TakeModule{Module: m, Node: n}
	})
}
