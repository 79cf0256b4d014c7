// Package commands is meshplane's write side: the node and module aggregates
// as pure decide(state, cmd) → events and evolve(state, event) → state, the
// handler that loads a stream, decides and appends with the expected version,
// and compose, which turns the mesh's state into a node's Declaration.
//
// decide, evolve and compose are pure: time, ids and the actor arrive with
// the command, and every read compose makes goes through the Reader it is
// handed, which may fail. The Handler is the shell that does the I/O.
//
// Input is checked at the door: names, settings, module specs (clean paths,
// each declared once) and recorded digests are refused with a *Rejection
// before anything is read under them or appended, and Handler.ExecuteAll
// checks every command of a batch before it appends any. A command whose
// work is already done appends nothing and is no error (see Decide).
// History is never re-checked: evolve folds whatever the stream holds.
package commands
