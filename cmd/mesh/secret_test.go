package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/secrets"
)

// TestSecretLocal: mesh secret set reads its value from stdin, locally;
// a module reading the secret defines (refused before it is set); list
// and export name the secret and never its value; the key is 0600.
func TestSecretLocal(t *testing.T) {
	t.Setenv(secrets.KeyEnv, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "forge.yaml")
	if err := os.WriteFile(file, []byte("module: forge\ncontainers:\n  - name: web\n    image: forge:1\n    env: {DB_PASSWORD: {secret: forge-db}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, e := mesh(t, "module", "define", file, "--data", dir); code != exitRejected || !strings.Contains(e, "secret forge-db, which is not set") {
		t.Fatalf("define before the secret is set: %d %s", code, e)
	}
	set := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		e := &env{stdout: &out, stderr: &errOut, now: wallClock}
		root := e.root()
		root.SetIn(strings.NewReader("pw-Local-Value\n"))
		code := e.runRoot(context.Background(), root, args)
		return code, out.String(), errOut.String()
	}
	if code, o, e := set("secret", "set", "forge-db", "--data", dir); code != exitOK || !strings.Contains(o, "secret.set") {
		t.Fatalf("secret set: %d %s %s", code, o, e)
	}
	if code, _, e := set("secret", "set", "forge-db", "pw-Local-Value", "--data", dir); code != exitUsage {
		t.Fatalf("a value on the command line: %d %s, want bad usage", code, e)
	}
	if fi, err := os.Stat(filepath.Join(dir, secrets.KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	if code, _, e := mesh(t, "module", "define", file, "--data", dir); code != exitOK {
		t.Fatalf("define: %d %s", code, e)
	}
	code, list, e := mesh(t, "secret", "list", "--data", dir)
	if code != exitOK || !strings.Contains(list, "forge-db") || !strings.Contains(list, "hmac-sha256:") || !strings.Contains(list, "forge") {
		t.Fatalf("secret list: %d %s %s", code, list, e)
	}
	out := filepath.Join(dir, "out.jsonl")
	if code, _, e := mesh(t, "export", "--data", dir, "-f", out); code != exitOK {
		t.Fatalf("export: %d %s", code, e)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, show, _ := mesh(t, "module", "show", "forge", "--data", dir, "-o", "json")
	for what, s := range map[string]string{"export": string(b), "list": list, "module show": show} {
		if strings.Contains(s, "pw-Local-Value") {
			t.Errorf("%s holds the secret's value", what)
		}
	}
	if !strings.Contains(string(b), `"secret":"forge-db","digest":"hmac-sha256:`) {
		t.Errorf("the export's module.defined does not name the secret and its digest:\n%s", b)
	}
}
