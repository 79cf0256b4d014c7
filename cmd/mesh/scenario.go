package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/cucumber/godog/colors"
	"golang.org/x/term"

	"meshplane/features"
)

// errScenariosFailed: the report is already printed; exit 1.
var errScenariosFailed = errors.New("scenarios failed")

func cmdScenarioRun(ctx context.Context, e *env, args []string) error {
	fs := e.flags("scenario run", "[flags] FILE...")
	store := fs.String("store", features.StoreMemory, "the event store each scenario starts empty: memory or bolt")
	format := fs.String("format", "pretty", "report format: pretty, progress, junit or cucumber")
	seed := fs.Int64("seed", -1, "scenario order: -1 random (the seed is printed), or a seed to repeat an order")
	tags := fs.String("tags", "", "run only scenarios matching this tag `expression` (\"@rule1 && ~@slow\")")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("name at least one feature file or directory")
	}
	if *store != features.StoreMemory && *store != features.StoreBolt {
		return usagef("--store %q: want memory or bolt", *store)
	}
	out := e.stdout
	if f, ok := out.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("NO_COLOR") != "" {
		out = colors.Uncolored(out)
	}
	status := features.Run(features.RunOptions{
		Options: features.Options{Store: *store},
		Paths:   pos, Format: *format, Output: out, Seed: *seed, Tags: *tags,
	})
	if status != 0 {
		fmt.Fprintf(e.stderr, "mesh scenario run: scenarios failed (godog status %d)\n", status)
		return errScenariosFailed
	}
	return nil
}
