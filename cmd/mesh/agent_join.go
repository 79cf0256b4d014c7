package main

import (
	"github.com/spf13/cobra"

	"meshplane/host/join"
	"meshplane/internal/buildinfo"
	"meshplane/internal/flagcheck"
	"meshplane/render"
)

func (e *env) agentJoinCmd() *cobra.Command {
	var o agentOptions
	var token string
	var insecure, noStart bool
	cmd := &cobra.Command{
		Use:   "join [URL] --token T --data DIR [--no-start] [agent flags]",
		Short: "join this host to the mesh with a join token, then run its agent",
		Long:  join.Help,
		RunE: func(cmd *cobra.Command, args []string) error {
			url, err := joinURL(args, token)
			if err != nil {
				return err
			}
			o.data, _ = cmd.Flags().GetString(flagData)
			res, err := join.Join(cmd.Context(), join.Options{URL: url, Token: token, Data: o.data, Insecure: insecure, AgentVersion: buildinfo.Version()})
			if err != nil {
				return err
			}
			render.Joined(cmd.ErrOrStderr(), o.data, res.Node, res.Creds, res.Already)
			if noStart {
				return nil
			}
			o.creds = res.Creds
			return runAgentCmd(cmd, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&token, "token", "", "the join `token` (MJ1...) from 'mesh node join-token NODE'")
	fs.BoolVar(&insecure, "insecure", false, "allow a token naming no CA (a controller on plain HTTP) beyond loopback")
	fs.BoolVar(&noStart, "no-start", false, "join, and do not run the agent")
	o.flags(fs)
	flagcheck.Install(fs, map[string]flagcheck.Check{"token": joinToken})
	return cmd
}

// joinURL is agent join's and install's URL argument ("" for the
// token's), refusing more than one, or no --token.
func joinURL(args []string, token string) (string, error) {
	switch {
	case len(args) > 1:
		return "", usagef("unexpected argument %q", args[1])
	case token == "":
		return "", usagef("give --token T (from 'mesh node join-token NODE')")
	case len(args) == 1:
		return args[0], nil
	}
	return "", nil
}
