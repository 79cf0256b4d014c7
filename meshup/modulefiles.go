package meshup

import (
	"fmt"
	"os"
	"path/filepath"

	"meshplane/commands"
	"meshplane/events"
)

// ReadSetUp reads the mesh file at meshPath and the module files
// (*.yaml) in modulesDir: what up sets up.
func ReadSetUp(meshPath, modulesDir string) (File, []commands.DefineModule, error) {
	mf, err := ReadFile(meshPath)
	if err != nil {
		return mf, nil, err
	}
	files, err := filepath.Glob(filepath.Join(modulesDir, "*.yaml"))
	if err != nil {
		return mf, nil, err
	}
	defs, err := ReadModuleFiles(files)
	return mf, defs, err
}

// ReadModuleFiles reads and parses every module file before anything is
// appended, so that one bad file defines nothing. Each is read no further
// than commands.MaxModuleFileSize; two files defining one module are
// refused, naming both.
func ReadModuleFiles(paths []string) ([]commands.DefineModule, error) {
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

// ModuleCommands is ReadModuleFiles as commands (mesh module define).
func ModuleCommands(paths []string) ([]commands.Command, error) {
	defs, err := ReadModuleFiles(paths)
	if err != nil {
		return nil, err
	}
	cs := make([]commands.Command, len(defs))
	for i, d := range defs {
		cs[i] = d
	}
	return cs, nil
}
