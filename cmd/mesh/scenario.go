package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/colors"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"meshplane/features"
)

// errScenariosFailed: the report is already printed; exit 1.
var errScenariosFailed = errors.New("scenarios failed")

// maxFeatureLine is the longest line a feature file may hold: the Gherkin
// parser reads lines with a bufio.Scanner, whose limit this is, and panics
// past it. Feature files are checked before they are handed to it.
const maxFeatureLine = bufio.MaxScanTokenSize

type scenarioOptions struct {
	store, format, tags string // store: see scenarioStore
	seed                int64
}

func (e *env) scenarioRunCmd() *cobra.Command {
	var o scenarioOptions
	cmd := &cobra.Command{
		Use:   "run FILE...",
		Short: "run Gherkin scenarios (STEPS.md) against an in-process mesh (no --data: each starts empty)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("name at least one feature file or directory")
			}
			if _, err := targetOf(cmd, true); err != nil {
				return err
			}
			ss, err := scenarioStoreOf(o.store)
			if err != nil {
				return err
			}
			defer func() {
				if cerr := ss.Close(); cerr != nil {
					fmt.Fprintf(e.stderr, "mesh scenario run: %v\n", cerr)
				}
			}()
			return e.scenarioRun(o, ss, args)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.store, "store", features.StoreMemory, "the event store each scenario starts empty: memory, bolt, "+
		"postgres (a throwaway PostgreSQL cluster for the run), postgres://URL (a fresh database per scenario on that server), "+
		"esdb (at $MESH_ESDB_URL) or esdb://URL (a fresh stream prefix per scenario)")
	fs.StringVar(&o.format, "format", "pretty", "report format: pretty, progress, junit or cucumber")
	fs.Int64Var(&o.seed, "seed", -1, "scenario order: -1 random (the seed is printed), or a seed to repeat an order")
	fs.StringVar(&o.tags, "tags", "", "run only scenarios matching this tag `expression` (\"@rule1 && ~@slow\")")
	checkFlags(fs, map[string]flagCheck{"format": oneOf("pretty", "progress", "junit", "cucumber"), "seed": atLeast(-1)})
	return cmd
}

func (e *env) scenarioRun(o scenarioOptions, ss *scenarioStore, pos []string) error {
	format, seed, tags := &o.format, &o.seed, &o.tags
	for _, p := range pos {
		if err := checkFeatures(p); err != nil {
			return err
		}
	}
	out := e.stdout
	if f, ok := out.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("NO_COLOR") != "" {
		out = colors.Uncolored(out)
	}
	// As features.Run (Strict, seed 0 random as -1), counting the scenarios
	// that ran.
	order := *seed
	if order == 0 {
		order = -1
	}
	var ran atomic.Int64
	opts := features.Options{Store: ss.kind, OpenStore: ss.open}
	status := godog.TestSuite{
		Name: "meshplane",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			features.Initialize(sc, opts)
			sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
				ran.Add(1)
				return ctx, nil
			})
		},
		Options: &godog.Options{
			Format: *format, Output: out, Paths: pos,
			Strict: true, Randomize: order, Tags: *tags,
		},
	}.Run()
	if status != 0 {
		fmt.Fprintf(e.stderr, "mesh scenario run: scenarios failed (godog status %d)\n", status)
		return errScenariosFailed
	}
	if ran.Load() == 0 {
		why := "the files hold none"
		if *tags != "" {
			why = fmt.Sprintf("none matches --tags %q", *tags)
		}
		return fmt.Errorf("no scenario ran: %s", why)
	}
	return nil
}

// lineSuffix is godog's FILE:LINE form of a path.
var lineSuffix = regexp.MustCompile(`:\d+$`)

// checkFeatures checks what the Gherkin parser would panic on: every
// feature file under path (a file, FILE:LINE, or a directory of *.feature
// files, as godog reads them) holds no line longer than maxFeatureLine.
func checkFeatures(path string) error {
	st, err := os.Stat(path)
	if err != nil && lineSuffix.MatchString(path) {
		path = lineSuffix.ReplaceAllString(path, "")
		st, err = os.Stat(path)
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return checkFeatureLines(path)
	}
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(p) != ".feature" {
			return nil
		}
		return checkFeatureLines(p)
	})
}

// checkFeatureLines reads path a line at a time, never holding more than
// maxFeatureLine of one, and refuses it at the first line too long.
func checkFeatureLines(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	line, n := 1, 0
	for {
		chunk, isPrefix, err := r.ReadLine()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		n += len(chunk)
		if n >= maxFeatureLine {
			return fmt.Errorf("%s:%d: a line longer than %d KiB; the Gherkin parser reads no longer line", path, line, maxFeatureLine>>10)
		}
		if !isPrefix {
			line, n = line+1, 0
		}
	}
}
