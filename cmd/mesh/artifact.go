package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"meshplane/artifacts"
	"meshplane/commands"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) artifactPushCmd() *cobra.Command {
	var registry string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "push MODULE NAME IMAGE.tar",
		Short: "push an image tarball to the artifact store and record the build (module, name, digest)",
		Long:  artifacts.PushHelp,
		Args:  exactArgs(3, "want MODULE NAME IMAGE.tar (an image tarball, as docker save writes it)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			module, name, tarball := args[0], args[1], args[2]
			t, err := targetOf(cmd, false)
			if err != nil {
				return err
			}
			ctx, addr := cmd.Context(), registry
			if t.Server != "" && addr == "" {
				return usagef("against a controller (--server) give --registry HOST:PORT: the API does not say where the artifact store is")
			}
			if t.Server == "" {
				if addr, err = session.ArtifactStore(ctx, t.Target, module, name, addr); err != nil {
					return err
				}
			}
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			digest, err := artifacts.Push(pctx, addr, name, tarball)
			if err != nil {
				return err
			}
			render.ArtifactPushed(cmd.OutOrStdout(), tarball, addr, name, digest)
			return e.execute(cmd, commands.RecordArtifact{Module: module, Name: name, Digest: digest})
		},
	}
	cmd.Flags().StringVar(&registry, "registry", "", "push to the artifact store at `host:port`, not the one the mesh's node holds")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up the upload after this `duration`")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"registry": flagcheck.Optional(flagcheck.DialAddr), "timeout": flagcheck.Positive})
	return cmd
}
