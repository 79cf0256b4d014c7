package install

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"meshplane/agent/agentd"
	"meshplane/host/join"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeSystemctl records every systemctl call, as one string each.
type fakeSystemctl struct {
	calls []string
	fail  string // a call that fails
}

func (f *fakeSystemctl) Systemctl(_ context.Context, args ...string) error {
	c := strings.Join(args, " ")
	f.calls = append(f.calls, c)
	if c == f.fail {
		return errors.New("systemctl " + c + ": exit status 1")
	}
	return nil
}

// fakeJoin joins as node n1 as join.Join would: it writes DATA/node.creds,
// and finds a directory that has one joined already.
type fakeJoin struct{ calls, sent int }

func (f *fakeJoin) join(_ context.Context, o join.Options) (join.Result, error) {
	f.calls++
	creds := filepath.Join(o.Data, join.CredsFile)
	if _, err := os.Stat(creds); err == nil {
		return join.Result{Node: "n1", Creds: creds, Already: true}, nil
	}
	if o.Token != "MJ1good" {
		return join.Result{}, errors.New("join: the token is spent")
	}
	f.sent++
	if err := os.MkdirAll(o.Data, 0o700); err != nil {
		return join.Result{}, err
	}
	if err := os.WriteFile(creds, []byte("creds of n1\n"), 0o600); err != nil {
		return join.Result{}, err
	}
	return join.Result{Node: "n1", Creds: creds}, nil
}

type testHost struct {
	Host
	sc   *fakeSystemctl
	j    *fakeJoin
	out  *bytes.Buffer
	data string
}

