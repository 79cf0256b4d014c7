//go:build !race

package bus_test

// raceEnabled says the tests run under the race detector.
const raceEnabled = false
