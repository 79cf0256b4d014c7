package clihelp

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"meshplane/internal/usage"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "mesh"}
	node := Group("node", "nodes")
	node.AddCommand(&cobra.Command{Use: "show NODE", Short: "one node", Run: func(*cobra.Command, []string) {}})
	agent := &cobra.Command{Use: "agent", Short: "run an agent", Run: func(*cobra.Command, []string) {}}
	agent.AddCommand(&cobra.Command{Use: "join URL", Short: "join", Run: func(*cobra.Command, []string) {}})
	hidden := &cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(agent, node, hidden)
	return root
}

// TestVerbs: groups are walked in their place, a verb's own verbs follow
// it, hidden ones are left out; List aligns them with their short help.
func TestVerbs(t *testing.T) {
	cobra.EnableCommandSorting = false
	var names []string
	for _, v := range Verbs(tree()) {
		names = append(names, Name(v))
	}
	if got := strings.Join(names, ","); got != "agent,agent join,node show" {
		t.Errorf("Verbs: %s", got)
	}
	want := "  agent       run an agent\n  agent join  join\n  node show   one node\n"
	if got := List(tree()); got != want {
		t.Errorf("List:\n%s\nwant\n%s", got, want)
	}
}

// TestGroup: a group named alone, or with a verb it does not know, is bad
// usage naming its verbs or the unknown one.
func TestGroup(t *testing.T) {
	root := tree()
	for args, want := range map[string]string{"node": "name a command: show", "node bogus": `unknown command "bogus" for "mesh node"`} {
		root.SetArgs(strings.Fields(args))
		root.SilenceErrors, root.SilenceUsage = true, true
		err := root.Execute()
		if !errors.Is(err, usage.Err) || !strings.Contains(err.Error(), want) {
			t.Errorf("mesh %s: %v, want bad usage saying %q", args, err, want)
		}
	}
}

// TestArgs: NoArgs and ExactArgs refuse as bad usage, saying which.
func TestArgs(t *testing.T) {
	if err := NoArgs(nil, []string{"x"}); !errors.Is(err, usage.Err) || err.Error() != `unexpected argument "x"` {
		t.Errorf("NoArgs(x): %v", err)
	}
	if err := NoArgs(nil, nil); err != nil {
		t.Errorf("NoArgs(): %v", err)
	}
	two := ExactArgs(2, "want NODE RESOURCE")
	if err := two(nil, []string{"a"}); !errors.Is(err, usage.Err) || err.Error() != "want NODE RESOURCE" {
		t.Errorf("ExactArgs(2)(a): %v", err)
	}
	if err := two(nil, []string{"a", "b"}); err != nil {
		t.Errorf("ExactArgs(2)(a, b): %v", err)
	}
}
