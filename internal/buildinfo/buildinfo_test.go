package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestVersionOf: a module version wins; else the revision, cut to 12, with
// +dirty for a modified tree; else devel.
func TestVersionOf(t *testing.T) {
	set := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: set("vcs.revision", "0123456789abcdef")}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: set("vcs.revision", "0123456789abcdef", "vcs.modified", "true")}, "0123456789ab+dirty"},
		{debug.BuildInfo{Settings: set("vcs.revision", "abc", "vcs.modified", "false")}, "abc"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		if got := versionOf(&c.bi); got != c.want {
			t.Errorf("versionOf(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
}
