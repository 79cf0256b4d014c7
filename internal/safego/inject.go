//go:build !meshplane_panictest

package safego

// inject is the test build's panic injection (inject_panictest.go); in
// every other build it does nothing.
func inject(string) {}
