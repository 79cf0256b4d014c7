package export

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// Help is mesh export's help: what Write writes.
const Help = `Export writes every event after position --since (default 0: all) to
stdout, or to --file, as JSON lines: each line is one event's envelope
(id, stream, version, position, type, schema, at, actor, causation,
correlation, and its chain value when the store chains) with its public
payload in data: as stored, but a quiet
apply.reported, which the store keeps with held_since (the apply id of the
earlier report whose holds it repeats) instead of its holds, is given with
its holds in full beside held_since, and a declaration.composed stored by
reference (resources_since: the id of the node's declaration whose
resources it repeats, after a roster-only change) is given with its
resources in full beside resources_since (resources_unknown, the reason,
when the store does not hold what it names), so that every line reads
alone. --compact writes each payload as stored instead (held_since and
resources_since alone: smaller, and what mesh import stores either way). It reads the store
directly (any backend, --store); a store a running controller holds is
refused: export from its database (--store postgres://...), or stop it.
A progress bar (events/s, time left) is shown on stderr when it is a
terminal.

A quiet apply.reported whose held_since names no held list (history
written past the report door: a random id, another node's report, one
that held nothing) is written as stored, held_since alone with no held,
which reads as "holds unknown"; export names each on stderr (position,
stream, held_since) and exits 0. mesh store verify names them too.`
