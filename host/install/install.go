package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"

	"golang.org/x/sys/unix"

	"meshplane/agent/agentd"
	"meshplane/host/join"
	"meshplane/internal/atomicfile"
)

// Where systemd keeps things, and the service's names.
const (
	// UnitDir is where install writes the unit (the administrator's units).
	UnitDir = "/etc/systemd/system"
	// RunDir exists while systemd runs the host (sd_booted(3)).
	RunDir = "/run/systemd/system"
	// Service is the unit's name without its suffix, as systemctl takes it.
	Service = "mesh-agent"
	// UnitFile is the unit's file name in UnitDir.
	UnitFile = Service + ".service"
	// DefaultData is the agent's data directory unless told otherwise.
	DefaultData = "/var/lib/mesh-agent"
)

// Runtimes install accepts (agentd.RuntimeDocker, agentd.RuntimeSim).
var runtimes = []string{agentd.RuntimeDocker, agentd.RuntimeSim}

// ErrUnitDir means the unit directory cannot be written (install runs
// without root): nothing was done, no token spent.
var ErrUnitDir = errors.New("cannot write the systemd unit directory (run as root)")

// ErrNotAgentData means Uninstall was asked to purge a directory that is
// not an agent's data directory, or one an agent runs on: nothing was
// removed.
var ErrNotAgentData = errors.New("not a stopped agent's data directory")

// Systemctl runs systemctl with args.
type Systemctl interface {
	Systemctl(ctx context.Context, args ...string) error
}

// Exec is the systemctl command on PATH; its error carries the command's
// output.
type Exec struct{}

