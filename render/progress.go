package render

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress shows a long job (rebuild, import, export) on a terminal:
// events done of the total, events/s and the time left. It shows nothing
// when its writer is not a terminal (a pipe, a file, a test), so scripts
// and logs get no control characters. A nil *Progress is a quiet one.
type Progress struct {
	bar *progressbar.ProgressBar
}

// terminal is w as a terminal's file, or nil.
func terminal(w io.Writer) *os.File {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return f
}

// NewProgress starts a bar for total events (-1: not known, a spinner),
// described by what, when w is a terminal; else a quiet one.
func NewProgress(w io.Writer, total int64, what string) *Progress {
	f := terminal(w)
	if f == nil {
		return nil
	}
	return &Progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(Escape(what)),
		progressbar.OptionSetItsString("events"),
		progressbar.OptionShowIts(),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)}
}

// Set moves the bar to n events done.
func (p *Progress) Set(n uint64) {
	if p != nil {
		_ = p.bar.Set64(int64(n))
	}
}

// Add moves the bar on by n events.
func (p *Progress) Add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

// Done clears the bar.
func (p *Progress) Done() {
	if p != nil {
		_ = p.bar.Finish()
	}
}

// ProgressFunc is a bar for a job that learns its total as it begins (an
// export, a local rebuild): report, called with the events done and the
// total, starts the bar on its first call and moves it on; stop clears it.
func ProgressFunc(w io.Writer, what string) (report func(done, total uint64), stop func()) {
	var p *Progress
	started := false
	return func(done, total uint64) {
			if !started {
				p, started = NewProgress(w, int64(total), what), true
			}
			p.Set(done)
		}, func() {
			p.Done()
		}
}

// PassBar is the simulator's bar of passes on a terminal (nil when w is
// none): passes/s and the time left, a line when the last pass is done.
// It is nil as an interface when w is not a terminal.
func PassBar(w io.Writer, passes int) *progressbar.ProgressBar {
	f := terminal(w)
	if f == nil {
		return nil
	}
	return progressbar.NewOptions(passes,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetItsString("passes"),
		progressbar.OptionShowIts(),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { pln(f) }),
	)
}
