package main

import (
	"net/url"
	"strings"
	"testing"

	"meshplane/internal/meshtest"
)

// TestStorePostgres runs write and read verbs against --store postgres://:
// migrate first (twice: the second applies nothing), then the example
// mesh, then the reads see it.
func TestStorePostgres(t *testing.T) {
	url := meshtest.PgDatabase(t)
	dir := t.TempDir()
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status"}, exitFailed, "run mesh store migrate"},
		{[]string{"store", "migrate"}, exitOK, "applied migration 1"},
		{[]string{"store", "migrate"}, exitOK, "nothing to apply"},
		{[]string{"node", "register", "a", "b"}, exitOK, ""},
		{[]string{"node", "adopt", "a"}, exitOK, ""},
		{[]string{"node", "show", "a"}, exitOK, "a"},
		{[]string{"timeline"}, exitOK, "node a adopted"},
		{[]string{"store", "verify"}, exitFailed, "bolt store only"},
	}
	for _, st := range steps {
		args := append(append([]string{}, st.args...), "--store", url, "--data", dir)
		code, out, errOut := mesh(t, args...)
		if code != st.code || !strings.Contains(out+errOut, st.want) {
			t.Fatalf("mesh %s: exit %d (want %d), want %q in\n%s%s", strings.Join(st.args, " "), code, st.code, st.want, out, errOut)
		}
	}
}

// TestStorePasswordNotShown: a refused --store never prints its password.
func TestStorePasswordNotShown(t *testing.T) {
	for _, args := range [][]string{
		{"status", "--store", "mysql://mesh:s3cret@h/db"},
		{"status", "--store", "postgres://mesh:s3cret@127.0.0.1:1/mesh?connect_timeout=5"},
		{"status", "--store", "postgres://mesh:s3cret@h:notaport/mesh"},
	} {
		t.Run(args[2], func(t *testing.T) {
			code, out, errOut := mesh(t, append(args, "--data", t.TempDir())...)
			if code == exitOK || strings.Contains(out+errOut, "s3cret") || !strings.Contains(errOut, "mesh:xxxxx@") {
				t.Fatalf("mesh %v: exit %d, want a failure naming the URL without its password\n%s%s", args, code, out, errOut)
			}
		})
	}
}

// TestUpOnceSaysWhichStore: `mesh up --once --store postgres://…` ends by
// saying where to look with the store named (its password left out), and
// the command it prints answers.
func TestUpOnceSaysWhichStore(t *testing.T) {
	db := meshtest.PgDatabase(t)
	data := t.TempDir()
	code, out, errOut := meshtest.CLI(t, nil, "up", "--once", "--data", data, "--store", db, "--listen", "127.0.0.1:0", "--bus-listen", "127.0.0.1:0",
		"--modules", "../../examples/modules", "--mesh", "../../examples/mesh.yaml")
	if code != exitOK {
		t.Fatalf("up --once --store: exit %d\n%s%s", code, out, errOut)
	}
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	want := "go run ./cmd/mesh status --data " + data + " --store '" + u.Redacted() + "'"
	if !strings.Contains(out, want) {
		t.Fatalf("up's last lines do not say %q:\n%s", want, out)
	}
	code, out, errOut = meshtest.CLI(t, nil, "status", "--data", data, "--store", db)
	if code != exitOK || !strings.Contains(out, "novox") {
		t.Fatalf("the status it names: exit %d\n%s%s", code, out, errOut)
	}
}
