package main

// The root's usage, which lists every verb (package clihelp) with the
// notes on where a command works and its exit codes.

import (
	"meshplane/session"

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

` + session.WhereHelp + `

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
