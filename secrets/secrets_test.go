package secrets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/secrets"
)

func TestSealOpenDigest(t *testing.T) {
	k, err := secrets.NewKey(make([]byte, secrets.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := secrets.NewKey([]byte(strings.Repeat("k", secrets.KeySize)))
	sealed, err := k.Seal("forge-db", []byte("hunter2"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "hunter2") {
		t.Fatalf("sealed %q holds the value", sealed)
	}
	cases := []struct {
		name, secret, keyID, sealed string
		want                        error
	}{
		{"opens", "forge-db", k.ID(), sealed, nil},
		{"another secret's stream", "other-db", k.ID(), sealed, secrets.ErrSealed},
		{"another key", "forge-db", other.ID(), sealed, secrets.ErrWrongKey},
		{"damaged", "forge-db", k.ID(), "AAAA" + sealed[4:], secrets.ErrSealed},
		{"not base64", "forge-db", k.ID(), "!!", secrets.ErrSealed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := k.Open(c.secret, c.keyID, c.sealed)
			if !errors.Is(err, c.want) {
				t.Fatalf("Open = %q, %v; want %v", v, err, c.want)
			}
			if c.want == nil && string(v) != "hunter2" {
				t.Fatalf("Open = %q, want hunter2", v)
			}
		})
	}
	d := k.Digest("forge-db", []byte("hunter2"))
	if !strings.HasPrefix(d, secrets.DigestPrefix) || len(d) != len(secrets.DigestPrefix)+64 {
		t.Errorf("Digest = %q", d)
	}
	if d == other.Digest("forge-db", []byte("hunter2")) {
		t.Error("the digest does not depend on the key: a password could be tried against it")
	}
	if d == k.Digest("other-db", []byte("hunter2")) || d == k.Digest("forge-db", []byte("hunter3")) {
		t.Error("the digest does not depend on the name and the value")
	}
}

func TestKeyFile(t *testing.T) {
	t.Setenv(secrets.KeyEnv, "")
	dir := t.TempDir()
	if _, err := secrets.LoadKey(dir); !errors.Is(err, secrets.ErrNoKey) {
		t.Fatalf("LoadKey of an empty directory = %v, want ErrNoKey", err)
	}
	k, err := secrets.LoadOrMakeKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, secrets.KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", fi, err)
	}
	again, err := secrets.LoadOrMakeKey(dir)
	if err != nil || again.ID() != k.ID() {
		t.Fatalf("second LoadOrMakeKey = %v, %v; want the same key %s", again, err, k.ID())
	}
	t.Setenv(secrets.KeyEnv, filepath.Join(dir, secrets.KeyFile))
	if via, err := secrets.LoadKey(t.TempDir()); err != nil || via.ID() != k.ID() {
		t.Fatalf("LoadKey through %s = %v, %v", secrets.KeyEnv, via, err)
	}
}
