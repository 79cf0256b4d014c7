package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/internal/hosttest"
	"meshplane/internal/meshtest"
	"meshplane/internal/testwait"
)

// addHostLines are the commands of the README's "Add a host" section, in
// order: the first shell block under that heading, each line's comment
// cut.
func addHostLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n### Add a host\n")
	if !ok {
		t.Fatal(`README.md has no "### Add a host" section`)
	}
	if i := strings.Index(sec, "\n#"); i >= 0 {
		sec = sec[:i] // up to the next heading
	}
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatal(`README.md's "Add a host" has no sh block`)
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if c, _, _ := strings.Cut(l, " # "); strings.TrimSpace(c) != "" {
			lines = append(lines, strings.TrimSpace(c))
		}
	}
	return lines
}

// onHost runs a shell line on host h as the README's operator would, in
// dir: "mesh" and "sudo" on the PATH (the test's binary, and a sudo that
// runs its arguments: the test is root already), and a mount namespace of
// its own in which /var/lib is lib (the agent's data, /var/lib/mesh-agent,
// is the host's own, not the machine's) and no systemd runs (/run/systemd
// an empty tmpfs, were it there), as on a host without systemd.
func onHost(ctx context.Context, h *hosttest.Host, dir, lib, bin, line string) *exec.Cmd {
	script := `set -e
mount --bind "$LIB" /var/lib
if [ -d /run/systemd ]; then mount -t tmpfs none /run/systemd; fi
cd "$DIR"
exec sh -c "$LINE"`
	cmd := h.Command(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "LIB="+lib, "DIR="+dir, "LINE="+line, "PATH="+bin+":"+os.Getenv("PATH"),
		"MESH_SERVER=", "MESH_TOKEN=", "MESH_DATA=")
	return cmd
}

// TestReadmeAddHost: the README's "Add a host" works as written, on a
// second network namespace: its three lines are read from README.md and
// only the placeholders the README names are put in (the node's name,
// the controller's URL, the token file, the join token, and --tls-ca for
// the controller's private CA on the first and last). The first line runs
// on the controller's host (the operator's machine), the second on host 1,
// where there is no systemd: install joins, says so and prints the
// command line to run, which the test then runs there, as the README tells
// the operator (the agent's default runtime, docker, against the machine's
// engine, reached through its Unix socket from inside the namespace).
// After a push the last line shows the node joined and its first report
// recorded.
func TestReadmeAddHost(t *testing.T) {
	lines := addHostLines(t)
	if len(lines) != 3 {
		t.Fatalf("the README's Add a host has %d command lines, want 3: %q", len(lines), lines)
	}
	meshtest.NeedEngine(t)
	m := startHostsMesh(t, 1)
	host := m.net.Host(1)

	bin := t.TempDir()
	if err := os.Symlink(meshtest.Binary(t), filepath.Join(bin, "mesh")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir() // the operator's directory, holding api-token
	if err := os.WriteFile(filepath.Join(work, "api-token"), []byte(m.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	node := "readme-" + hex.EncodeToString(rnd[:]) // not n1: the engine is the machine's
	put := func(l string, privateCA bool) string {
		l = strings.ReplaceAll(l, "https://ctl.example:7480", m.url)
		l = strings.ReplaceAll(l, " n1 ", " "+node+" ")
		if privateCA {
			l += " --tls-ca " + m.caFile
		}
		return l
	}
	lib := t.TempDir() // host 1's /var/lib
	run := func(h *hosttest.Host, line string) (stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := onHost(ctx, h, work, lib, bin, line)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		t.Logf("on %s: %s", h, line)
		if err := cmd.Run(); err != nil {
			t.Fatalf("on %s: %s: %v\n%s%s", h, line, err, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}

	token, _ := run(m.ctl, put(lines[0], true))
	token = strings.TrimSpace(token)
	if !strings.HasPrefix(token, "MJ1.") {
		t.Fatalf("the README's first line printed %q, not a join token", token)
	}
	if !strings.Contains(lines[1], "MJ1.…") {
		t.Fatalf("the README's second line %q names no MJ1.… token", lines[1])
	}
	started := time.Now()
	out, errOut := run(host, strings.ReplaceAll(put(lines[1], false), "MJ1.…", token))
	out += errOut
	_, after, ok := strings.Cut(out, "run the agent with\n")
	if !ok {
		t.Fatalf("install on a host without systemd does not say what to run:\n%s", out)
	}
	agentLine := strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
	if !strings.Contains(agentLine, " agent ") || !strings.Contains(agentLine, "/var/lib/mesh-agent") {
		t.Fatalf("install printed %q as the agent's command line", agentLine)
	}
	if _, err := os.Stat(filepath.Join(lib, "mesh-agent", "node.creds")); err != nil {
		t.Fatalf("install left no credentials in the host's /var/lib/mesh-agent: %v", err)
	}
	t.Logf("install printed: %s", agentLine)

	// The printed line, run on the host as the README says.
	cmd := onHost(context.Background(), host, work, lib, bin, agentLine)
	var agentOut meshtest.LockedBuffer
	cmd.Stdout, cmd.Stderr = &agentOut, &agentOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the agent:\n%s", agentOut.String())
		}
	})

	m.mustCLI(t, m.ctl, "push", node)
	testwait.Eventually(t, 60*time.Second, func() error {
		select {
		case <-done:
			t.Fatalf("the agent exited:\n%s", agentOut.String())
		default:
		}
		if st := m.status(t, m.ctl, node); st.Applied == nil {
			return errors.New(node + ": no report recorded yet")
		}
		return nil
	})
	t.Logf("the README's install to the first report recorded: %.2f s", time.Since(started).Seconds())
	show, _ := run(m.ctl, put(lines[2], true))
	for _, want := range []string{"applied  " + node + "/1 at", "used at", "from " + host.Addr().String() + ":", "  active"} {
		if !strings.Contains(show, want) {
			t.Errorf("the README's last line does not show %q:\n%s", want, show)
		}
	}
	if !strings.Contains(agentOut.String(), "runtime docker") {
		t.Errorf("the agent does not run the docker runtime, the README's default:\n%s", agentOut.String())
	}
}
