package commands_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"meshplane/commands"
	"meshplane/events"
)

const forgeFile = `module: forge
containers:
  - name: web
    image: forge:1
    env: {LOG: info, DB_PASSWORD: {secret: forge-db}}
`

func digestOf(c byte) string { return commands.SecretDigestPrefix + strings.Repeat(string(c), 64) }

// TestModuleFileSecret: a module file names a secret by {secret: NAME}, and
// plain values parse as before; anything else under it is refused.
func TestModuleFileSecret(t *testing.T) {
	_, spec, err := commands.ParseModuleFile("forge.yaml", []byte(forgeFile))
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Containers[0]
	if c.Env["LOG"] != "info" || len(c.Env) != 1 {
		t.Errorf("env = %v, want LOG=info alone", c.Env)
	}
	if got := c.Secrets["DB_PASSWORD"]; got != (events.SecretRef{Secret: "forge-db"}) {
		t.Errorf("secrets = %v, want DB_PASSWORD from forge-db", c.Secrets)
	}
	for _, bad := range []string{
		"{DB: {secret: Forge_DB}}",
		"{DB: {secret: forge-db, digest: x}}",
		"{DB: {value: x}}",
	} {
		f := strings.Replace(forgeFile, "{LOG: info, DB_PASSWORD: {secret: forge-db}}", bad, 1)
		if _, _, err := commands.ParseModuleFile("forge.yaml", []byte(f)); !errors.Is(err, commands.ErrModuleFile) {
			t.Errorf("env: %s parsed: %v", bad, err)
		}
	}
}

// TestSecretDefineComposeRotate: a module reading a secret is refused
// until the secret is set; defined, it carries the secret's digest, never a
// value; the container's spec names the secret and digest; setting the
// secret again (a rotation) and redefining changes the container's digest.
func TestSecretDefineComposeRotate(t *testing.T) {
	ctx := context.Background()
	h, _ := setup(t)
	_, spec, err := commands.ParseModuleFile("forge.yaml", []byte(forgeFile))
	if err != nil {
		t.Fatal(err)
	}
	define := commands.DefineModule{Module: "forge", Spec: spec}
	var rej *commands.Rejection
	if _, err := h.Execute(ctx, op, define); !errors.As(err, &rej) || rej.Code != commands.CodeSecretUnknown {
		t.Fatalf("define before the secret is set = %v, want %s", err, commands.CodeSecretUnknown)
	}
	set := commands.SetSecret{Name: "forge-db", Digest: digestOf('a'), Sealed: "c2VhbGVk", KeyID: "k1", By: op}
	must(t, h, set, define, commands.RegisterNode{Node: "novox"}, commands.AssignModule{Module: "forge", Node: "novox"})
	if evs, err := h.Execute(ctx, op, set); err != nil || len(evs) != 0 {
		t.Fatalf("the same value again = %v, %v; want nothing appended", evs, err)
	}
	m, err := h.Module(ctx, "forge")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Spec.Containers[0].Secrets["DB_PASSWORD"]; got != (events.SecretRef{Secret: "forge-db", Digest: digestOf('a')}) {
		t.Fatalf("module.defined holds %v, want the secret's name and digest", got)
	}
	first, err := commands.Compose(ctx, h, "novox", "c1")
	if err != nil {
		t.Fatal(err)
	}
	web, _ := first.Declaration.Resource("web")
	if s := web.Container.Secrets; len(s) != 1 || s[0].Env != "DB_PASSWORD" || s[0].Secret != "forge-db" || s[0].Digest != digestOf('a') {
		t.Fatalf("container secrets = %+v", s)
	}
	must(t, h, commands.SetSecret{Name: "forge-db", Digest: digestOf('b'), Sealed: "c2VhbGVkMg==", KeyID: "k1", By: op}, define)
	second, err := commands.Compose(ctx, h, "novox", "c2")
	if err != nil {
		t.Fatal(err)
	}
	web2, _ := second.Declaration.Resource("web")
	if web2.Digest == web.Digest {
		t.Error("a rotated secret leaves the container's digest as it was")
	}
}

func TestDecideSetSecretRefusesBadInput(t *testing.T) {
	for _, c := range []commands.SetSecret{
		{Name: "forge-db", Digest: "sha256:ab", Sealed: "x", KeyID: "k"},
		{Name: "forge-db", Digest: digestOf('a'), KeyID: "k"},
		{Name: "Forge DB", Digest: digestOf('a'), Sealed: "x", KeyID: "k"},
	} {
		var rej *commands.Rejection
		if _, err := commands.Decide(commands.State{}, c); !errors.As(err, &rej) || rej.Code != commands.CodeInvalid {
			t.Errorf("Decide(%+v) = %v, want invalid", c, err)
		}
	}
}
