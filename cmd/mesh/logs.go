package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/commands"
	"meshplane/internal/flagcheck"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) logsCmd() *cobra.Command {
	var (
		tail   int
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs NODE CONTAINER",
		Short: "a container's log, asked of its node's agent over the bus (a running controller)",
		Long: `A managed container's log, asked of its node's agent over the bus: its last --tail
lines, then, with --follow, what it writes next, until interrupted. One answer holds at most
256 KiB (a longer tail keeps its last lines and says so). Control characters are escaped.
It needs a running controller (--server): a CLI on the store alone has no bus to ask on.`,
		ValidArgsFunction: completeNodes,
		Args:              exactArgs(2, "want NODE CONTAINER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return opened(cmd, false, false, nil, func(s *session.Session) error {
				lg, ok := s.Service.(api.Logs)
				if !ok {
					return &commands.Rejection{Code: api.CodeUnsupported, Msg: "mesh logs asks the node's agent over the bus: give --server, a running controller"}
				}
				out := cmd.OutOrStdout()
				return lg.Logs(cmd.Context(), api.LogsRequest{Node: args[0], Container: args[1], Tail: tail, Follow: follow},
					func(ch api.LogChunk) error { return render.LogChunk(out, ch) })
			})
		},
	}
	cmd.Flags().IntVarP(&tail, "tail", "n", 100, "the last `N` lines (0: as many as one answer holds)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing what the container writes, until interrupted")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"tail": func(v string) error {
		if err := flagcheck.AtLeast(0)(v); err != nil {
			return err
		}
		if n, _ := strconv.Atoi(v); n > api.MaxLogsTail {
			return fmt.Errorf("want at most %d lines", api.MaxLogsTail)
		}
		return nil
	}})
	return cmd
}
