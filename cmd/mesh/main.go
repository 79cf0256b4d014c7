// Command mesh is meshplane's one binary: `mesh up` runs the control plane,
// and the other verbs change the mesh or ask it what it did and why.
//
// Every verb works in one of two ways, with the same output: on a local
// store (--data DIR: the bbolt file in the data directory, opened read-only
// by queries), or against a running controller (--server URL, over its
// HTTP API). Either way the verb calls an api.Service: locally a
// controller.Controller over the store, not running (status, node show,
// timeline and churn start it from the snapshot the data directory keeps:
// localquery.go); remotely an httpapi.Client. When the local store is locked and DATA/controller.json names
// a live controller, the verb asks that controller.
//
// The CLI is built on cobra, one file per verb (status.go, timeline.go,
// ...), flags anywhere on the line, usage written once by cobra.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/internal/safego"
	"meshplane/meshup"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1  // the command ran and failed, a scenario failed, or no scenario ran
	exitUsage    = 2  // the command line is wrong
	exitRejected = 3  // refused at the door: the mesh refused the command (a rejection with a code), or a module or mesh file is malformed (code invalid); nothing was written
	exitPanic    = 70 // a bug: the CLI panicked (the panic and its stack are on stderr); EX_SOFTWARE of sysexits.h
)

// env is what a command runs with: its output streams and its clock, so
// tests can run the CLI in process.
type env struct {
	stdout, stderr io.Writer
	// now stamps what `mesh up` writes: the wall clock in UTC, nanoseconds
	// kept, so that every run's events follow the last run's. (The write
	// verbs stamp with the same wall clock, through the controller.)
	now func() time.Time
}

// usageError is a wrong command line: exit 2, with the verb's usage line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError ends the CLI with code, having printed what it had to.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A loop that panicked (safego.Fatal) stops the process as a signal
	// would, its panic the cause: every part stops in order, mesh up's
	// agents too, and runRoot exits exitPanic. One that does not stop
	// within fatalGrace is ended.
	ctx, crash := context.WithCancelCause(sigCtx)
	safego.SetFatal(func(err error) {
		crash(err)
		time.AfterFunc(fatalGrace, func() {
			fmt.Fprintf(os.Stderr, "mesh: %v\n\nmesh: did not stop within %s of the panic above; exiting %d\n", err, fatalGrace, exitPanic)
			os.Exit(exitPanic)
		})
	})
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// fatalGrace bounds the clean stop after a loop's panic: the controller's
// parts get 30 s, mesh up's agents 10 s each after their SIGTERM.
const fatalGrace = 90 * time.Second

// run runs the CLI and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, now: wallClock}
	return e.run(ctx, args)
}

// wallClock is the clock of everything the CLI writes to a user's store.
func wallClock() time.Time { return time.Now().UTC() }

// run runs the CLI in e and returns its exit code.
func (e *env) run(ctx context.Context, args []string) int {
	return e.runRoot(ctx, e.root(), args)
}

// runRoot runs root with args and maps what it returns to an exit code. A
// panic in the command is printed with its stack and exits exitPanic,
// never exitUsage; so does a panic a goroutine's boundary recovered
// (package safego) that stopped the command: its error, or ctx's cause.
func (e *env) runRoot(ctx context.Context, root *cobra.Command, args []string) (code int) {
	stderr := e.stderr
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "mesh: panic: %v\n\n%s\nThis is a bug in mesh; the exit code is %d.\n", r, debug.Stack(), exitPanic)
			code = exitPanic
		}
	}()
	root.SetArgs(args)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SilenceErrors, root.SilenceUsage = true, true
	cmd, err := root.ExecuteContextC(ctx)
	name := "mesh"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	// A panic recovered at a goroutine's boundary that stopped the
	// command: the process's cause (safego.Fatal), or the command's error.
	pe, panicked := safego.As(context.Cause(ctx))
	if !panicked {
		pe, panicked = safego.As(err)
	}
	if panicked {
		fmt.Fprintf(stderr, "%s: %v\n\n%s\nThis is a bug in mesh; it stopped cleanly; the exit code is %d.\n", name, pe, pe.Stack, exitPanic)
		return exitPanic
	}
	var ue *usageError
	var xe *exitError
	var rej *commands.Rejection
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &xe):
		return xe.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s\nusage: %s\nRun '%s --help' for more.\n", name, ue.msg, cmd.UseLine(), cmd.CommandPath())
		return exitUsage
	case strings.HasPrefix(err.Error(), "unknown command "):
		// cobra's, for a verb it does not know.
		fmt.Fprintf(stderr, "mesh: %v\nRun 'mesh --help' for the commands.\n", err)
		return exitUsage
	case errors.As(err, &rej):
		fmt.Fprintf(stderr, "%s: refused (%s): %s\n", name, rej.Code, rej.Msg)
		return exitRejected
	case errors.Is(err, commands.ErrModuleFile), errors.Is(err, meshup.ErrMeshFile):
		fmt.Fprintf(stderr, "%s: refused (%s): %v\n", name, commands.CodeInvalid, err)
		return exitRejected
	case errors.Is(err, errScenariosFailed):
		return exitFailed
	case errors.Is(err, events.ErrDamaged):
		fmt.Fprintf(stderr, "%s: store file damaged: %v; run mesh store verify\n", name, err)
		return exitFailed
	case errors.Is(err, httpapi.ErrUnauthorized):
		fmt.Fprintf(stderr, "%s: %v (give the controller's DATA/api-token with --token-file or MESH_TOKEN)\n", name, err)
		return exitFailed
	default:
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitFailed
	}
}

