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
// The CLI is built on cobra, one file per verb or family of verbs
// (status.go, timeline.go, module_node.go for assign, take and release,
// ...), flags anywhere on the line, usage written once by cobra.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"meshplane/internal/clihelp"
	"meshplane/internal/safego"
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

func main() {
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A loop that panicked stops the process as a signal would; runRoot
	// exits exitPanic (safego.StopOnFatal).
	ctx := safego.StopOnFatal(sigCtx, fatalGrace, func(err error) {
		fmt.Fprintf(os.Stderr, "mesh: %v\n\nmesh: did not stop within %s of the panic above; exiting %d\n", err, fatalGrace, exitPanic)
		os.Exit(exitPanic)
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

	node, module := clihelp.Group("node", "nodes: list, register, adopt, set, show, remove"), clihelp.Group("module", "modules: list, show, define, remove")
	node.AddCommand(e.nodeListCmd(), e.nodeShowCmd(), e.nodeRegisterCmd(), e.nodeAdoptCmd(), e.nodeSetCmd())
	node.AddCommand(e.nodeRemoveCmd(), e.nodeJoinTokenCmd(), e.nodeRevokeCmd())
	module.AddCommand(e.moduleListCmd(), e.moduleShowCmd(), e.moduleDefineCmd(), e.moduleRemoveCmd())
	artifact := clihelp.Group("artifact", "artifacts: push")
	artifact.AddCommand(e.artifactPushCmd())
	store := clihelp.Group("store", "the event store: verify, migrate")
	store.AddCommand(e.storeVerifyCmd(), e.storeMigrateCmd(), e.storeHeadCmd())
	scenario := clihelp.Group("scenario", "Gherkin scenarios: run")
	scenario.AddCommand(e.scenarioRunCmd())
	busGroup := clihelp.Group("bus", "the bus: account, check")
	busGroup.AddCommand(e.busAccountCmd(), e.busCheckCmd())

	root.AddCommand(
		e.upCmd(), e.agentCmd(), e.statusCmd(), e.infoCmd(), e.versionCmd(), node, module,
		e.assignCmd(), e.takeCmd(), e.releaseCmd(), e.pushCmd(), artifact, e.deployCmd(), e.planCmd(),
		e.timelineCmd(), e.rosterCmd(), e.whyCmd(), e.logsCmd(), e.churnCmd(), e.revertCmd(), e.diffCmd(),
		e.rebuildCmd(), e.exportCmd(), e.importCmd(), e.replayCmd(), store, scenario, e.simCmd(), busGroup,
		e.tokenGroup(), e.secretGroup(), e.docsCmd(),
	)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Short = "generate the shell completion script: mesh completion bash|zsh|fish|powershell"
		}
	}
	clihelp.AddExamples(root)
	// The root's usage lists every verb, with the notes; the verbs' usage
	// is cobra's.
	def := root.UsageTemplate()
	root.SetUsageTemplate(`{{if .HasParent}}` + def + `{{else}}` + rootUsage + `{{end}}`)
	return root
}
