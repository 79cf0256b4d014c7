package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/session"
)

func (e *env) pushCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "push [NODE]",
		Short:             "compose and push now, changed or not: one node, or every node (needs a controller: its bus)",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if len(args) > 1 {
				return usagef("name one node, or none for every node")
			}
			req := api.PushRequest{Operator: operator()}
			if len(args) == 1 {
				req.Node = args[0]
			}
			return withSession(cmd, false, nil, func(s *session.Session) error {
				resp, err := s.Service.Push(cmd.Context(), req)
				if err != nil {
					return err
				}
				if out == outJSON {
					return writeJSON(e.stdout, resp)
				}
				failed := 0
				for _, p := range resp.Pushes {
					if p.Error != "" {
						failed++
						fmt.Fprintf(e.stdout, "%s: push failed: %s\n", p.Node, p.Error)
						continue
					}
					fmt.Fprintf(e.stdout, "%s: pushed %s (%s)\n", p.Node, p.Declaration, short(p.Digest))
				}
				if failed > 0 {
					return fmt.Errorf("%d of %d push(es) failed (each is recorded on its node's stream)", failed, len(resp.Pushes))
				}
				return nil
			})
		},
	}
	addOutput(cmd)
	return cmd
}
