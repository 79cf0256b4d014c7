package main

// The command tree's help: groups of verbs, and the root's usage, which
// lists every verb with the notes on where a command works and its exit
// codes.

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func init() {
	cobra.AddTemplateFunc("verbs", verbList)
	cobra.EnableCommandSorting = false // the verbs in the order of a day's work
}

// group is a command that only holds verbs ("mesh node ..."). Named alone
// or with a verb it does not know, it is a usage error.
func group(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:         name + " COMMAND",
		Short:       short,
		Annotations: map[string]string{"group": "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name a command: %s", strings.Join(subNames(cmd), ", "))
			}
			return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
		},
	}
}

func subNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	return names
}

// verbs returns every verb under root, as its path without "mesh ", in
// the order added ("node show", ...).
func verbs(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			if sub.Annotations["group"] == "true" {
				walk(sub)
				continue
			}
			out = append(out, sub)
			walk(sub) // a verb's own verbs: agent join, agent install
		}
	}
	walk(root)
	return out
}

func verbName(c *cobra.Command) string { return strings.TrimPrefix(c.CommandPath(), "mesh ") }

// verbList is the root help's list of verbs, one a line.
func verbList(root *cobra.Command) string {
	vs := verbs(root)
	width := 0
	for _, v := range vs {
		width = max(width, len(verbName(v)))
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, verbName(v), v.Short)
	}
	return b.String()
}

const rootUsage = `Usage:
  mesh COMMAND [args] [flags]

Commands:
{{verbs .}}
Flags (every command takes them, anywhere on the line):
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}

Where a command works:
  On a local store by default: --data DIR (default ".mesh", or $MESH_DATA), the
  directory holding the event store (events.db, a bbolt file locked while a
  command uses it). Or against a running controller: --server URL (or
  $MESH_SERVER), with the token from --token-file FILE (the controller's
  DATA/api-token) or $MESH_TOKEN, and --tls-ca FILE for a private CA. The
  output is the same either way. When the local store is locked and
  DATA/controller.json names a live controller, the command asks it (with the
  token in DATA/api-token). up, rebuild, store verify and scenario run work
  on a local store only.

  Commands that only read open the store read-only (any number at once); only
  up and the write verbs create it or write to it. A command whose work is
  already done (registering a registered node, assigning an assigned module,
  ...) writes nothing, says so, and exits 0. A command with several items (node
  register a b c, module define f1 f2, the set-up of mesh up) checks them all
  first and writes nothing if one is refused.

  Every query takes -o table|json; the JSON field names are a public API, the
  tables are for people. 'mesh COMMAND --help' lists a command's flags;
  'mesh completion bash|zsh|fish' writes a shell completion script.

Exit codes:
  0 ok (or nothing to do), 1 failed (also: no scenario ran, a damaged store
  file, or a read that had to skip events it could not decode: what could be
  read is printed first), 2 bad usage, 3 refused: by the mesh, or a malformed
  module or mesh file, nothing written (the code is printed: invalid,
  node-unknown, module-unknown, not-assigned, route-claimed, ...), 4 mesh plan:
  a heavy plan, 5 mesh plan: a node does not compose (over 4), 70 a bug: mesh
  panicked (the stack is printed).
`
