package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a long job (rebuild, import, export) on stderr: events
// done of the total, events/s and the time left. It shows nothing when
// stderr is not a terminal (a pipe, a file, a test), so scripts and logs
// get no control characters. A nil *progress is a quiet one.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress starts a bar for total events (-1: not known, a spinner),
// described by what, when w is a terminal; else a quiet one.
func newProgress(w io.Writer, total int64, what string) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
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

// set moves the bar to n events done.
func (p *progress) set(n uint64) {
	if p != nil {
		_ = p.bar.Set64(int64(n))
	}
}

// add moves the bar on by n events.
func (p *progress) add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

// done clears the bar.
func (p *progress) done() {
	if p != nil {
		_ = p.bar.Finish()
	}
}

// progressFunc is a bar for a job that learns its total as it begins (an
// export, a local rebuild): report, called with the events done and the
// total, starts the bar on its first call and moves it on; stop clears it.
func progressFunc(w io.Writer, what string) (report func(done, total uint64), stop func()) {
	var p *progress
	started := false
	return func(done, total uint64) {
			if !started {
				p, started = newProgress(w, int64(total), what), true
			}
			p.set(done)
		}, func() {
			p.done()
		}
}
