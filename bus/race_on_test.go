//go:build race

package bus_test

// raceEnabled says the tests run under the race detector, which allows at
// most 8,128 live goroutines: each agent's connection has a few.
const raceEnabled = true