// root builds the command tree: every verb, each from its own file.
func (e *env) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "mesh",
		Short: "an event-sourced control plane for a fleet of container hosts",
		Long: `mesh: an event-sourced control plane for a fleet of container hosts.

Every assign, take, release, compose, push, apply outcome and hold is an event;
status, holds, timeline and churn are projections of the stream.`,
		// Without a verb: the help, and exit 2.
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(e.stdout)
			_ = cmd.Help()
			return &exitError{exitUsage}
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	root.SetOut(e.stdout) // before the completion command, which keeps it
	root.SetErr(e.stderr)
	addTarget(root)

	node := group("node", "nodes: register, adopt, set, show")
	node.AddCommand(e.nodeShowCmd(), e.nodeRegisterCmd(), e.nodeAdoptCmd(), e.nodeSetCmd())
	module := group("module", "modules: define")
	module.AddCommand(e.moduleDefineCmd())
	artifact := group("artifact", "artifacts: push")
	artifact.AddCommand(e.artifactPushCmd())
	store := group("store", "the event store: verify, migrate")
	store.AddCommand(e.storeVerifyCmd(), e.storeMigrateCmd())
	scenario := group("scenario", "Gherkin scenarios: run")
	scenario.AddCommand(e.scenarioRunCmd())
	busGroup := group("bus", "the bus: account")
	busGroup.AddCommand(e.busAccountCmd())

	root.AddCommand(
		e.upCmd(), e.agentCmd(), e.statusCmd(), e.infoCmd(), node, module,
		e.assignCmd(), e.takeCmd(), e.releaseCmd(), e.pushCmd(), artifact, e.deployCmd(), e.planCmd(),
		e.timelineCmd(), e.rosterCmd(), e.whyCmd(), e.churnCmd(),
		e.rebuildCmd(), e.exportCmd(), e.importCmd(), store, scenario, e.simCmd(), busGroup,
	)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "generate the shell completion script: mesh completion bash|zsh|fish|powershell"
		}
	}
	// The root's usage lists every verb, with the notes; the verbs' usage
	// is cobra's.
	def := root.UsageTemplate()
	root.SetUsageTemplate(`{{if .HasParent}}` + def + `{{else}}` + rootUsage + `{{end}}`)
	return root
}

func init() {
	cobra.AddTemplateFunc("verbs", verbList)
	cobra.EnableCommandSorting = false // the verbs in the order of a day's work
}

// group is a command that only holds verbs ("mesh node ..."). Named alone
// or with a verb it does not know, it is a usage error.
func group(name, short string) *cobra.Command {
	return &cobra.Command{
		Use:         name + " COMMAND",
		Short:       short,
		Annotations: map[string]string{"group": "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name a command: %s", strings.Join(subNames(cmd), ", "))
			}
			return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
		},
	}
}

func subNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	return names
}

// verbs returns every verb under root, as its path without "mesh ", in
// the order added ("node show", ...).
func verbs(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			if sub.Annotations["group"] == "true" {
				walk(sub)
				continue
			}
			out = append(out, sub)
		}
	}
	walk(root)
	return out
}

func verbName(c *cobra.Command) string { return strings.TrimPrefix(c.CommandPath(), "mesh ") }

// verbList is the root help's list of verbs, one a line.
func verbList(root *cobra.Command) string {
	vs := verbs(root)
	width := 0
	for _, v := range vs {
		width = max(width, len(verbName(v)))
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, verbName(v), v.Short)
	}
	return b.String()
}

const rootUsage = `Usage:
  mesh COMMAND [args] [flags]

Commands:
{{verbs .}}
Flags (every command takes them, anywhere on the line):
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}

Where a command works:
  On a local store by default: --data DIR (default ".mesh", or $MESH_DATA), the
  directory holding the event store (events.db, a bbolt file locked while a
  command uses it). Or against a running controller: --server URL (or
  $MESH_SERVER), with the token from --token-file FILE (the controller's
  DATA/api-token) or $MESH_TOKEN, and --tls-ca FILE for a private CA. The
  output is the same either way. When the local store is locked and
  DATA/controller.json names a live controller, the command asks it (with the
  token in DATA/api-token). up, rebuild, store verify and scenario run work
  on a local store only.

  Commands that only read open the store read-only (any number at once); only
  up and the write verbs create it or write to it. A command whose work is
  already done (registering a registered node, assigning an assigned module,
  ...) writes nothing, says so, and exits 0. A command with several items (node
  register a b c, module define f1 f2, the set-up of mesh up) checks them all
  first and writes nothing if one is refused.

  Every query takes -o table|json; the JSON field names are a public API, the
  tables are for people. 'mesh COMMAND --help' lists a command's flags;
  'mesh completion bash|zsh|fish' writes a shell completion script.

Exit codes:
  0 ok (or nothing to do), 1 failed (also: no scenario ran, a damaged store
  file, or a read that had to skip events it could not decode: what could be
  read is printed first), 2 bad usage, 3 refused: by the mesh, or a malformed
  module or mesh file, nothing written (the code is printed: invalid,
  node-unknown, module-unknown, not-assigned, route-claimed, ...), 70 a bug:
  mesh panicked (the stack is printed).
`
