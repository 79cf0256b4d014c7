package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/host/install"
	"meshplane/host/join"
)

// recordingSystemctl keeps the systemctl calls, one string each.
type recordingSystemctl struct{ calls []string }

func (r *recordingSystemctl) Systemctl(_ context.Context, args ...string) error {
	r.calls = append(r.calls, strings.Join(args, " "))
	return nil
}

// TestAgentInstall runs mesh agent install twice and uninstall --purge on
// a host under a directory (a fake systemctl; a join that writes
// DATA/node.creds as join.Join would): what each says, as the golden file
// has it.
func TestAgentInstall(t *testing.T) {
	root, data := t.TempDir(), filepath.Join(t.TempDir(), "agent")
	for _, d := range []string{install.UnitDir, install.RunDir} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sc := &recordingSystemctl{}
	var got join.Options
	oldHost, oldBinary := installHost, installBinary
	t.Cleanup(func() { installHost, installBinary = oldHost, oldBinary })
	installBinary = func() (string, error) { return "/usr/local/bin/mesh", nil }
	installHost = install.Host{Root: root, Systemctl: sc, Join: func(_ context.Context, o join.Options) (join.Result, error) {
		got = o
		creds := filepath.Join(o.Data, join.CredsFile)
		if _, err := os.Stat(creds); err == nil {
			return join.Result{Node: "n1", Creds: creds, Already: true}, nil
		}
		if err := os.MkdirAll(o.Data, 0o700); err != nil {
			return join.Result{}, err
		}
		return join.Result{Node: "n1", Creds: creds}, os.WriteFile(creds, []byte("x"), 0o600)
	}}
	token := api.JoinToken{URL: "https://ctl:7480", CAFingerprint: strings.Repeat("ab", 32), Node: "n1", Secret: strings.Repeat("A", 43)}.String()

	var all strings.Builder
	for _, args := range [][]string{
		{"agent", "install", "https://10.0.0.1:7480", "--token", token, "--data", data},
		{"agent", "install", "https://10.0.0.1:7480", "--token", token, "--data", data},
		{"agent", "uninstall", "--purge"},
	} {
		sc.calls = nil
		code, out, errOut := mesh(t, args...)
		if code != exitOK {
			t.Fatalf("mesh %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		all.WriteString("$ mesh " + strings.Join(args[:2], " ") + "\n" + out)
	}
	if got.URL != "https://10.0.0.1:7480" || got.Token != token || got.Data != data || got.AgentVersion == "" {
		t.Errorf("joined with %+v; want the URL, the token, the data directory and a version", got)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("uninstall --purge left %s: %v", data, err)
	}
	golden(t, "agent-install", strings.NewReplacer(root, "ROOT", data, "AGENTDATA").Replace(all.String()), t.TempDir())
}

// TestAgentInstallUsage: bad arguments are usage errors, and nothing is
// joined.
func TestAgentInstallUsage(t *testing.T) {
	oldHost := installHost
	t.Cleanup(func() { installHost = oldHost })
	installHost = install.Host{Root: t.TempDir(), Join: func(context.Context, join.Options) (join.Result, error) {
		t.Error("joined")
		return join.Result{}, nil
	}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "install", "https://c:7480"}, "give --token T"},
		{[]string{"agent", "install", "--token", "nope"}, "--token"},
		{[]string{"agent", "install", "--token", api.JoinToken{URL: "https://c", Node: "n", Secret: strings.Repeat("A", 43)}.String(), "--runtime", "podman"}, "--runtime"},
		{[]string{"agent", "install", "a", "b", "--token", "x"}, "--token"},
		{[]string{"agent", "uninstall", "extra"}, `unexpected argument "extra"`},
	} {
		code, _, errOut := mesh(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("mesh %s: exit %d, %q; want %d naming %q", strings.Join(tc.args, " "), code, errOut, exitUsage, tc.want)
		}
	}
}
