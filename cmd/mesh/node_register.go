package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/daemon"
	"meshplane/internal/atomicfile"
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
that node alone, minted from the bus's trust root in the controller's data
directory (--data, on the controller's machine), naming the bus URLs of
--bus-url, else those the running controller wrote to DATA/bus-urls, else
nats://127.0.0.1:4222.`,
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
	cmd.Flags().StringSliceVar(&busURLs, "bus-url", nil, "with --creds: the bus `URLs` the agent dials (default: DATA/bus-urls of the running controller, else nats://127.0.0.1:4222)")
	checkFlags(cmd.Flags(), map[string]flagCheck{"bus-url": listOf(urlOf("nats", "tls", "ws", "wss"))})
	return cmd
}

// writeCreds writes node's bus credential file from the trust root in the
// data directory of cmd's target.
func writeCreds(cmd *cobra.Command, node, file string, urls []string) error {
	data, _ := cmd.Flags().GetString(flagData)
	if len(urls) == 0 {
		var err error
		if urls, err = readBusURLs(data); err != nil {
			return err
		}
	}
	return daemon.RegisterCreds(data, node, file, urls, nil)
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
