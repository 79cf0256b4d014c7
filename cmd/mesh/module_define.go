package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"meshplane/commands"
	"meshplane/events"
)

func (e *env) moduleDefineCmd() *cobra.Command {
	var plan bool
	cmd := &cobra.Command{
		Use:   "define FILE...",
		Short: "define (or redefine) modules from module files, all or none",
		Long: `Define (or redefine) modules from module files, all or none: every file is
read and checked before anything is written, and one refused file defines
nothing. A module file holds one module (its format is in commands.ParseModuleFile):
a second YAML document in it (after "---") is refused, naming the file and
the line it starts on, never dropped; put each module in a file of its own.
Module, container and port names are DNS labels (1 to 63 lower-case
letters, digits and '-', no '-' at either end): the refusal names the rule
a name breaks. --plan appends nothing: it shows the plan of every node the
definitions reach (mesh plan --after "module define FILE...").`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one module file")
			}
			if plan {
				return planDefine(cmd, args)
			}
			if cmd.Flags().Changed("output") || cmd.Flags().Changed("json") {
				return usagef("-o goes with --plan: a definition prints what it appended")
			}
			defs, err := readModuleFiles(args)
			if err != nil {
				return err
			}
			cs := make([]commands.Command, len(defs))
			for i, d := range defs {
				cs[i] = d
			}
			return e.execute(cmd, cs...)
		},
	}
	cmd.Flags().BoolVar(&plan, "plan", false, "append nothing: show the plan of every node the definitions reach (exit 4: heavy)")
	addOutput(cmd)
	return cmd
}

// readModuleFiles reads and parses every module file before anything is
// appended, so that one bad file defines nothing. Each is read no further
// than commands.MaxModuleFileSize; two files defining one module are
// refused, naming both.
func readModuleFiles(paths []string) ([]commands.DefineModule, error) {
	defs := make([]commands.DefineModule, 0, len(paths))
	from := map[string]string{} // module → the file defining it
	for _, f := range paths {
		name, spec, err := readModuleFile(f)
		if err != nil {
			return nil, err
		}
		if prev, ok := from[name]; ok {
			return nil, &commands.ModuleFileError{File: f, Field: "module", Msg: fmt.Sprintf("module %s is also defined by %s", name, prev)}
		}
		from[name] = f
		defs = append(defs, commands.DefineModule{Module: name, Spec: spec})
	}
	return defs, nil
}

func readModuleFile(path string) (string, events.ModuleSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", events.ModuleSpec{}, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", events.ModuleSpec{}, err
	} else if st.IsDir() {
		return "", events.ModuleSpec{}, &commands.ModuleFileError{File: path, Msg: "a directory, not a module file"}
	}
	return commands.ReadModuleFile(path, f)
}
