package importfile

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// Help is mesh import's help: what Check checks and Append appends.
const Help = `Import reads FILE, written by mesh export (JSON lines, one event a line),
and appends its events to the store in the file's order, keeping each
event's id, time, actor, correlation and payload; the store assigns
versions and positions. An event whose id the store holds already, with
the same content, is not appended again, so importing a file twice (or
after an import that stopped midway) appends only what is missing. An id
the store holds with other content is refused.

The whole file is checked before anything is appended, as the live path
checks what it appends: each line is one event, decoded strictly (no key
given twice, none in another case, no unknown envelope field), with an id
on no earlier line and a time; its type is known and its
schema no newer than this build's; its payload decodes to its type (a
field this build does not know is let by); its node is its stream's
(node-NAME; a module's on module-NAME) and an agent's event is that node's;
every node and module name is a valid name (a DNS label); a setting, a
module's spec, an artifact or a deploy is valid as its command would check
it; an apply report's counts add up and it names one of its node's
declarations; and an event of a node or a module comes after the node's
registration or the module's definition, earlier in the file or in the
store. A file with a bad line appends nothing: every bad line is listed on
stderr with its number and why, and import exits 3 (refused).
--skip-invalid appends the others instead, listing what it skipped.
Consecutive events of one stream are appended together, in batches.

It takes either form mesh export writes: a quiet apply.reported given with
its holds in full beside held_since (the default) is stored as the source
stored it, held_since alone, once its holds are found to be those of the
report held_since names (earlier in the file, or in the store); one with
other holds, or naming no report of its node, is a bad line. A --compact
export is stored as it is.

A progress bar (events/s, time left) is shown on stderr when it is a
terminal.`
