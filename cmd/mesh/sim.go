package main

import (
	"context"
	"errors"

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
		Long:  sim.Help,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := outputOf(cmd)
			if err != nil {
				return err
			}
			t, err := targetOf(cmd, true)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("big") {
				o.Big = o.Nodes / 100
			}
			if err := o.Check(); err != nil {
				return err // bad usage (usage.Err)
			}
			if o.Faults, err = sim.FaultsOf(faults, o.Passes); err != nil {
				return usagef("--faults: %v", err)
			}
			o.Data, o.Clock = t.Data, e.now
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
	return sum.Print(e.stdout, out == outJSON, o)
}
