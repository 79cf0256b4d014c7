package agentd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/artifacts"
	"meshplane/bus"
	"meshplane/internal/freeport"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// credsFile writes node's credentials, issued by an authority of its own
// (no bus runs), naming a bus at urls.
func credsFile(t *testing.T, node string, urls ...string) string {
	t.Helper()
	a, err := bus.LoadAuthority(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := bus.NewCreds(a.Issuer(), node, urls, nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), node+".creds")
	if err := bus.WriteCreds(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunRefusesToStart: what Run refuses before it dials the bus, each
// with an error saying why (the ones that need a controller are in
// cmd/mesh's TestDaemonRefusesToStart).
func TestRunRefusesToStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	creds := credsFile(t, "n1", "nats://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no creds", Config{Data: t.TempDir()}, "--creds and --data are required"},
		{"no data", Config{Creds: creds}, "--creds and --data are required"},
		{"no creds file", Config{Creds: filepath.Join(t.TempDir(), "none"), Data: t.TempDir()}, "no such file"},
		{"unknown runtime", Config{Creds: creds, Data: t.TempDir(), Runtime: "podman"}, `--runtime "podman": want sim or docker`},
		{"docker runtime under a relative root", Config{Creds: creds, Data: t.TempDir(), Runtime: RuntimeDocker, DockerRoot: "relative"}, "not absolute"},
		{"an artifact store address it cannot listen on", Config{Creds: creds, Data: t.TempDir(), ArtifactStore: "127.0.0.1:-1"}, "artifact store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Logger = quiet()
			err := Run(ctx, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestRunDataHeld: a second agent on a data directory held by another
// fails with ErrDataHeld before it dials the bus; once the lock is
// released the directory is free again.
func TestRunDataHeld(t *testing.T) {
	data := t.TempDir()
	unlock, err := lockData(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, LockFile)); err != nil {
		t.Errorf("the lock file: %v", err)
	}
	if _, err := lockData(data); !errors.Is(err, ErrDataHeld) || !strings.Contains(err.Error(), data) {
		t.Errorf("a second lock: %v, want ErrDataHeld naming %s", err, data)
	}
	err = Run(context.Background(), Config{Creds: credsFile(t, "n1", "nats://127.0.0.1:1"), Data: data, Logger: quiet()})
	if !errors.Is(err, ErrDataHeld) {
		t.Errorf("Run on a held directory: %v, want ErrDataHeld", err)
	}
	unlock()
	again, err := lockData(data)
	if err != nil {
		t.Fatalf("the lock after unlock: %v", err)
	}
	again()
}

// TestRunStopsWhileWaitingForTheBus: an agent whose bus does not answer
// waits for it, and returns nil when ctx ends meanwhile, its outbox made.
func TestRunStopsWhileWaitingForTheBus(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := Run(ctx, Config{Creds: credsFile(t, "n1", "nats://"+freeport.Addr(t)), Data: data, Logger: quiet()}); err != nil {
		t.Fatalf("Run, stopped waiting for the bus: %v, want nil", err)
	}
	if fi, err := os.Stat(filepath.Join(data, OutboxDir)); err != nil || !fi.IsDir() {
		t.Errorf("the outbox directory: %v", err)
	}
}

// TestServeMetrics: the agent's metrics are served at /metrics without a
// token, counting the outbox; an address that is no host:port, or one
// taken, is an error at start naming --metrics.
func TestServeMetrics(t *testing.T) {
	box, err := agent.OpenOutbox(filepath.Join(t.TempDir(), OutboxDir))
	if err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	_, stop, err := serveMetrics(addr, "n1", box, quiet())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `meshplane_agent_outbox_depth{node="n1"} 0`) {
		t.Errorf("GET /metrics: %d\n%s\nwant 200 with the outbox depth", resp.StatusCode, b)
	}
	for _, bad := range []string{"nope", addr} {
		if _, _, err := serveMetrics(bad, "n1", box, quiet()); err == nil || !strings.Contains(err.Error(), "--metrics") {
			t.Errorf("serveMetrics(%s): %v, want an error naming --metrics", bad, err)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Errorf("the metrics still answer after stop")
	}
}

// TestImports: the agent's assembly links no CLI (cmd/, cobra), and the
// agent's own packages do not import it back.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "meshplane/agent/agentd").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "meshplane/cmd/") || strings.Contains(dep, "cobra") || strings.Contains(dep, "pflag") {
			t.Errorf("agentd links %s: it must not import the CLI", dep)
		}
	}
	out, err = exec.Command("go", "list", "-deps", "meshplane/agent", "meshplane/agent/docker", "meshplane/agent/simruntime").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "meshplane/agent/agentd" {
			t.Errorf("the agent's packages link %s: it is their assembly, never their import", dep)
		}
	}
}

// TestServeArtifactStore: the agent's artifact store listens before the
// agent goes on (a taken address is an error at start, naming it), serves
// the registry API, and stops when told.
func TestServeArtifactStore(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := freeport.Addr(t)
	dir := filepath.Join(t.TempDir(), ArtifactsDir)
	stop, err := serveArtifactStore(ctx, addr, dir, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := artifacts.Ready(ctx, addr); err != nil {
		t.Errorf("the store does not answer: %v", err)
	}
	if _, err := serveArtifactStore(ctx, addr, t.TempDir(), log); err == nil || !strings.Contains(err.Error(), "artifact store") || !strings.Contains(err.Error(), addr) {
		t.Errorf("a second store on %s: %v, want an error naming the artifact store and the address", addr, err)
	}
	stop()
	if _, err := os.Stat(filepath.Join(dir, "blobs")); err != nil {
		t.Errorf("the store's files: %v", err)
	}
	gone, cancelGone := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelGone()
	if err := artifacts.Ready(gone, addr); err == nil {
		t.Errorf("the store still answers after stop")
	}
}
