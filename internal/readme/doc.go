// Package readme holds the tests that keep README.md true to the tree: its
// layout table names every package of the module, and every path it names
// exists. It has no code of its own.
package readme
