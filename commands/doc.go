// Package commands is meshplane's write side: the node and module aggregates
// as pure decide(state, cmd) → events and evolve(state, event) → state, the
// handler that loads a stream, decides and appends with the expected version,
// and compose, which turns the mesh's state into a node's Declaration.
//
// decide, evolve and compose are pure: time, ids and the actor arrive with
// the command, and every read compose makes goes through the Reader it is
// handed, which may fail. The Handler is the shell that does the I/O.
package commands
