// Package clihelp is the help of a cobra command tree whose verbs sit in
// groups ("mesh node show"): a group command that only holds verbs, every
// verb of a tree in the order added, the list of them a root's usage
// template prints ({{verbs .}}), and a verb's arguments checked as bad
// usage (NoArgs, ExactArgs), and the tree's reference generated from the
// commands: markdown and man pages (WriteMarkdown, WriteMan). It knows
// nothing of mesh, as kubectl's templates package knows nothing of
// kubectl's verbs.
package clihelp

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/internal/usage"
)

func init() { cobra.AddTemplateFunc("verbs", List) }

// groupAnnotation marks a command that only holds verbs.
const groupAnnotation = "group"

// Group is a command that only holds verbs ("mesh node ..."). Named alone
// or with a verb it does not know, it is bad usage (usage.Err).
func Group(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:         name + " COMMAND",
		Short:       short,
		Annotations: map[string]string{groupAnnotation: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				var names []string
				for _, c := range cmd.Commands() {
					names = append(names, c.Name())
				}
				return usage.Errorf("name a command: %s", strings.Join(names, ", "))
			}
			return usage.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
		},
	}
}

// Verbs returns every verb under root, in the order added: a group's
// verbs in its place, and a verb's own verbs after it (agent join).
func Verbs(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			if sub.Annotations[groupAnnotation] != "true" {
				out = append(out, sub)
			}
			walk(sub)
		}
	}
	walk(root)
	return out
}

// Name is a verb's path without the root's name ("node show").
func Name(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// List is every verb of root, one a line with its short help, aligned.
func List(root *cobra.Command) string {
	vs := Verbs(root)
	width := 0
	for _, v := range vs {
		width = max(width, len(Name(v)))
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, Name(v), v.Short)
	}
	return b.String()
}

// NoArgs refuses any argument, as bad usage (usage.Err).
func NoArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usage.Errorf("unexpected argument %q", args[0])
	}
	return nil
}

// ExactArgs refuses other than n arguments, as bad usage saying want.
func ExactArgs(n int, want string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usage.Errorf("%s", want)
		}
		return nil
	}
}
