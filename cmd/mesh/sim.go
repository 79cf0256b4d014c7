package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/render"
	"meshplane/sim"
)

func (e *env) simCmd() *cobra.Command {
	var o sim.Options
	var faults string
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "run a whole mesh in this process with faults on purpose, and score the churn detector against them",
		Long: `Run a whole mesh in this process: the real controller (its commands, compose,
store, projections and pass), simulated nodes (the in-memory runtime) and bus.
--nodes nodes and --modules modules are set up, then --passes passes run:
each is the controller's pass, the one mesh up makes every interval (every
node composed, what changed pushed, a compose failure recorded once), then an
apply on every node, while the faults of --faults are injected. The event stream stays
in the store (--store bolt: the bolt file in --data, which must hold no
events yet), so status, timeline, churn and why work on it afterwards.

The run knows the churn it injected (loops and flips, on which nodes, when),
from the faults and the operator commands, never from the events the
detector reads, and scores the churn projection against it: recall, precision, the delay from
an episode's start to its detection in passes, and the false loops on
legitimate passes (a roll-out, a moved module, a burst of assigns). Targets:
recall 1, no false loop on a legitimate pass, a delay of at most 2 passes.
Exit 1 when a target is missed.

While it runs, a progress bar on a terminal (passes/s, events/s, time left);
at the end, a summary to paste into an incident review (-o json: the same, as
JSON). --measure adds the projections' memory, a status query, a filtered
timeline page and a rebuild of the whole history.

` + sim.SpecHelp + `

--faults default is every kind at once, placed over the run's passes (at
least 20 make every window distinct); --faults none runs without faults.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			switch {
			case o.Nodes < 1:
				return usagef("--nodes %d: want at least 1", o.Nodes)
			case o.Modules < 1:
				return usagef("--modules %d: want at least 1", o.Modules)
			case o.Passes < 1:
				return usagef("--passes %d: want at least 1", o.Passes)
			}
			if !cmd.Flags().Changed("big") {
				o.Big = o.Nodes / 100
			}
			if o.Big < 0 || o.Big > o.Nodes {
				return usagef("--big %d: want 0 to --nodes (%d)", o.Big, o.Nodes)
			}
			if o.Faults, err = sim.FaultsOf(faults, o.Passes); err != nil {
				return usagef("--faults: %v", err)
			}
			o.Data, o.Clock = t.data, e.now
			return e.sim(cmd.Context(), o, out)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Nodes, "nodes", 12, "nodes at the start")
	fs.IntVar(&o.Modules, "modules", 16, "modules (3 containers and a directory each), 3 assigned to each node")
	fs.IntVar(&o.Passes, "passes", 24, "passes: a push and an apply on every node")
	fs.Uint64Var(&o.Seed, "seed", 1, "the seed every random choice is drawn from")
	fs.IntVar(&o.Big, "big", 0, "nodes with 330 resources, as in the seeds (default: 1 in 100)")
	fs.StringVar(&faults, "faults", "default", "the faults `SPEC` (see above), default or none")
	fs.StringVar(&o.Store, "store", "bolt", "the event store: memory, bolt (DATA/events.db, empty), postgres (a throwaway cluster, gone with the run) or postgres://URL (an empty database)")
	fs.BoolVar(&o.Measure, "measure", false, "at the end, measure memory, a status query, a timeline page and a rebuild")
	addOutput(cmd)
	return cmd
}

// errTargetsMissed: the summary is printed; exit 1.
var errTargetsMissed = errors.New("the churn detector missed a target (see the summary)")

func (e *env) sim(ctx context.Context, o sim.Options, out string) error {
	if b := render.PassBar(e.stderr, o.Passes); b != nil {
		o.Bar = b
	}
	sum, err := sim.Execute(ctx, o)
	if errors.Is(err, sim.ErrStore) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if out == outJSON {
		err = render.WriteJSON(e.stdout, sum)
	} else {
		err = sum.WriteText(e.stdout)
		if err == nil && o.Store == "bolt" {
			dataArg := ""
			if o.Data != ".mesh" {
				dataArg = " --data " + o.Data
			}
			_, err = fmt.Fprintf(e.stdout, `
where to look (every answer comes from the events left in the store):
  mesh churn%[1]s
  mesh status%[1]s
  mesh timeline%[1]s --node NODE
  mesh why%[1]s NODE RESOURCE
`, dataArg)
		}
	}
	if err == nil && !sum.Score.Met() {
		err = errTargetsMissed
	}
	return err
}
