package main

import (
	"github.com/spf13/cobra"

	"meshplane/internal/clihelp"
)

// docsCmd writes the CLI reference from the commands themselves: markdown
// (docs/cli in the repository, checked current by TestDocsCurrent) and,
// with --man, man pages.
func (e *env) docsCmd() *cobra.Command {
	var dir, man string
	cmd := &cobra.Command{
		Use:   "docs --dir DIR [--man DIR]",
		Short: "write the CLI reference: one markdown file a verb into --dir, man pages into --man",
		Long: `Write the CLI reference, generated from the commands themselves: one
markdown file a verb (mesh_status.md, mesh_node_show.md, ...) into --dir,
and with --man one man page a verb (section 1) into that directory. The
flags' defaults are the built-in ones, whatever MESH_DATA or MESH_STORE
say, and nothing in the output is dated: two runs write the same bytes.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usagef("--dir is required")
			}
			root := cmd.Root()
			builtinDefaults(root)
			if err := clihelp.WriteMarkdown(root, dir); err != nil {
				return err
			}
			if man != "" {
				return clihelp.WriteMan(root, man, clihelp.ManHeader{Section: "1", Source: "meshplane", Manual: "meshplane manual"})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "write the markdown reference into this `directory` (made if missing)")
	cmd.Flags().StringVar(&man, "man", "", "also write man pages into this `directory` (made if missing)")
	return cmd
}

// builtinDefaults shows the root's flags with their built-in defaults,
// not those the environment gave this run (addTarget).
func builtinDefaults(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.Lookup(flagData).DefValue = defaultData
	fs.Lookup(flagStore).DefValue = ""
}
