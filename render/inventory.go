package render

import (
	"io"
	"strings"

	"meshplane/api"
)

// NodeList shows every registered node, one a row (mesh node list); its
// JSON is the answer.
func NodeList(w io.Writer, f Format, l api.NodeList) error {
	if f == JSON {
		return WriteJSON(w, l)
	}
	if len(l.Nodes) == 0 {
		pf(w, "no node is registered (mesh node register NODE)\n")
		return nil
	}
	tw := table(w)
	pf(tw, "NODE\tADOPTED\tSYNC\tHEALTH\tMODULES\n")
	for _, n := range l.Nodes {
		pf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Node, yesNo(n.Adopted), orDash(n.Sync), orDash(n.Health), orDash(strings.Join(n.Modules, ", ")))
	}
	return tw.Flush()
}

// ModuleList shows every defined module, one a row (mesh module list); its
// JSON is the answer.
func ModuleList(w io.Writer, f Format, l api.ModuleList) error {
	if f == JSON {
		return WriteJSON(w, l)
	}
	if len(l.Modules) == 0 {
		pf(w, "no module is defined (mesh module define FILE)\n")
		return nil
	}
	tw := table(w)
	pf(tw, "MODULE\tCONTAINERS\tBUILDS\tUPGRADE\tROUTES\tNODES\n")
	for _, m := range l.Modules {
		pf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", m.Module, m.Containers, m.Builds, m.Upgrade,
			orDash(strings.Join(m.Routes, ", ")), orDash(strings.Join(m.Nodes, ", ")))
	}
	return tw.Flush()
}

// ModuleShow shows one module: its definition now, its nodes, its builds
// and which compose runs (mesh module show); its JSON is the answer.
func ModuleShow(w io.Writer, f Format, m api.ModuleShow) error {
	if f == JSON {
		return WriteJSON(w, m)
	}
	pf(w, "module %s (upgrade: %s)\n", m.Module, m.Upgrade)
	if len(m.Spec.Routes) > 0 {
		pf(w, "routes: %s\n", strings.Join(m.Spec.Routes, ", "))
	}
	pf(w, "\ncontainers:\n")
	tw := table(w)
	pf(tw, "  NAME\tRUNS\tMOUNTS\tENV\n")
	for _, c := range m.Spec.Containers {
		runs := c.Image
		if c.Artifact != "" {
			runs = "artifact " + c.Artifact
		}
		var mounts []string
		for _, mt := range c.Mounts {
			s := mt.Source
			if mt.Target != "" && mt.Target != mt.Source {
				s += ":" + mt.Target
			}
			if mt.ReadOnly {
				s += " (ro)"
			}
			mounts = append(mounts, s)
		}
		env := len(c.Env) + len(c.Ports)
		pf(tw, "  %s\t%s\t%s\t%d variable(s)\n", c.Name, runs, orDash(strings.Join(mounts, ", ")), env)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var dirs, files []string
	for _, d := range m.Spec.Directories {
		dirs = append(dirs, d.Path)
	}
	for _, f := range m.Spec.Files {
		files = append(files, f.Path)
	}
	if len(dirs) > 0 {
		pf(w, "directories: %s\n", strings.Join(dirs, ", "))
	}
	if len(files) > 0 {
		pf(w, "files: %s\n", strings.Join(files, ", "))
	}
	pf(w, "\nnodes:\n")
	if len(m.Nodes) == 0 {
		pf(w, "  none: assigned to no node\n")
	}
	for _, n := range m.Nodes {
		taken := ""
		if n.Taken {
			taken = " (taken)"
		}
		pf(w, "  %s%s\n", n.Node, taken)
	}
	pf(w, "\nbuilds:\n")
	if len(m.Builds) == 0 {
		pf(w, "  none recorded\n")
		return nil
	}
	tw = table(w)
	pf(tw, "  ARTIFACT\tDIGEST\tLATEST\tDEPLOYED\n")
	for _, b := range m.Builds {
		pf(tw, "  %s\t%s\t%s\t%s\n", b.Name, b.Digest, yesNo(b.Latest), yesNo(b.Deployed))
	}
	return tw.Flush()
}

// Version shows this binary's version and, when the CLI asked one, the
// controller's (mesh version); its JSON is {"mesh": …, "controller": …}.
func Version(w io.Writer, f Format, v VersionInfo) error {
	if f == JSON {
		return WriteJSON(w, v)
	}
	pf(w, "mesh %s (%s)\n", v.Mesh, v.Go)
	if v.Controller != "" {
		pf(w, "controller %s\n", v.Controller)
	}
	return nil
}

// VersionInfo is what mesh version says.
type VersionInfo struct {
	Mesh       string `json:"mesh"`
	Go         string `json:"go"`
	Controller string `json:"controller,omitempty"` // with --server: the controller's (its mesh info)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
