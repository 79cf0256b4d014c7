package export

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// Help is mesh export's help: what Write writes.
const Help = `Export writes every event after position --since (default 0: all) to
stdout, or to --file, as JSON lines: each line is one event's envelope
(id, stream, version, position, type, schema, at, actor, causation,
correlation) with its payload as stored in data. It reads the store
directly (any backend, --store); a store a running controller holds is
refused: export from its database (--store postgres://...), or stop it.
A progress bar (events/s, time left) is shown on stderr when it is a
terminal.`
