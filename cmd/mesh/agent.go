package main

import (
	"time"

	"github.com/spf13/cobra"
)

// agentOptions are mesh agent's flags.
type agentOptions struct {
	creds    string
	data     string
	runtime  string
	interval time.Duration
}

func (e *env) agentCmd() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent --creds FILE --data DIR [--runtime sim|docker] [--interval 1m]",
		Short: "run one node's agent: apply the latest declaration from the bus, report each apply",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			if o.creds == "" {
				return usagef("give --creds FILE (written by 'mesh node register NODE --creds FILE')")
			}
			if o.runtime != "sim" && o.runtime != "docker" {
				return usagef("--runtime %q: want sim or docker", o.runtime)
			}
			o.data, _ = cmd.Flags().GetString(flagData)
			return runAgentCmd(cmd, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.creds, "creds", "", "the node's bus credential `file`")
	fs.StringVar(&o.runtime, "runtime", "sim", "the container runtime: sim or docker")
	fs.DurationVar(&o.interval, "interval", time.Minute, "apply the latest declaration again every `duration` (drift)")
	return cmd
}