// newHost is a host under a temporary root, with systemd when systemd.
func newHost(t *testing.T, systemd bool) testHost {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, UnitDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if systemd {
		if err := os.MkdirAll(filepath.Join(root, RunDir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := testHost{sc: &fakeSystemctl{}, j: &fakeJoin{}, out: &bytes.Buffer{}, data: filepath.Join(t.TempDir(), "mesh-agent")}
	h.Host = Host{Root: root, Systemctl: h.sc, Join: h.j.join, Out: h.out}
	return h
}

func (h testHost) config(runtime string) Config {
	return Config{Join: join.Options{URL: "https://ctl:7480", Token: "MJ1good", Data: h.data}, Binary: "/usr/local/bin/mesh", Runtime: runtime}
}

func (h testHost) unit(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.Root, UnitDir, UnitFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// calls returns the systemctl calls since the last and forgets them.
func (h testHost) calls() []string {
	c := h.sc.calls
	h.sc.calls = nil
	return c
}

// TestUnit: the unit install writes, as the golden file has it.
func TestUnit(t *testing.T) {
	for _, tc := range []struct{ golden, runtime string }{
		{"mesh-agent.service", "docker"},
		{"mesh-agent-sim.service", "sim"},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			got, err := Unit(Config{Join: join.Options{Data: DefaultData}, Binary: "/usr/local/bin/mesh", Runtime: tc.runtime}, "n1")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./host/install -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the unit differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// TestExecLine: ExecStart quotes what systemd would split or expand, and
// unitData reads the data directory back.
func TestExecLine(t *testing.T) {
	for _, tc := range []struct {
		bin, data, want string
	}{
		{"/usr/local/bin/mesh", "/var/lib/mesh-agent", "/usr/local/bin/mesh agent --data /var/lib/mesh-agent --runtime docker"},
		{"/opt/my mesh/mesh", "/srv/a b", `"/opt/my mesh/mesh" agent --data "/srv/a b" --runtime docker`},
		{"/opt/mesh", `/srv/"q"\x`, `/opt/mesh agent --data "/srv/\"q\"\\x" --runtime docker`},
		{"/opt/mesh", "/srv/100%$HOME", "/opt/mesh agent --data /srv/100%%$$HOME --runtime docker"},
		{"/opt/mesh", "/srv/x;y", `/opt/mesh agent --data "/srv/x;y" --runtime docker`},
	} {
		c := Config{Join: join.Options{Data: tc.data}, Binary: tc.bin}
		if got := execLine(Command(c)); got != tc.want {
			t.Errorf("%q %q: ExecStart=%s, want %s", tc.bin, tc.data, got, tc.want)
		}
		u, err := Unit(c, "n1")
		if err != nil {
			t.Fatal(err)
		}
		if got := unitData(u); got != tc.data {
			t.Errorf("the unit's data directory reads back as %q, want %q", got, tc.data)
		}
		if got := splitExec(execLine(Command(c))); !slices.Equal(got, Command(c)) {
			t.Errorf("ExecStart splits as %q, want %q", got, Command(c))
		}
	}
}

func TestShellQuote(t *testing.T) {
	got := ShellQuote([]string{"/usr/local/bin/mesh", "agent", "--data", "/srv/it's here", ""})
	if want := `/usr/local/bin/mesh agent --data '/srv/it'\''s here' ''`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestInstallTwice: the first install joins, writes the unit and starts
// it; the second writes nothing, spends no token and restarts nothing; a
// changed unit is rewritten and restarts the service, as do new
// credentials.
func TestInstallTwice(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, true)
	res, err := h.Install(ctx, h.config("docker"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Systemd || !res.Wrote || res.Restarted || res.Join.Already || res.Join.Node != "n1" {
		t.Errorf("first install: %+v; want a unit written, joined as n1, not restarted", res)
	}
	if got, want := h.calls(), []string{"daemon-reload", "enable --now mesh-agent"}; !slices.Equal(got, want) {
		t.Errorf("first install ran systemctl %q, want %q", got, want)
	}
	want, err := Unit(h.config("docker"), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.unit(t); got != want {
		t.Errorf("unit written:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(want, "ExecStart=/usr/local/bin/mesh agent --data "+h.data+" --runtime docker\n") {
		t.Errorf("the unit runs something else:\n%s", want)
	}
	unitPath := filepath.Join(h.Root, UnitDir, UnitFile)
	if fi, err := os.Stat(unitPath); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("unit: %v, %v; want mode 0644", fi, err)
	}
	before, _ := os.Stat(unitPath)
	creds, _ := os.ReadFile(filepath.Join(h.data, join.CredsFile))

	// Twice: nothing written, nothing restarted, no token spent (a spent
	// token would fail the join).
	c := h.config("docker")
	c.Join.Token = "MJ1spent"
	h.out.Reset()
	res, err = h.Install(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Wrote || res.Restarted || !res.Join.Already {
		t.Errorf("second install: %+v; want nothing written nor restarted, joined already", res)
	}
	if got, want := h.calls(), []string{"enable --now mesh-agent"}; !slices.Equal(got, want) {
		t.Errorf("second install ran systemctl %q, want %q", got, want)
	}
	after, _ := os.Stat(unitPath)
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Errorf("second install replaced the unit file")
	}
	if again, _ := os.ReadFile(filepath.Join(h.data, join.CredsFile)); !bytes.Equal(again, creds) || h.j.sent != 1 {
		t.Errorf("second install: credentials %q (were %q), %d joins sent; want them kept, 1 sent", again, creds, h.j.sent)
	}
	if !strings.Contains(h.out.String(), "is joined already as node n1: its credentials are kept") ||
		!strings.Contains(h.out.String(), "unchanged: not rewritten") {
		t.Errorf("second install said:\n%s", h.out)
	}

	// A changed unit (another runtime): rewritten, reloaded, restarted.
	res, err = h.Install(ctx, h.config("sim"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Wrote || !res.Restarted {
		t.Errorf("install with another runtime: %+v; want the unit rewritten and the service restarted", res)
	}
	if got, want := h.calls(), []string{"daemon-reload", "enable mesh-agent", "restart mesh-agent"}; !slices.Equal(got, want) {
		t.Errorf("changed unit: systemctl %q, want %q", got, want)
	}
	if !strings.Contains(h.unit(t), "--runtime sim") || strings.Contains(h.unit(t), "docker.service") {
		t.Errorf("rewritten unit:\n%s", h.unit(t))
	}

	// New credentials (joined again after node.creds was removed), the
	// unit as it was: restarted, so that the agent reads them.
	if err := os.Remove(filepath.Join(h.data, join.CredsFile)); err != nil {
		t.Fatal(err)
	}
	res, err = h.Install(ctx, h.config("sim"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Wrote || !res.Restarted || res.Join.Already {
		t.Errorf("install after a new join: %+v; want the unit kept, the service restarted", res)
	}
	if got, want := h.calls(), []string{"enable mesh-agent", "restart mesh-agent"}; !slices.Equal(got, want) {
		t.Errorf("new credentials: systemctl %q, want %q", got, want)
	}
}

// TestInstallNoSystemd: without systemd the join is done, no unit is
// written, nothing is run, and the command line to run instead is said.
func TestInstallNoSystemd(t *testing.T) {
	h := newHost(t, false)
	res, err := h.Install(context.Background(), h.config(""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Systemd || res.Wrote || res.Unit != "" || res.Join.Node != "n1" {
		t.Errorf("result %+v; want no systemd, no unit, joined as n1", res)
	}
	if c := h.calls(); len(c) != 0 {
		t.Errorf("systemctl %q run without systemd", c)
	}
	if _, err := os.Stat(filepath.Join(h.Root, UnitDir, UnitFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a unit was written without systemd: %v", err)
	}
	got := strings.NewReplacer(h.Root, "ROOT", h.data, "DATA").Replace(h.out.String())
	want := `joined as node n1: credentials in DATA/node.creds
no systemd on this host (ROOT/run/systemd/system is missing): no service installed; run the agent with
  /usr/local/bin/mesh agent --data DATA --runtime docker
`
	if got != want {
		t.Errorf("install said:\n%s\nwant:\n%s", got, want)
	}
	if want := []string{"/usr/local/bin/mesh", "agent", "--data", h.data, "--runtime", "docker"}; !slices.Equal(res.Command, want) {
		t.Errorf("command %q, want %q", res.Command, want)
	}
}

// TestInstallRefused: bad configurations, and a unit directory that
// cannot be written, fail before the join: no token is spent.
func TestInstallRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(h testHost, c *Config)
		want   string
		is     error
	}{
		{"relative binary", func(_ testHost, c *Config) { c.Binary = "mesh" }, "not an absolute path", nil},
		{"relative data", func(_ testHost, c *Config) { c.Join.Data = "mesh-agent" }, "not an absolute path", nil},
		{"runtime", func(_ testHost, c *Config) { c.Runtime = "podman" }, `runtime "podman": want docker or sim`, nil},
		{"control character", func(_ testHost, c *Config) { c.Join.Data += "\n" }, "control character", nil},
		{"no unit directory", func(h testHost, _ *Config) { os.RemoveAll(filepath.Join(h.Root, UnitDir)) }, "", ErrUnitDir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, true)
			c := h.config("docker")
			tc.change(h, &c)
			_, err := h.Install(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v; want one saying %q (%v)", err, tc.want, tc.is)
			}
			if h.j.calls != 0 || len(h.sc.calls) != 0 {
				t.Errorf("%d joins, systemctl %q: want nothing done", h.j.calls, h.sc.calls)
			}
		})
	}
}

// TestInstallSystemctlFails: a failed systemctl is install's error.
func TestInstallSystemctlFails(t *testing.T) {
	h := newHost(t, true)
	h.sc.fail = "enable --now mesh-agent"
	_, err := h.Install(context.Background(), h.config("docker"))
	if err == nil || !strings.Contains(err.Error(), "install: systemctl enable --now mesh-agent") {
		t.Errorf("error %v; want systemctl's", err)
	}
}

// TestUninstall: the service stopped, disabled and removed, systemd
// reloaded; the data kept, or removed with Purge.
func TestUninstall(t *testing.T) {
	for _, purge := range []bool{false, true} {
		t.Run(map[bool]string{false: "keep", true: "purge"}[purge], func(t *testing.T) {
			ctx := context.Background()
			h := newHost(t, true)
			if _, err := h.Install(ctx, h.config("docker")); err != nil {
				t.Fatal(err)
			}
			h.calls()
			h.out.Reset()
			// Data "" is the unit's: h.data, not DefaultData.
			res, err := h.Uninstall(ctx, UninstallConfig{Purge: purge})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := h.calls(), []string{"stop mesh-agent", "disable mesh-agent", "daemon-reload"}; !slices.Equal(got, want) {
				t.Errorf("systemctl %q, want %q", got, want)
			}
			if _, err := os.Stat(filepath.Join(h.Root, UnitDir, UnitFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the unit is still there: %v", err)
			}
			_, err = os.Stat(filepath.Join(h.data, join.CredsFile))
			if purge && !errors.Is(err, os.ErrNotExist) || !purge && err != nil {
				t.Errorf("purge %v: the credentials: %v", purge, err)
			}
			if res.Data != h.data || res.Purged != purge || res.Unit == "" {
				t.Errorf("result %+v; want data %s, purged %v", res, h.data, purge)
			}
			word := "kept " + h.data
			if purge {
				word = "removed " + h.data
			}
			if !strings.Contains(h.out.String(), word) {
				t.Errorf("uninstall said:\n%s\nwant %q in it", h.out, word)
			}

			// Twice: no unit, nothing run.
			if _, err := h.Uninstall(ctx, UninstallConfig{Purge: purge}); err != nil {
				t.Fatal(err)
			}
			if c := h.calls(); len(c) != 0 {
				t.Errorf("second uninstall ran systemctl %q", c)
			}
		})
	}
}

// TestUninstallNoSystemd: the unit file is removed, nothing is run.
func TestUninstallNoSystemd(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, false)
	if err := os.WriteFile(filepath.Join(h.Root, UnitDir, UnitFile), []byte("[Service]\nExecStart=/m agent --data "+h.data+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := h.Uninstall(ctx, UninstallConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if c := h.calls(); len(c) != 0 || res.Systemd || res.Unit == "" {
		t.Errorf("systemctl %q, result %+v; want the unit removed, nothing run", c, res)
	}
	if !strings.Contains(h.out.String(), "no systemd on this host") {
		t.Errorf("uninstall said:\n%s", h.out)
	}
}

// TestPurgeRefused: Purge removes only a stopped agent's data directory.
func TestPurgeRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"not an agent's", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"an agent runs on it", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, agentd.LockFile), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, true)
			dir := t.TempDir()
			tc.setup(t, dir)
			_, err := h.Uninstall(context.Background(), UninstallConfig{Data: dir, Purge: true})
			if !errors.Is(err, ErrNotAgentData) {
				t.Errorf("error %v; want ErrNotAgentData", err)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("the directory was removed: %v", err)
			}
		})
	}
}

// TestTemporaryAndDataDir: a binary of go run's is temporary, one
// installed is not; --data is made absolute, and none is DefaultData.
func TestTemporaryAndDataDir(t *testing.T) {
	for bin, want := range map[string]bool{
		os.TempDir() + "/go-build123/b001/exe/mesh": true, "/home/u/.cache/go-build/ab/mesh": true, "/usr/local/bin/mesh": false,
	} {
		if got := Temporary(bin); got != want {
			t.Errorf("Temporary(%s) = %v, want %v", bin, got, want)
		}
	}
	if d, err := DataDir("", false); err != nil || d != DefaultData {
		t.Errorf("DataDir none: %q, %v", d, err)
	}
	if d, err := DataDir("rel/data", true); err != nil || !filepath.IsAbs(d) || !strings.HasSuffix(d, "/rel/data") {
		t.Errorf("DataDir rel/data: %q, %v", d, err)
	}
}
