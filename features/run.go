package features

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/cucumber/godog"
)

// RunOptions configure a run of feature files.
type RunOptions struct {
	Options
	Paths  []string  // feature files or directories
	Format string    // godog formatter: "pretty" (default), "progress", "junit", "cucumber"
	Output io.Writer // where the formatter writes
	Seed   int64     // scenario order: -1 random (the default when 0), else a fixed seed
	Tags   string    // godog tag expression, e.g. "~@slow"
}

// Run runs the scenarios of o.Paths with godog's Strict mode (an undefined
// or pending step fails the run) and randomized scenario order, and returns
// godog's exit status (0 when every scenario passed) and how many
// scenarios ran (0 when the files hold none, or none matches o.Tags).
func Run(o RunOptions) (status, ran int) {
	format := o.Format
	if format == "" {
		format = "pretty"
	}
	seed := o.Seed
	if seed == 0 {
		seed = -1
	}
	var n atomic.Int64
	status = godog.TestSuite{
		Name: "meshplane",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			Initialize(sc, o.Options)
			sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
				n.Add(1)
				return ctx, nil
			})
		},
		Options: &godog.Options{
			Format:    format,
			Output:    o.Output,
			Paths:     o.Paths,
			Strict:    true,
			Randomize: seed,
			Tags:      o.Tags,
		},
	}.Run()
	return status, int(n.Load())
}
