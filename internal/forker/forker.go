// Package forker starts child processes from one OS thread that lives as
// long as the process, so that a child's parent-death signal
// (SysProcAttr.Pdeathsig) means what it says: Linux sends it when the
// thread that forked the child ends, not the process, and the Go runtime
// may end a thread (one whose goroutine ends locked). mesh up's agents and
// the test hosts' processes are started through it.
package forker

import (
	"runtime"
	"sync"

	"meshplane/internal/safego"
)

// forker is the goroutine locked to its OS thread for the life of the
// process, on which Do runs what it is given.
var forker struct {
	once sync.Once
	reqs chan func()
}

// Do runs start (an exec.Cmd's Start) on the forker's thread and returns
// its error.
func Do(start func() error) error {
	forker.once.Do(func() {
		forker.reqs = make(chan func())
		safego.Go("forker", nil, func() error {
			runtime.LockOSThread() // never unlocked, and the goroutine never ends
			for f := range forker.reqs {
				f()
			}
			return nil
		})
	})
	errc := make(chan error, 1)
	forker.reqs <- func() { errc <- start() }
	return <-errc
}
