package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"meshplane/features"
	"meshplane/features/scenario"
	"meshplane/internal/flagcheck"
)

// errScenariosFailed: the report is already printed; exit 1.
var errScenariosFailed = errors.New("scenarios failed")

func (e *env) scenarioRunCmd() *cobra.Command {
	var o scenario.Options
	var store string
	cmd := &cobra.Command{
		Use:   "run FILE...",
		Short: "run Gherkin scenarios (docs/scenario-steps.md) against an in-process mesh (no --data: each starts empty)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one feature file or directory")
			}
			if _, err := targetOf(cmd, true); err != nil {
				return err
			}
			ss, err := scenario.ParseStore(store)
			if err != nil { // a refused --store (scenario.ErrStore)
				return usagef("%v", err)
			}
			defer func() {
				if cerr := ss.Close(); cerr != nil {
					fmt.Fprintf(e.stderr, "mesh scenario run: %v\n", cerr)
				}
			}()
			o.Paths, o.Store, o.Output = args, ss, scenario.Colored(e.stdout)
			err = scenario.Run(o)
			if errors.Is(err, scenario.ErrFailed) {
				fmt.Fprintf(e.stderr, "mesh scenario run: %v\n", err)
				return errScenariosFailed
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&store, "store", features.StoreMemory, "the event store each scenario starts empty: memory, bolt, "+
		"postgres (a throwaway PostgreSQL cluster for the run), postgres://URL (a fresh database per scenario on that server), "+
		"esdb (at $MESH_ESDB_URL) or esdb://URL (a fresh stream prefix per scenario)")
	fs.StringVar(&o.Format, "format", "pretty", "report format: pretty, progress, junit or cucumber")
	fs.Int64Var(&o.Seed, "seed", -1, "scenario order: -1 random (the seed is printed), or a seed to repeat an order")
	fs.StringVar(&o.Tags, "tags", "", "run only scenarios matching this tag `expression` (\"@rule1 && ~@slow\")")
	flagcheck.Install(fs, map[string]flagcheck.Check{"format": flagcheck.OneOf("pretty", "progress", "junit", "cucumber"), "seed": flagcheck.AtLeast(-1)})
	return cmd
}
