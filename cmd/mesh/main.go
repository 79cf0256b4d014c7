// Command mesh is meshplane's one binary: `mesh up` runs the control plane
// with simulated nodes in this process, and the other verbs ask it what it
// did and why.
//
// There is no daemon yet: every verb works in local mode. It opens the
// event store in the data directory (a bbolt file, locked while in use),
// folds the projections from it, and answers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"meshplane/commands"
	"meshplane/events"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1  // the command ran and failed, a scenario failed, or no scenario ran
	exitUsage    = 2  // the command line is wrong
	exitRejected = 3  // refused at the door: the mesh refused the command (a rejection with a code), or a module or mesh file is malformed (code invalid); nothing was written
	exitPanic    = 70 // a bug: the CLI panicked (the panic and its stack are on stderr); EX_SOFTWARE of sysexits.h
)

// command is one verb of the CLI.
type command struct {
	name    string
	args    string // synopsis of the arguments
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

// env is what a command runs with: its output streams and its clock, so
// tests can run the CLI in process.
type env struct {
	stdout, stderr io.Writer
	// now stamps what `mesh up` writes: the wall clock in UTC, nanoseconds
	// kept, so that every run's events follow the last run's. (The verbs
	// that write through openLocal's handler use the handler's default,
	// the same wall clock.)
	now func() time.Time
}

// usageError is a wrong command line: exit 2, with the verb's usage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

var verbs []command

func init() {
	verbs = []command{
		{"up", "[--data DIR] [--modules DIR] [--mesh FILE] [--passes N]", "run the mesh on embedded defaults: define the modules, set up the nodes, push and apply", cmdUp},
		{"status", "[--data DIR] [--json] [NODE...]", "each node's sync and health, with held counts per module", cmdStatus},
		{"node show", "[--data DIR] [--json] NODE", "one node: its status, its modules, its own holds and its last apply", cmdNodeShow},
		{"node register", "[--data DIR] NODE...", "register nodes", cmdNodeRegister},
		{"node adopt", "[--data DIR] NODE", "mark a node as adopted: it existed before the mesh", cmdNodeAdopt},
		{"node set", "[--data DIR] NODE KEY VALUE", "set a node setting (private-address, artifact-store, port.NAME)", cmdNodeSet},
		{"module define", "[--data DIR] FILE...", "define (or redefine) modules from module files", cmdModuleDefine},
		{"assign", "[--data DIR] MODULE NODE", "assign a module to a node", cmdAssign},
		{"take", "[--data DIR] MODULE NODE", "take an assigned module on an adopted node", cmdTake},
		{"release", "[--data DIR] MODULE NODE", "release a module from a node", cmdRelease},
		{"artifact push", "[--data DIR] [--registry ADDR] [--timeout D] MODULE NAME IMAGE.tar", "push an image tarball to the artifact store and record the build (module, name, digest)", cmdArtifactPush},
		{"timeline", "[--data DIR] [--node N] [--module M] [--resource R] [--type T] [--correlation C] [--since T] [--until T] [--limit N] [--json]", "the audit timeline, filtered", cmdTimeline},
		{"roster", "[--data DIR] [--json] [--history] [--diff FROM,TO] NODE", "a node's roster: its current routed names, every declaration's, and what changed between two", cmdRoster},
		{"why", "[--data DIR] [--json] NODE RESOURCE", "why a resource on a node is as it is: every apply that touched it, and the push behind each", cmdWhy},
		{"churn", "[--data DIR] [--json] [NODE...]", "churn loops and flips, open and past, with their evidence", cmdChurn},
		{"rebuild", "[--data DIR]", "rebuild every projection from position 0 and check it equals a second rebuild", cmdRebuild},
		{"store verify", "[--data DIR]", "check every record and index of the event store; exit 1 on any damage", cmdStoreVerify},
		{"scenario run", "[--store memory|bolt] [--format pretty|progress|junit|cucumber] [--seed N] [--tags EXPR] FILE...", "run Gherkin scenarios (STEPS.md) against an in-process mesh", cmdScenarioRun},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the CLI and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return (&env{stdout: stdout, stderr: stderr, now: wallClock}).run(ctx, args)
}

// wallClock is the clock of everything the CLI writes to a user's store.
func wallClock() time.Time { return time.Now().UTC() }

// run runs the CLI in e and returns its exit code. A panic in the command
// is printed with its stack and exits exitPanic, never exitUsage.
func (e *env) run(ctx context.Context, args []string) (code int) {
	stdout, stderr := e.stdout, e.stderr
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "mesh: panic: %v\n\n%s\nThis is a bug in mesh; the exit code is %d.\n", r, debug.Stack(), exitPanic)
			code = exitPanic
		}
	}()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		help(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, rest, ok := lookup(args)
	if !ok {
		fmt.Fprintf(stderr, "mesh: unknown command %q\n\n", strings.Join(args[:min(2, len(args))], " "))
		help(stderr)
		return exitUsage
	}
	err := c.run(ctx, e, rest)
	var ue *usageError
	var rej *commands.Rejection
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mesh %s: %s\nusage: mesh %s %s\n", c.name, ue.msg, c.name, c.args)
		return exitUsage
	case errors.As(err, &rej):
		fmt.Fprintf(stderr, "mesh %s: refused (%s): %s\n", c.name, rej.Code, rej.Msg)
		return exitRejected
	case errors.Is(err, commands.ErrModuleFile), errors.Is(err, errMeshFile):
		fmt.Fprintf(stderr, "mesh %s: refused (%s): %v\n", c.name, commands.CodeInvalid, err)
		return exitRejected
	case errors.Is(err, errScenariosFailed):
		return exitFailed
	case errors.Is(err, events.ErrDamaged):
		fmt.Fprintf(stderr, "mesh %s: store file damaged: %v; run mesh store verify\n", c.name, err)
		return exitFailed
	default:
		fmt.Fprintf(stderr, "mesh %s: %v\n", c.name, err)
		return exitFailed
	}
}

