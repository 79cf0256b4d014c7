package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/session"
)

func (e *env) statusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "status [NODE...]",
		Short:             "each node's sync and health, with held counts per module",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withQuery(cmd, func(s *session.Session) error {
				resp, err := s.Service.Status(cmd.Context(), api.StatusRequest{Nodes: args})
				if err != nil {
					return err
				}
				sk := s.Skipped(resp.Skipped)
				if out == outJSON {
					if err := writeJSON(e.stdout, resp.Nodes); err != nil {
						return err
					}
					return partial(sk, false)
				}
				tw := table(e.stdout)
				fmt.Fprintln(tw, "NODE\tSYNC\tHEALTH\tDECLARATION\tLAST APPLY")
				for _, st := range resp.Nodes {
					decl, apply := "-", "-"
					if st.Pushed != nil {
						decl = st.Pushed.Declaration
					}
					if st.Applied != nil {
						apply = st.Applied.Summary
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Node, st.Sync, health(st.Health, st.Held), decl, apply)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				for _, st := range resp.Nodes {
					if st.ComposeFailed != nil {
						fmt.Fprintf(e.stdout, "\n%s: last compose failed at %s: %s\n", st.Node, stamp(st.ComposeFailed.At), st.ComposeFailed.Error)
					}
					if st.PushFailed != nil {
						fmt.Fprintf(e.stdout, "\n%s: last push of %s failed at %s: %s\n", st.Node, st.PushFailed.Declaration, stamp(st.PushFailed.At), st.PushFailed.Error)
					}
					if r := st.ReportRefused; r != nil {
						fmt.Fprintf(e.stdout, "\n%s: latest report refused at %s (%s): %s\n", st.Node, stamp(r.At), r.Reason, r.Detail)
					}
				}
				noteSkipped(e.stdout, sk)
				return partial(sk, true)
			})
		},
	}
	addOutput(cmd)
	return cmd
}

// completeNodes completes node names from the mesh the command would ask
// (nothing when it cannot be asked).
func completeNodes(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	var names []string
	_ = withQuery(cmd, func(s *session.Session) error {
		resp, err := s.Service.Status(cmd.Context(), api.StatusRequest{})
		for _, st := range resp.Nodes {
			names = append(names, st.Node)
		}
		return err
	})
	return names, cobra.ShellCompDirectiveNoFileComp
}