// Systemctl implements Systemctl.
func (Exec) Systemctl(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Host is the machine an agent is installed on. The zero value is this
// machine, its systemd run with the systemctl command, and join.Join.
type Host struct {
	// Root, when set, is put before UnitDir and RunDir (tests); the data
	// directory and the binary are never under it.
	Root string
	// Systemctl runs systemctl; nil is Exec.
	Systemctl Systemctl
	// Join joins a data directory; nil is join.Join.
	Join func(context.Context, join.Options) (join.Result, error)
	// Out is told what is done, a line a step; nil discards it.
	Out io.Writer
}

// Config is one install.
type Config struct {
	// Join is the join to do (or find done): Data must be absolute.
	Join join.Options
	// Binary is the absolute path of the mesh binary the unit runs
	// (os.Executable).
	Binary string
	// Runtime is the agent's --runtime: docker (the default) or sim.
	Runtime string
}

// Result is what Install did.
type Result struct {
	Join join.Result
	// Systemd is false where systemd does not run: no unit was written and
	// nothing started; run Command by other means.
	Systemd bool
	// Unit is the unit's path (under Host.Root); "" without systemd.
	Unit string
	// Wrote is set when the unit was new or changed, and written.
	Wrote bool
	// Restarted is set when a running service was restarted (the unit
	// changed, or the node joined anew).
	Restarted bool
	// Command is the agent's command line, the unit's ExecStart.
	Command []string
}

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

func (h Host) out() io.Writer {
	if h.Out == nil {
		return io.Discard
	}
	return h.Out
}

func (h Host) systemctl(ctx context.Context, args ...string) error {
	s := h.Systemctl
	if s == nil {
		s = Exec{}
	}
	fmt.Fprintf(h.out(), "systemctl %s\n", strings.Join(args, " "))
	return s.Systemctl(ctx, args...)
}

// Systemd reports whether systemd runs the host (RunDir is a directory).
func (h Host) Systemd() bool {
	fi, err := os.Stat(h.path(RunDir))
	return err == nil && fi.IsDir()
}

// Command is the agent's command line for c: the binary, then `agent
// --data DIR --runtime R`.
func Command(c Config) []string {
	rt := c.Runtime
	if rt == "" {
		rt = agentd.RuntimeDocker
	}
	return []string{c.Binary, "agent", "--data", c.Join.Data, "--runtime", rt}
}

func (c Config) check() error {
	if !filepath.IsAbs(c.Binary) {
		return fmt.Errorf("install: the mesh binary %q is not an absolute path", c.Binary)
	}
	if !filepath.IsAbs(c.Join.Data) {
		return fmt.Errorf("install: the data directory %q is not an absolute path", c.Join.Data)
	}
	for _, p := range []string{c.Binary, c.Join.Data} {
		if strings.ContainsFunc(p, unicode.IsControl) {
			return fmt.Errorf("install: %q: a control character in a path", p)
		}
	}
	if c.Runtime != "" && c.Runtime != agentd.RuntimeDocker && c.Runtime != agentd.RuntimeSim {
		return fmt.Errorf("install: runtime %q: want %s", c.Runtime, strings.Join(runtimes, " or "))
	}
	return nil
}

// Install joins and installs the agent as a systemd service (see the
// package comment).
func (h Host) Install(ctx context.Context, c Config) (Result, error) {
	if err := c.check(); err != nil {
		return Result{}, err
	}
	res := Result{Systemd: h.Systemd(), Command: Command(c)}
	unitPath := h.path(filepath.Join(UnitDir, UnitFile))
	if res.Systemd {
		if err := unix.Access(filepath.Dir(unitPath), unix.W_OK); err != nil {
			return Result{}, fmt.Errorf("install: %s: %w: %w", filepath.Dir(unitPath), ErrUnitDir, err)
		}
	}
	joinFn := h.Join
	if joinFn == nil {
		joinFn = join.Join
	}
	jr, err := joinFn(ctx, c.Join)
	if err != nil {
		return Result{}, err
	}
	res.Join = jr
	if jr.Already {
		fmt.Fprintf(h.out(), "%s is joined already as node %s: its credentials are kept\n", c.Join.Data, jr.Node)
	} else {
		fmt.Fprintf(h.out(), "joined as node %s: credentials in %s\n", jr.Node, jr.Creds)
	}
	if !res.Systemd {
		fmt.Fprintf(h.out(), "no systemd on this host (%s is missing): no service installed; run the agent with\n  %s\n",
			h.path(RunDir), ShellQuote(res.Command))
		return res, nil
	}
	text, err := Unit(c, jr.Node)
	if err != nil {
		return Result{}, err
	}
	res.Unit = unitPath
	old, err := os.ReadFile(unitPath)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("install: %w", err)
	}
	if !existed || string(old) != text {
		if err := atomicfile.WriteFile(unitPath, []byte(text), 0o644); err != nil {
			return Result{}, fmt.Errorf("install: %w", err)
		}
		res.Wrote = true
		if existed {
			fmt.Fprintf(h.out(), "rewrote %s (it had changed)\n", unitPath)
		} else {
			fmt.Fprintf(h.out(), "wrote %s\n", unitPath)
		}
		if err := h.systemctl(ctx, "daemon-reload"); err != nil {
			return res, fmt.Errorf("install: %w", err)
		}
	} else {
		fmt.Fprintf(h.out(), "%s unchanged: not rewritten\n", unitPath)
	}
	if existed && (res.Wrote || !jr.Already) {
		if err := h.systemctl(ctx, "enable", Service); err != nil {
			return res, fmt.Errorf("install: %w", err)
		}
		if err := h.systemctl(ctx, "restart", Service); err != nil {
			return res, fmt.Errorf("install: %w", err)
		}
		res.Restarted = true
	} else if err := h.systemctl(ctx, "enable", "--now", Service); err != nil {
		return res, fmt.Errorf("install: %w", err)
	}
	fmt.Fprintf(h.out(), "the agent runs as %s: systemctl status %s; journalctl -u %s\n", Service, Service, Service)
	return res, nil
}

// UninstallConfig is one uninstall.
type UninstallConfig struct {
	// Data is the agent's data directory, for Purge; "" is the one the
	// installed unit names, else DefaultData.
	Data string
	// Purge removes the data directory too (the node's credentials and
	// outbox). Without it the directory is kept.
	Purge bool
}

