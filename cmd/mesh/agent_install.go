package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"meshplane/agent/agentd"
	"meshplane/api"
	"meshplane/host/install"
	"meshplane/host/join"
	"meshplane/internal/buildinfo"
	"meshplane/internal/flagcheck"
)

// installHost is the host mesh agent install and uninstall work on, and
// installBinary the mesh binary the unit runs: tests put the first under a
// directory, with a systemctl and a join of their own.
var (
	installHost   = install.Host{}
	installBinary = os.Executable
)

func (e *env) agentInstallCmd() *cobra.Command {
	var token, runtime string
	var insecure bool
	cmd := &cobra.Command{
		Use:   "install [URL] --token T [--runtime docker] [--data /var/lib/mesh-agent]",
		Short: "join this host and run its agent as the systemd service mesh-agent",
		Long:  install.Help,
		RunE: func(cmd *cobra.Command, args []string) error {
			url, err := joinURL(args, token)
			if err != nil {
				return err
			}
			data, err := agentDataDir(cmd)
			if err != nil {
				return err
			}
			bin, err := installBinary()
			if err != nil {
				return fmt.Errorf("install: the mesh binary's path: %w", err)
			}
			if install.Temporary(bin) {
				fmt.Fprintf(e.stderr, "mesh agent install: note: %s looks temporary ('go run'?); the unit runs it: install mesh where it lasts (/usr/local/bin) and run that one\n", bin)
			}
			h := installHost
			h.Out = e.stdout
			_, err = h.Install(cmd.Context(), install.Config{
				Join:   join.Options{URL: url, Token: token, Data: data, Insecure: insecure, AgentVersion: buildinfo.Version()},
				Binary: bin, Runtime: runtime,
			})
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&token, "token", "", "the join `token` (MJ1...) from 'mesh node join-token NODE'")
	fs.StringVar(&runtime, "runtime", agentd.RuntimeDocker, "the agent's container runtime: docker or sim")
	fs.BoolVar(&insecure, "insecure", false, "allow a token naming no CA (a controller on plain HTTP) beyond loopback")
	flagcheck.Install(fs, map[string]flagcheck.Check{"token": joinToken, "runtime": flagcheck.OneOf(agentd.RuntimeDocker, agentd.RuntimeSim)})
	return cmd
}

func (e *env) agentUninstallCmd() *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:   "uninstall [--purge]",
		Short: "stop, disable and remove the systemd service mesh-agent (its data kept unless --purge)",
		Long:  install.UninstallHelp,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var data string
			if cmd.Flags().Changed(flagData) {
				var err error
				if data, err = agentDataDir(cmd); err != nil {
					return err
				}
			}
			h := installHost
			h.Out = e.stdout
			_, err := h.Uninstall(cmd.Context(), install.UninstallConfig{Data: data, Purge: purge})
			return err
		},
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "remove the agent's data directory too")
	return cmd
}

// agentDataDir is --data, absolute, or install.DefaultData when it is not
// given (the root's default is the controller's data directory).
func agentDataDir(cmd *cobra.Command) (string, error) {
	d, _ := cmd.Flags().GetString(flagData)
	return install.DataDir(d, cmd.Flags().Changed(flagData))
}

// joinToken is a join token (api.ParseJoinToken reads it).
func joinToken(s string) error {
	if _, err := api.ParseJoinToken(s); err != nil {
		return fmt.Errorf("want a join token from 'mesh node join-token NODE': %w", err)
	}
	return nil
}
