package nodeplan_test

import (
	"reflect"
	"strings"
	"testing"

	"meshplane/declaration"
	"meshplane/declaration/nodeplan"
)

// TestDeclaredChanges: each reported field reads as its old and new value;
// a secret or a value longer than a line as its digest; a field the specs
// do not explain, or one not reported, is left out.
func TestDeclaredChanges(t *testing.T) {
	ctr := func(env []string, src string) declaration.Resource {
		return declaration.Resource{Name: "web", Kind: declaration.KindContainer, Module: "hello", Container: &declaration.Container{
			Image: "img@sha256:aa", Env: env, Mounts: []declaration.Mount{{Source: src, Target: "/data"}},
		}}
	}
	long := strings.Repeat("x", nodeplan.MaxShownValue+1)
	file := func(content string, mode uint32) declaration.Resource {
		return declaration.Resource{Name: "/etc/a", Kind: declaration.KindFile, File: &declaration.File{Path: "/etc/a", Mode: mode, Content: content}}
	}
	dir := func(mode uint32) declaration.Resource {
		return declaration.Resource{Name: "/var/a", Kind: declaration.KindDirectory, Directory: &declaration.Directory{Path: "/var/a", Mode: mode}}
	}
	tests := []struct {
		name       string
		have, want declaration.Resource
		fields     []string
		out        []nodeplan.Change
	}{
		{"env and mount", ctr([]string{"GREETING=hello"}, "/var/lib/forge"), ctr([]string{"GREETING=bonjour"}, "/srv/forge"),
			[]string{"env.GREETING", "mounts./data"},
			[]nodeplan.Change{{Field: "env.GREETING", From: "hello", To: "bonjour"}, {Field: "mounts./data", From: "/var/lib/forge", To: "/srv/forge"}}},
		{"an added key", ctr(nil, "/a"), ctr([]string{"NEW=1"}, "/a"), []string{"env.NEW"},
			[]nodeplan.Change{{Field: "env.NEW", From: "", To: "1"}}},
		{"a secret", ctr([]string{"DB_PASSWORD=hunter2"}, "/a"), ctr([]string{"DB_PASSWORD=hunter3"}, "/a"), []string{"env.DB_PASSWORD"},
			[]nodeplan.Change{{Field: "env.DB_PASSWORD", From: "sha256:f52fbd32b2b3", To: "sha256:" + sha12("hunter3")}}},
		{"longer than a line", ctr([]string{"A=short"}, "/a"), ctr([]string{"A=" + long}, "/a"), []string{"env.A"},
			[]nodeplan.Change{{Field: "env.A", From: "short", To: "sha256:" + sha12(long)}}},
		{"only the reported fields", ctr([]string{"A=1", "B=1"}, "/a"), ctr([]string{"A=2", "B=2"}, "/a"), []string{"env.B"},
			[]nodeplan.Change{{Field: "env.B", From: "1", To: "2"}}},
		{"changed behind the agent's back: nothing to say", ctr(nil, "/a"), ctr(nil, "/a"), []string{"image"}, nil},
		{"a file's content and mode", file("a\nb\n", 0o640), file("c\n", 0o600), []string{"content", "mode"},
			[]nodeplan.Change{{Field: "content", From: "sha256:" + sha12("a\nb\n"), To: "sha256:" + sha12("c\n")}, {Field: "mode", From: "640", To: "600"}}},
		{"a directory's mode", dir(0o750), dir(0o755), []string{"mode"}, []nodeplan.Change{{Field: "mode", From: "750", To: "755"}}},
		{"kinds differ", dir(0o750), file("x", 0o600), []string{"mode"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nodeplan.DeclaredChanges(tt.have, tt.want, tt.fields)
			if !reflect.DeepEqual(got, tt.out) {
				t.Errorf("DeclaredChanges = %+v\nwant %+v", got, tt.out)
			}
		})
	}
}

func sha12(s string) string {
	return nodeplan.Shown("env.SECRET", s)[len("sha256:"):]
}
