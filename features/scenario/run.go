package scenario

import (
	"errors"
	"fmt"
	"io"
	"os"

	"meshplane/features"

	"github.com/cucumber/godog/colors"
	"golang.org/x/term"
)

// ErrFailed is the error of a run in which a scenario failed (or a step
// was undefined or pending): the report says which.
var ErrFailed = errors.New("scenarios failed")

// ErrNoneRan is the error of a run in which no scenario ran: the files
// hold none, or none matches the tags.
var ErrNoneRan = errors.New("no scenario ran")

// Options are a run of scenarios.
type Options struct {
	Paths  []string  // feature files (FILE:LINE too) or directories
	Store  *Store    // nil: memory
	Format string    // godog formatter: pretty (the default), progress, junit or cucumber
	Output io.Writer // where the report goes
	Seed   int64     // scenario order: -1 (or 0) random, the seed printed; else a seed to repeat an order
	Tags   string    // godog tag expression ("@rule1 && ~@slow")
}

// Run checks every path (CheckFeatures), then runs their scenarios with
// features.Run (Strict: an undefined or pending step fails). A failed
// scenario is an error wrapping ErrFailed, naming godog's status; a run
// of no scenario, one wrapping ErrNoneRan saying why.
func Run(o Options) error {
	for _, p := range o.Paths {
		if err := CheckFeatures(p); err != nil {
			return err
		}
	}
	opts := features.Options{}
	if o.Store != nil {
		opts = o.Store.Options()
	}
	status, ran := features.Run(features.RunOptions{
		Options: opts, Paths: o.Paths, Format: o.Format, Output: o.Output, Seed: o.Seed, Tags: o.Tags,
	})
	if status != 0 {
		return fmt.Errorf("%w (godog status %d)", ErrFailed, status)
	}
	if ran == 0 {
		why := "the files hold none"
		if o.Tags != "" {
			why = fmt.Sprintf("none matches --tags %q", o.Tags)
		}
		return fmt.Errorf("%w: %s", ErrNoneRan, why)
	}
	return nil
}

// Colored is w for the report: in colour when w is a terminal and
// NO_COLOR is not set (no-color.org), else without escape codes.
func Colored(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) || os.Getenv("NO_COLOR") != "" {
		return colors.Uncolored(w)
	}
	return w
}
