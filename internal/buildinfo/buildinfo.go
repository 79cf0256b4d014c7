// Package buildinfo says which build of mesh this is, from what the Go
// toolchain stamped into the binary (runtime/debug.ReadBuildInfo): the
// version an agent sends when it joins, and what the CLI and the metrics
// show.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version is this binary's version: the module's, or the VCS revision it
// was built from (with "+dirty" for a modified tree), or "devel".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "devel"
	}
	return rev + dirty
}

// Platform is the toolchain and platform the binary was built with
// ("go1.26.0 linux/amd64").
func Platform() string { return runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH }
