package main

import (
	"github.com/spf13/cobra"

	"meshplane/render"
	"meshplane/storeverify"
)

func (e *env) storeHeadCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "head",
		Short: "print the hash chain's head (position, chain value, time) as one line to keep off the host; verify --anchor checks it",
		Long:  storeverify.HeadHelp,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			h, err := storeverify.Head(cmd.Context(), t.Store, t.Data)
			if err != nil {
				return err
			}
			render.ChainHead(e.stdout, h)
			return nil
		},
	}
}
