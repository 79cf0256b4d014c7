// Package readme holds the tests that keep README.md and docs/ true to the
// tree: the README's layout table names every package of the module, and
// every path it names exists; no file of the repository refers to one
// outside it; every relative markdown link names a file (and a heading)
// that exists; docs/design.md names every event type of the registry and
// its fields. It has no code of its own.
package readme
