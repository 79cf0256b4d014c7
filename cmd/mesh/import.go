package main

import (
	"context"

	"github.com/spf13/cobra"

	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/render"
	"meshplane/session"
)

func (e *env) importCmd() *cobra.Command {
	var skipInvalid bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "append the events of a mesh export file to the store (any backend, --store), keeping their ids: importing twice appends nothing",
		Long:  importfile.Help,
		Args:  exactArgs(1, "give one FILE to import (written by mesh export)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			return e.importRun(cmd.Context(), t, args[0], skipInvalid)
		},
	}
	cmd.Flags().BoolVar(&skipInvalid, "skip-invalid", false, "append the lines that pass the checks and list the others on stderr, instead of refusing the whole file")
	return cmd
}

// importRun is mesh import: check the file, settle what it needs of the
// store, refuse it or skip its bad lines, append the rest.
func (e *env) importRun(ctx context.Context, t target, path string, skipInvalid bool) error {
	c, err := importfile.Check(ctx, path, events.NewRegistry(), session.ImportStore(ctx, t.Target))
	if err != nil {
		return err
	}
	defer c.Close()
	if len(c.Bad) > 0 {
		render.ImportBad(e.stderr, path, c.Listed(-1), skipInvalid)
		if !skipInvalid {
			return c.Refusal(path)
		}
	}
	p := render.NewProgress(e.stderr, int64(c.Accepted), "importing")
	res, err := c.Append(ctx, p.Add)
	p.Done()
	if err != nil {
		return err
	}
	render.Imported(e.stdout, path, res.Read, res.Appended, len(c.Bad))
	return nil
}
