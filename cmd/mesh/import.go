package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/events/storeurl"
	"meshplane/render"
)

// maxListed bounds the refused lines an import lists on stderr.
const maxListed = 100

func (e *env) importCmd() *cobra.Command {
	var skipInvalid bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "append the events of a mesh export file to the store (any backend, --store), keeping their ids: importing twice appends nothing",
		Long: `Import reads FILE, written by mesh export (JSON lines, one event a line),
and appends its events to the store in the file's order, keeping each
event's id, time, actor, correlation and payload; the store assigns
versions and positions. An event whose id the store holds already, with
the same content, is not appended again, so importing a file twice (or
after an import that stopped midway) appends only what is missing. An id
the store holds with other content is refused.

The whole file is checked before anything is appended, as the live path
checks what it appends: each line is one event, decoded strictly (no key
given twice, none in another case, no unknown envelope field), with an id
on no earlier line and a time; its type is known and its
schema no newer than this build's; its payload decodes to its type (a
field this build does not know is let by); its node is its stream's
(node-NAME; a module's on module-NAME) and an agent's event is that node's;
every node and module name is a valid name (a DNS label); a setting, a
module's spec, an artifact or a deploy is valid as its command would check
it; an apply report's counts add up and it names one of its node's
declarations; and an event of a node or a module comes after the node's
registration or the module's definition, earlier in the file or in the
store. A file with a bad line appends nothing: every bad line is listed on
stderr with its number and why, and import exits 3 (refused).
--skip-invalid appends the others instead, listing what it skipped.
Consecutive events of one stream are appended together, in batches.

A progress bar (events/s, time left) is shown on stderr when it is a
terminal.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("give one FILE to import (written by mesh export)")
			}
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
	open := func() (events.Store, error) {
		s, err := t.open(ctx, true, nil)
		if err != nil {
			return nil, err
		}
		if store, ok := s.Store, s.Store != nil; ok && !s.Remote() {
			return store, nil // closing it closes s
		}
		s.Close()
		return nil, fmt.Errorf("the store in %s is held by a running controller: import appends to the store itself; stop the controller first", t.data)
	}
	_, err := os.Stat(storeurl.Path(t.data))
	c, err := importfile.Check(ctx, path, events.NewRegistry(), importfile.Store{Open: open, None: t.bolt() && err != nil})
	if err != nil {
		return err
	}
	defer c.Close()
	if len(c.Bad) > 0 {
		skipped := ""
		if skipInvalid {
			skipped = " (skipped)"
		}
		for _, l := range c.Listed(maxListed) {
			fmt.Fprintf(e.stderr, "mesh import: %s: %s%s\n", path, l, skipped)
		}
		if !skipInvalid {
			return &commands.Rejection{Code: commands.CodeInvalid, Msg: fmt.Sprintf(
				"import %s: %d of %d line(s) are not events to import (listed above): nothing was appended (--skip-invalid appends the others)",
				path, len(c.Bad), c.Accepted+len(c.Bad))}
		}
	}
	p := render.NewProgress(e.stderr, int64(c.Accepted), "importing")
	res, err := c.Append(ctx, p.Add)
	p.Done()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d event(s) from %s: %d appended, %d already in the store", res.Read, path, res.Appended, res.Read-res.Appended)
	if len(c.Bad) > 0 {
		fmt.Fprintf(e.stdout, "; %d invalid line(s) skipped", len(c.Bad))
	}
	fmt.Fprintln(e.stdout)
	return nil
}
