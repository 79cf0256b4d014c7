package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"meshplane/bus"
	"meshplane/controllerd"
	"meshplane/internal/meshtest"
)

// busCheckVaries is what changes from run to run in mesh bus check's
// output: the server's version and its consumer counts.
var busCheckVaries = regexp.MustCompile(`\d+\.\d+\.\d+ \(at least`)

// TestBusCheck: mesh bus check on a running controller's embedded bus says
// ok for every check, a line each, and exits 0 (golden file); the bucket's
// stream stripped of its RePublish (as an older build made it), the check
// says FAIL on that line and exits 1.
func TestBusCheck(t *testing.T) {
	dir := t.TempDir()
	d := meshtest.StartDaemon(t, dir, "")
	code, out, errOut := mesh(t, "bus", "check", "--data", dir, "--nats", strings.Join(d.Ready.BusURLs, ","))
	if code != exitOK {
		t.Fatalf("mesh bus check: exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "bus-check", busCheckVaries.ReplaceAllString(out, "VERSION (at least"), dir)

	auth, err := bus.OpenAuthority(filepath.Join(dir, controllerd.BusDir))
	if err != nil {
		t.Fatal(err)
	}
	u, err := auth.Issuer().Controller()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(strings.Join(d.Ready.BusURLs, ","), nats.UserJWTAndSeed(u.JWT, u.Seed))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, bus.DeclarationsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.RePublish = nil
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	code, out, _ = mesh(t, "bus", "check", "--data", dir, "--nats", strings.Join(d.Ready.BusURLs, ","))
	if code != exitFailed || !strings.Contains(out, "FAIL  stream KV_mesh-declarations: republish none, want $KV.mesh-declarations.> to mesh.decl.>") {
		t.Fatalf("mesh bus check on a bucket without RePublish: exit %d\n%s", code, out)
	}
}