// UninstallResult is what Uninstall did.
type UninstallResult struct {
	Systemd bool   // systemd runs the host
	Unit    string // the unit's path, if one was removed
	Data    string // the data directory
	Purged  bool   // it was removed
}

// Uninstall stops, disables and removes the service, and removes its data
// directory if c.Purge (see the package comment). With no unit installed
// it removes nothing but, with Purge, the data directory.
func (h Host) Uninstall(ctx context.Context, c UninstallConfig) (UninstallResult, error) {
	res := UninstallResult{Systemd: h.Systemd(), Data: c.Data}
	unitPath := h.path(filepath.Join(UnitDir, UnitFile))
	text, err := os.ReadFile(unitPath)
	installed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("uninstall: %w", err)
	}
	if res.Data == "" {
		res.Data = DefaultData
		if d := unitData(string(text)); installed && d != "" {
			res.Data = d
		}
	}
	if c.Purge && !filepath.IsAbs(res.Data) {
		return res, fmt.Errorf("uninstall: the data directory %q is not an absolute path", res.Data)
	}
	switch {
	case !installed:
		fmt.Fprintf(h.out(), "no unit at %s: no service to remove\n", unitPath)
	case res.Systemd:
		if err := h.systemctl(ctx, "stop", Service); err != nil {
			return res, fmt.Errorf("uninstall: %w", err)
		}
		if err := h.systemctl(ctx, "disable", Service); err != nil {
			return res, fmt.Errorf("uninstall: %w", err)
		}
		fallthrough
	default:
		if err := os.Remove(unitPath); err != nil {
			return res, fmt.Errorf("uninstall: %w", err)
		}
		res.Unit = unitPath
		fmt.Fprintf(h.out(), "removed %s\n", unitPath)
		if !res.Systemd {
			fmt.Fprintf(h.out(), "no systemd on this host (%s is missing): stop the agent yourself if it runs\n", h.path(RunDir))
		} else if err := h.systemctl(ctx, "daemon-reload"); err != nil {
			return res, fmt.Errorf("uninstall: %w", err)
		}
	}
	if !c.Purge {
		if _, err := os.Stat(res.Data); err == nil {
			fmt.Fprintf(h.out(), "kept %s (the node's credentials and outbox): --purge removes it\n", res.Data)
		}
		return res, nil
	}
	if _, err := os.Lstat(res.Data); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(h.out(), "no %s: nothing to purge\n", res.Data)
		return res, nil
	}
	if err := checkAgentData(res.Data); err != nil {
		return res, fmt.Errorf("uninstall: purge %s: %w", res.Data, err)
	}
	if err := os.RemoveAll(res.Data); err != nil {
		return res, fmt.Errorf("uninstall: purge: %w", err)
	}
	res.Purged = true
	fmt.Fprintf(h.out(), "removed %s; the node's bus user still works until 'mesh node revoke NODE'\n", res.Data)
	return res, nil
}

// checkAgentData refuses dir unless it is a directory (not a link) that
// holds an agent's files and no agent holds its lock.
func checkAgentData(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: not a directory", ErrNotAgentData)
	}
	found := false
	for _, name := range []string{join.CredsFile, agentd.LockFile, agentd.OutboxDir} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%w: it holds no %s, %s nor %s", ErrNotAgentData, join.CredsFile, agentd.LockFile, agentd.OutboxDir)
	}
	f, err := os.Open(filepath.Join(dir, agentd.LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w: an agent runs on it (%s)", ErrNotAgentData, agentd.ErrDataHeld)
		}
		return err
	}
	return nil
}

// Temporary reports whether bin looks like a binary that does not last
// ('go run”s, in the temporary directory or a go-build cache): the unit
// would run it.
func Temporary(bin string) bool {
	return strings.HasPrefix(bin, os.TempDir()+"/") || strings.Contains(bin, "/go-build")
}

// DataDir is the agent's data directory: d made absolute when given, else
// DefaultData.
func DataDir(d string, given bool) (string, error) {
	if !given {
		return DefaultData, nil
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", fmt.Errorf("--data %q: %w", d, err)
	}
	return abs, nil
}