// lookup finds the verb args name: two words ("node show") before one.
func lookup(args []string) (command, []string, bool) {
	if len(args) >= 2 {
		for _, c := range verbs {
			if c.name == args[0]+" "+args[1] {
				return c, args[2:], true
			}
		}
	}
	for _, c := range verbs {
		if c.name == args[0] {
			return c, args[1:], true
		}
	}
	return command{}, nil, false
}

func help(w io.Writer) {
	fmt.Fprint(w, `mesh: an event-sourced control plane for a fleet of container hosts.

Every assign, take, release, compose, push, apply outcome and hold is an event;
status, holds, timeline and churn are projections of the stream.

usage: mesh COMMAND [flags] [args]

commands:
`)
	width := 0
	for _, c := range verbs {
		width = max(width, len(c.name))
	}
	cs := append([]command(nil), verbs...)
	sort.SliceStable(cs, func(i, j int) bool { return order(cs[i].name) < order(cs[j].name) })
	for _, c := range cs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprint(w, `
Every command but scenario run takes --data DIR (default ".mesh", or $MESH_DATA):
the directory holding the event store (events.db, a bbolt file locked while a
command uses it).
'mesh COMMAND --help' lists a command's flags.

Commands that only read open the store read-only (any number at once); only
up and the write verbs create it or write to it. A command whose work is
already done (registering a registered node, assigning an assigned module,
...) writes nothing, says so, and exits 0. A command with several items (node
register a b c, module define f1 f2, the set-up of mesh up) checks them all
first and writes nothing if one is refused.

exit codes: 0 ok (or nothing to do), 1 failed (also: no scenario ran, a
damaged store file, or a read that had to skip events it could not decode:
what could be read is printed first), 2 bad usage, 3 refused: by the mesh, or
a malformed module or mesh file, nothing written (the code is printed:
invalid, node-unknown, module-unknown, not-assigned, route-claimed, ...), 70 a
bug: mesh panicked (the stack is printed).
`)
}

func order(name string) int {
	for i, c := range verbs {
		if c.name == name {
			return i
		}
	}
	return len(verbs)
}

// flags returns a flag set for verb c that prints its usage to e.stderr.
func (e *env) flags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet("mesh "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: mesh %s %s\n\nflags:\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, flags and positional arguments in any order, turning
// flag errors into usage errors. It returns the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
