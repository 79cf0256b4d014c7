package main

// Flag values checked as they are parsed (package flagcheck): a value that
// does not parse, or is out of range, is bad usage (exit 2) naming the
// flag, before anything starts. A verb names the checks of its flags that
// take a value of a kind (flagcheck.Install); free text (a path, a name)
// is not checked, and what needs every flag at hand stays in the verb.
// TestFlagsChecked holds every flag to one or the other. The checks below
// know the mesh; the generic ones are flagcheck's.

import (
	"errors"
	"fmt"
	"strings"

	"meshplane/agent"
	"meshplane/controller"
)

// label is a Docker label the agent adds, KEY=VALUE: KEY not empty, no
// space in it, and none of the labels the runtime sets itself.
func label(s string) error {
	k, _, ok := strings.Cut(s, "=")
	if !ok || k == "" || strings.ContainsAny(k, " \t\n") {
		return errors.New("want KEY=VALUE (meshplane.data=ID)")
	}
	switch k {
	case agent.LabelManaged, agent.LabelNode, agent.LabelResource, agent.LabelModule, agent.LabelDigest, agent.LabelSpec:
		return fmt.Errorf("%s is the runtime's own label", k)
	}
	return nil
}

// planAfter is one of mesh plan's --after commands (controller.ParseAfter).
func planAfter(s string) error { return controller.CheckAfter(s) }
