package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
)

// operator is the actor the CLI acts as.
func operator() string {
	name := os.Getenv("MESH_OPERATOR")
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = "cli"
	}
	return "operator:" + name
}

// execute runs commands against the store in dir as one, all or nothing
// (commands.Handler.ExecuteAll): if one is refused, none is written. It
// reports each: the events it appended, or that its work was already done.
func execute(ctx context.Context, e *env, dir string, cs ...commands.Command) error {
	if err := checkFresh(ctx, dir, cs); err != nil {
		return batchRefused(err, len(cs))
	}
	return withLocal(ctx, dir, true, false, func(l *local) error {
		results, err := l.handler.ExecuteAll(ctx, operator(), cs)
		for i, evs := range results {
			if len(evs) == 0 {
				fmt.Fprintf(e.stdout, "%s, nothing to do\n", commands.Unchanged(cs[i]))
			}
			for _, ev := range evs {
				fmt.Fprintf(e.stdout, "%s #%d %s\n", ev.Stream, ev.Position, ev.Type)
			}
		}
		if len(results) == 0 {
			return batchRefused(err, len(cs))
		}
		return err
	})
}

// batchRefused says of a refusal of a batch of n commands that none was
// written.
func batchRefused(err error, n int) error {
	var rej *commands.Rejection
	if n > 1 && errors.As(err, &rej) {
		return &commands.Rejection{Code: rej.Code, Msg: fmt.Sprintf("%s (none of the %d was written)", rej.Msg, n)}
	}
	return err
}

// checkFresh checks cs against an empty mesh when dir holds no store yet,
// so that a command refused there does not leave a new, empty store behind.
// Over an existing store ExecuteAll checks them.
func checkFresh(ctx context.Context, dir string, cs []commands.Command) error {
	if _, err := os.Stat(filepath.Join(dir, "events.db")); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	s := memstore.New()
	defer s.Close()
	return commands.NewHandler(s, events.NewRegistry()).Check(ctx, cs)
}

func cmdNodeRegister(ctx context.Context, e *env, args []string) error {
	fs := e.flags("node register", "[--data DIR] NODE...")
	data := dataFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("name at least one node")
	}
	var cs []commands.Command
	for _, n := range pos {
		cs = append(cs, commands.RegisterNode{Node: n})
	}
	return execute(ctx, e, *data, cs...)
}

func cmdNodeAdopt(ctx context.Context, e *env, args []string) error {
	fs := e.flags("node adopt", "[--data DIR] NODE")
	data := dataFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("name one node")
	}
	return execute(ctx, e, *data, commands.AdoptNode{Node: pos[0]})
}

func cmdNodeSet(ctx context.Context, e *env, args []string) error {
	fs := e.flags("node set", "[--data DIR] NODE KEY VALUE")
	data := dataFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usagef("want NODE KEY VALUE (an empty VALUE clears the setting)")
	}
	return execute(ctx, e, *data, commands.SetNodeSetting{Node: pos[0], Key: pos[1], Value: pos[2]})
}

func cmdModuleDefine(ctx context.Context, e *env, args []string) error {
	fs := e.flags("module define", "[--data DIR] FILE...")
	data := dataFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("name at least one module file")
	}
	defs, err := readModuleFiles(pos)
	if err != nil {
		return err
	}
	cs := make([]commands.Command, len(defs))
	for i, d := range defs {
		cs[i] = d
	}
	return execute(ctx, e, *data, cs...)
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

func moduleNode(verb string, mk func(module, node string) commands.Command) func(context.Context, *env, []string) error {
	return func(ctx context.Context, e *env, args []string) error {
		fs := e.flags(verb, "[--data DIR] MODULE NODE")
		data := dataFlag(fs)
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 2 {
			return usagef("want MODULE NODE")
		}
		return execute(ctx, e, *data, mk(pos[0], pos[1]))
	}
}

var (
	cmdAssign  = moduleNode("assign", func(m, n string) commands.Command { return commands.AssignModule{Module: m, Node: n} })
	cmdTake    = moduleNode("take", func(m, n string) commands.Command { return commands.TakeModule{Module: m, Node: n} })
	cmdRelease = moduleNode("release", func(m, n string) commands.Command {
		return commands.ReleaseModule{Module: m, Node: n}
	})
)
