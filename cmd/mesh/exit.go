package main

// How the CLI ends: the exit codes, and the mapping of what a command
// returns to one (runRoot).

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"meshplane/api/httpapi"
	"meshplane/commands"
	"meshplane/events"
	"meshplane/internal/clihelp"
	"meshplane/internal/safego"
	"meshplane/internal/usage"
	"meshplane/meshup"
	"meshplane/render"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1  // the command ran and failed, a scenario failed, or no scenario ran
	exitUsage    = 2  // the command line is wrong
	exitRejected = 3  // refused at the door: the mesh refused the command (a rejection with a code), or a module or mesh file is malformed (code invalid); nothing was written
	exitPanic    = 70 // a bug: the CLI panicked (the panic and its stack are on stderr); EX_SOFTWARE of sysexits.h
)

// usagef is a wrong command line (usage.Err): exit 2, with the
// verb's usage line. The rooms that check what flags set say so too.
var usagef = usage.Errorf

// exitError ends the CLI with code, having printed what it had to.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

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
	var xe *exitError
	var rej *commands.Rejection
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &xe):
		return xe.code
	case errors.Is(err, usage.Err):
		fmt.Fprintf(stderr, "%s: %s\nusage: %s\nRun '%s --help' for more.\n", name, msg(err), cmd.UseLine(), cmd.CommandPath())
		return exitUsage
	case strings.HasPrefix(err.Error(), "unknown command "):
		// cobra's, for a verb it does not know.
		fmt.Fprintf(stderr, "mesh: %s\nRun 'mesh --help' for the commands.\n", msg(err))
		return exitUsage
	case errors.As(err, &rej):
		fmt.Fprintf(stderr, "%s: refused (%s): %s\n", name, render.Escape(rej.Code), render.Escape(rej.Msg))
		return exitRejected
	case errors.Is(err, commands.ErrModuleFile), errors.Is(err, meshup.ErrMeshFile):
		fmt.Fprintf(stderr, "%s: refused (%s): %s\n", name, commands.CodeInvalid, msg(err))
		return exitRejected
	case errors.Is(err, errScenariosFailed):
		return exitFailed
	case errors.Is(err, events.ErrStoreFull):
		// Local (the store's ENOSPC) or remote (the API's 507 store-full).
		fmt.Fprintf(stderr, "%s: the event store is full (no space left where it writes): nothing was written; free space or grow its disk, then run the command again (%v)\n", name, err)
		return exitFailed
	case errors.Is(err, events.ErrDamaged):
		fmt.Fprintf(stderr, "%s: store file damaged: %s; run mesh store verify\n", name, msg(err))
		return exitFailed
	case errors.Is(err, httpapi.ErrUnauthorized):
		fmt.Fprintf(stderr, "%s: %s (give the controller's DATA/api-token with --token-file or MESH_TOKEN)\n", name, msg(err))
		return exitFailed
	default:
		fmt.Fprintf(stderr, "%s: %s\n", name, msg(err))
		return exitFailed
	}
}

// msg is an error's text as the CLI prints it: control characters a node,
// a file or history put in it escaped (render.Text), its own lines kept
// (errors.Join's). A refusal is one sentence: it is printed with its
// newlines escaped too (render.Escape), so none starts a forged line.
func msg(err error) string { return render.Text(err.Error()) }

// noArgs and exactArgs check a verb's arguments as bad usage (exit 2).
var noArgs, exactArgs = clihelp.NoArgs, clihelp.ExactArgs
