package main

// The root's usage, which lists every verb (package clihelp) with the
// notes on where a command works and its exit codes.

import (
	"github.com/spf13/cobra"
)

// The verbs in the order of a day's work; the root's usage lists them
// (clihelp's {{verbs .}}).
func init() { cobra.EnableCommandSorting = false }

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
