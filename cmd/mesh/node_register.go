package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api"
	"meshplane/bus"
	"meshplane/commands"
	"meshplane/daemon"
	"meshplane/internal/atomicfile"
	"meshplane/internal/flagcheck"
	"meshplane/session"
)

// busURLsFile, in a controller's data directory, names the URLs of its
// embedded bus, one a line, as it reported them when it started serving
// (written by `mesh up`). `mesh node register --creds` puts them in the
// credentials it writes unless --bus-url says otherwise.
const busURLsFile = "bus-urls"

func (e *env) nodeRegisterCmd() *cobra.Command {
	var creds string
	var busURLs []string
	cmd := &cobra.Command{
		Use:   "register NODE...",
		Short: "register nodes (all or none); --creds FILE also writes the node's bus credentials",
		Long: `Register nodes (all or none). With --creds FILE (one node), also write the
node's bus credentials (mode 0600) for 'mesh agent --creds FILE': a user of
that node alone. With --server, the controller mints them (its bus URLs and
CA in them) and records node.credentials-issued. Without, they are minted
from the bus's trust root in the controller's data directory (--data, on
the controller's machine; a directory without one is refused, never given
one), naming the bus URLs of --bus-url, else those the running controller
wrote to DATA/bus-urls, else nats://127.0.0.1:4222.

To add a host without handing it a secret, prefer 'mesh node join-token
NODE': the host makes its own key and the seed never leaves it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one node")
			}
			if creds != "" && len(args) != 1 {
				return usagef("--creds writes one node's credentials: name one node")
			}
			if len(busURLs) > 0 && creds == "" {
				return usagef("--bus-url goes with --creds")
			}
			if creds != "" {
				// A bad name is refused as the command refuses it.
				if _, err := commands.Decide(commands.State{}, commands.RegisterNode{Node: args[0]}); err != nil {
					return err
				}
				// Refused before anything is written: no trust root here.
				if t, err := targetOf(cmd, false); err == nil && t.server == "" {
					if _, err := bus.OpenAuthority(filepath.Join(t.data, daemon.BusDir)); err != nil {
						return fmt.Errorf("%w; on another machine than the controller's, use --server URL (or 'mesh node join-token %s')", err, args[0])
					}
				}
			}
			cs := make([]commands.Command, len(args))
			for i, n := range args {
				cs[i] = commands.RegisterNode{Node: n}
			}
			if err := e.execute(cmd, cs...); err != nil {
				return err
			}
			if creds != "" {
				return writeCreds(cmd, args[0], creds, busURLs)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&creds, "creds", "", "write the node's bus credential `file` (mode 0600) for 'mesh agent --creds'")
	cmd.Flags().StringSliceVar(&busURLs, "bus-url", nil, "with --creds: the bus `URLs` the agent dials (default: those the controller names, with --server; else DATA/bus-urls of the running controller, else nats://127.0.0.1:4222)")
	flagcheck.Install(cmd.Flags(), map[string]flagcheck.Check{"bus-url": flagcheck.ListOf(flagcheck.URLOf("nats", "tls", "ws", "wss"))})
	return cmd
}

// writeCreds writes node's bus credential file: asked of the controller
// with --server, else minted from the trust root in the data directory of
// cmd's target; either way recorded (node.credentials-issued).
func writeCreds(cmd *cobra.Command, node, file string, urls []string) error {
	return withSession(cmd, true, nil, func(s *session.Session) error {
		if s.Remote() {
			a, ok := s.Service.(api.Access)
			if !ok {
				return fmt.Errorf("this client mints no credentials")
			}
			res, err := a.NodeCreds(cmd.Context(), api.NodeRequest{Operator: operator(), Node: node})
			if err != nil {
				return err
			}
			c := res.Creds
			if len(urls) > 0 {
				c.URLs = urls // the servers this host dials; the user is the same
			}
			return bus.WriteCreds(file, bus.Creds{Version: c.Version, Node: c.Node, URLs: c.URLs, JWT: c.JWT, Seed: c.Seed, CA: c.CA})
		}
		data, _ := cmd.Flags().GetString(flagData)
		if len(urls) == 0 {
			var err error
			if urls, err = readBusURLs(data); err != nil {
				return err
			}
		}
		pub, err := daemon.MintCreds(data, node, file, urls, nil)
		if err != nil {
			return err
		}
		_, err = s.Local.Handler().Execute(cmd.Context(), "operator:"+operator(), commands.RecordCredentials{Node: node, PublicKey: pub, By: "operator:" + operator()})
		return err
	})
}

// readBusURLs reads DATA/bus-urls; none (nil) if there is no such file.
func readBusURLs(data string) ([]string, error) {
	f, err := os.Open(filepath.Join(data, busURLsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	var urls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if u := strings.TrimSpace(sc.Text()); u != "" {
			urls = append(urls, u)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return urls, nil
}

// writeBusURLs replaces DATA/bus-urls (see busURLsFile) whole: a
// `mesh node register` run meanwhile reads the old list or the new one,
// never a part.
func writeBusURLs(data string, urls []string) error {
	return atomicfile.WriteFile(filepath.Join(data, busURLsFile), []byte(strings.Join(urls, "\n")+"\n"), 0o644)
}
