package main

import (
	"github.com/spf13/cobra"

	"meshplane/commands"
)

func (e *env) releaseCmd() *cobra.Command {
	return e.moduleNodeCmd("release", "release a module from a node", func(m, n string) commands.Command {
		return commands.ReleaseModule{Module: m, Node: n}
	})
}
