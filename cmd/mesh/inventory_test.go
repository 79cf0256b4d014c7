package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDayOneVerbs: node list, module list, module show, module remove,
// node remove and version, rebuild --projection, and the refusals of names that match nothing
// (timeline --node, --type, why, churn), run locally and against a running
// controller over the same history: every step exits as it should, says
// what it should, and the two ways print the same.
func TestDayOneVerbs(t *testing.T) {
	type step struct {
		args []string
		code int
		out  []string // in stdout
		err  string   // in stderr
	}
	steps := []step{
		{args: []string{"node", "register", "a", "b"}},
		{args: []string{"module", "define", "MODFILE"}},
		{args: []string{"assign", "web", "a"}},
		{args: []string{"assign", "web", "b"}},
		{args: []string{"node", "list"}, out: []string{"NODE", "a     no", "web"}},
		{args: []string{"node", "list", "-o", "json"}, out: []string{`"node": "a"`, `"modules": [`}},
		{args: []string{"module", "list"}, out: []string{"MODULE", "web     1", "a, b"}},
		{args: []string{"module", "list", "-o", "json"}, out: []string{`"module": "web"`, `"nodes": [`}},
		{args: []string{"module", "show", "web"}, out: []string{"module web (upgrade: manual)", "nginx:1", "nodes:\n  a\n  b\n", "none recorded"}},
		{args: []string{"module", "show", "web", "-o", "json"}, out: []string{`"image": "nginx:1"`, `"builds": []`}},
		{args: []string{"module", "show", "nosuch"}, code: exitRejected, err: "module-unknown"},
		{args: []string{"module", "remove", "web"}, code: exitRejected, err: "assigned to a, b"},
		{args: []string{"node", "remove", "a"}, code: exitRejected, err: "module(s) web are assigned"},
		{args: []string{"timeline", "--node", "nosuch"}, code: exitRejected, err: "node-unknown"},
		{args: []string{"timeline", "--module", "nosuch"}, code: exitRejected, err: "module-unknown"},
		{args: []string{"timeline", "--type", "bogus"}, code: exitRejected, err: "the types are apply.reported"},
		{args: []string{"timeline", "--type", "module.", "-o", "json"}, out: []string{`"type": "module.defined"`, `"type": "module.assigned"`}},
		{args: []string{"why", "a", "nosuch"}, code: exitRejected, err: "resource-unknown"},
		{args: []string{"churn", "nosuch"}, code: exitRejected, err: "node-unknown"},
		// a store alone has no bus (unsupported); a controller's has no agent of a (logs-unreadable)
		{args: []string{"logs", "a", "web"}, code: exitRejected, err: "logs"},
		{args: []string{"logs", "nosuch", "web"}, code: exitRejected, err: "node-unknown"},
		{args: []string{"logs", "a", "web", "--tail", "-1"}, code: exitUsage, err: "--tail"},
		{args: []string{"node", "remove", "a", "--drain"}, out: []string{"node-a #", "module.released", "node.removed"}},
		{args: []string{"node", "remove", "a"}, out: []string{"node a is removed already, nothing to do"}},
		{args: []string{"module", "remove", "web", "--release"}, out: []string{"node-b #", "module.released", "module-web #", "module.removed"}},
		{args: []string{"module", "list"}, out: []string{"no module is defined"}},
		{args: []string{"node", "list"}, out: []string{"b     no"}},
		{args: []string{"timeline", "--node", "a", "--type", "node.removed", "-o", "json"}, out: []string{`"summary": "node a removed, drained of web"`}},
		{args: []string{"node", "register", "a"}, out: []string{"node.registered"}},
		{args: []string{"module", "define", "MODFILE"}, out: []string{"module.defined"}},
		{args: []string{"rebuild", "--projection", "status"}, out: []string{"status"}},
		{args: []string{"rebuild", "--projection", "nosuch"}, code: exitUsage, err: "no projection"},
		{args: []string{"version"}, out: []string{"mesh "}},
		{args: []string{"version", "-o", "json"}, out: []string{`"mesh": "`}},
	}
	modFile := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(modFile, []byte("module: web\nroutes: [web.example]\ncontainers:\n  - name: web\n    image: nginx:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outs := map[string][]string{}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			flags, stop := m.start(t, t.TempDir())
			defer stop()
			for _, s := range steps {
				args := append([]string{}, s.args...)
				for i, a := range args {
					if a == "MODFILE" {
						args[i] = modFile
					}
				}
				code, out, errOut := mesh(t, append(args, flags...)...)
				if code != s.code {
					t.Fatalf("mesh %s: exit %d, want %d\n%s%s", strings.Join(s.args, " "), code, s.code, out, errOut)
				}
				for _, want := range s.out {
					if !strings.Contains(out, want) {
						t.Errorf("mesh %s: stdout lacks %q:\n%s", strings.Join(s.args, " "), want, out)
					}
				}
				if !strings.Contains(errOut, s.err) {
					t.Errorf("mesh %s: stderr lacks %q:\n%s", strings.Join(s.args, " "), s.err, errOut)
				}
				if strings.HasSuffix(strings.Join(s.args, " "), "-o json") && !json.Valid([]byte(out)) {
					t.Errorf("mesh %s: not JSON:\n%s", strings.Join(s.args, " "), out)
				}
				if s.args[0] != "timeline" && s.args[0] != "rebuild" { // the wall clock, the time taken
					outs[m.name] = append(outs[m.name], out)
				}
			}
		})
	}
	for i := range outs["local"] {
		if i < len(outs["remote"]) && outs["local"][i] != outs["remote"][i] {
			t.Errorf("step %d prints otherwise locally and against a controller:\n--- local\n%s--- remote\n%s", i, outs["local"][i], outs["remote"][i])
		}
	}
}
