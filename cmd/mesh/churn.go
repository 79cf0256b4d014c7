package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/session"
)

func (e *env) churnCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "churn [NODE...]",
		Short:             "churn loops and flips, open and past, with their evidence",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			return withQuery(cmd, func(s *session.Session) error {
				resp, err := s.Service.Churn(cmd.Context(), api.ChurnRequest{Nodes: args})
				if err != nil {
					return err
				}
				sk := s.Skipped(api.Skipped{}) // the answer carries none: known locally only
				if out == outJSON {
					all := map[string][]api.Episode{}
					for _, nc := range resp.Nodes {
						all[nc.Node] = nc.Episodes
					}
					if err := writeJSON(e.stdout, all); err != nil {
						return err
					}
					return partial(sk, false)
				}
				w := e.stdout
				any := false
				for _, nc := range resp.Nodes {
					for _, ep := range nc.Episodes {
						any = true
						state := "cleared"
						if ep.Active() {
							state = "ACTIVE"
						}
						kind := []string{}
						if ep.Loop {
							kind = append(kind, "loop")
						}
						if ep.Flip {
							kind = append(kind, "flip")
						}
						fmt.Fprintf(w, "%s: %s %s, from #%d (%s), detected at #%d, %d passes, %d heavy\n",
							nc.Node, state, strings.Join(kind, "+"), ep.Start.Position, stamp(ep.Start.At), ep.Detected.Position, ep.Passes, ep.HeavyPasses)
						var b bytes.Buffer
						enc := json.NewEncoder(&b)
						enc.SetIndent("    ", "  ")
						if err := enc.Encode(ep.Evidence); err != nil {
							return err
						}
						fmt.Fprintf(w, "    evidence: %s", b.String())
					}
				}
				if !any {
					fmt.Fprintln(w, "no churn: no heavy passes in a row and no flips")
				}
				return partial(sk, false)
			})
		},
	}
	addOutput(cmd)
	return cmd
}
