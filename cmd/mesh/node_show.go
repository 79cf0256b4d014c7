package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/session"
)

func (e *env) nodeShowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:               "show NODE",
		Short:             "one node: its status, its modules, its own holds and its last apply",
		ValidArgsFunction: completeNodes,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usagef("name one node")
			}
			return withQuery(cmd, func(s *session.Session) error {
				ns, err := s.Service.NodeShow(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				sk := s.Skipped(api.Skipped{}) // the answer carries none: known locally only
				if out == outJSON {
					if err := writeJSON(e.stdout, ns); err != nil {
						return err
					}
					return partial(sk, false)
				}
				st, w := ns.Status, e.stdout
				fmt.Fprintf(w, "node     %s\n", st.Node)
				fmt.Fprintf(w, "adopted  %v\n", st.Adopted)
				fmt.Fprintf(w, "sync     %s\n", st.Sync)
				fmt.Fprintf(w, "health   %s\n", health(st.Health, st.Held))
				if st.Pushed != nil {
					fmt.Fprintf(w, "pushed   %s at %s\n", st.Pushed.Declaration, stamp(st.Pushed.At))
				}
				if st.Applied != nil {
					fmt.Fprintf(w, "applied  %s at %s: %s\n", st.Applied.Declaration, stamp(st.Applied.At), st.Applied.Summary)
				}
				if st.ComposeFailed != nil {
					fmt.Fprintf(w, "compose  failed at %s: %s\n", stamp(st.ComposeFailed.At), st.ComposeFailed.Error)
				}
				if r := st.ReportRefused; r != nil {
					fmt.Fprintf(w, "report   refused at %s (%s): %s\n", stamp(r.At), r.Reason, r.Detail)
				}
				fmt.Fprintln(w, "\nmodules:")
				tw := table(w)
				fmt.Fprintln(tw, "  MODULE\tASSIGNED\tTAKEN\tSTATE\tHELD\tFAILED")
				names := make([]string, 0, len(st.Modules))
				for m := range st.Modules {
					names = append(names, m)
				}
				sort.Strings(names)
				for _, m := range names {
					ms := st.Modules[m]
					fmt.Fprintf(tw, "  %s\t%v\t%v\t%s\t%d\t%d\n", m, ms.Assigned, ms.Taken, ms.State, ms.Held, ms.Failed)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(w, "\nholds (from the node's own apply reports): %d\n", len(ns.Holds))
				for _, h := range ns.Holds {
					fmt.Fprintf(w, "  %s (%s): %s\n", h.Name, h.Module, h.Reason)
				}
				if a := ns.Access; a != nil {
					fmt.Fprintln(w, "\njoin tokens:")
					for _, t := range a.Tokens {
						used := "unused"
						if !t.UsedAt.IsZero() {
							used = fmt.Sprintf("used at %s from %s", stamp(t.UsedAt), t.From)
						}
						fmt.Fprintf(w, "  %s  expires %s  %s\n", t.ID, stamp(t.ExpiresAt), used)
					}
					fmt.Fprintln(w, "\nbus users:")
					for _, k := range a.Keys {
						state := "active"
						if k.Revoked {
							state = "revoked"
						}
						fmt.Fprintf(w, "  %s  %s\n", k.PublicKey, state)
					}
				}
				return partial(sk, false)
			})
		},
	}
	addOutput(cmd)
	return cmd
}
