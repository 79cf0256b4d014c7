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

FILE is read once: a pipe, a FIFO, /dev/stdin or a device is copied to a
temporary file (in $TMPDIR, removed at the end) as it is read. A line
longer than 1114112 bytes (an event's largest payload and its envelope)
is no export's: the file is refused at that line (exit 3). SIGINT and
SIGTERM stop an import, also one waiting on a FIFO, with nothing appended
if it had not begun to append.

The whole file is checked before anything is appended, as the live path
checks what it appends: each line is one event, decoded strictly (no key
given twice, none in another case, no unknown envelope field), with an id
on no earlier line and a time; its type is known and its
schema no newer than this build's; its payload decodes to its type (a
field this build does not know is let by); its node is its stream's
(node-NAME; a module's on module-NAME; an operator's tokens on
token-NAME) and an agent's event is that node's; its actor holds no
control character; every node and module name is a valid name (a DNS
label); a setting, a module's spec, an artifact, a deploy or a token is
valid as its command would check it; an event of a node or a module comes
after the node's registration or the module's definition, and nothing of
it after its removal; a declaration (NODE/K) is composed once, and a push
or an apply report names one composed before it; an apply report's
counts add up, its declaration was pushed, it was not applied before its
compose, and its held_since names an earlier report of its node that
held something; a module is taken only on an adopted node. What a line
needs that the file does not say (the node is registered before the
file begins) is looked up in the store. A file with a bad line appends
nothing: every bad line is listed on stderr with its number and why, and
import exits 3 (refused). --skip-invalid appends the others instead,
listing what it skipped. Consecutive events of one stream are appended
together, in batches.

The chain values mesh export gives each event (its source store's hash
chain) must follow each other within the file: a line changed, added,
removed or moved is refused, naming the first line whose chain value
does not follow from the line before it. They are not kept: the store
chains what it appends after its own history, so mesh store head differs
after an import into a store with other history. A file written by hand
carries none and is not checked; an edited export is one when every
"chain" is removed from it. Payloads are stored in JSON's compact form
(a line written by hand with spaces is stored without them), so that the
store's export imports again.

It takes either form mesh export writes: a quiet apply.reported given with
its holds in full beside held_since (the default) is stored as the source
stored it, held_since alone, once its holds are found to be those of the
report held_since names (earlier in the file, or in the store); one with
other holds, or naming no report of its node, is a bad line. A --compact
export is stored as it is.

Import opens the store alone, never through a controller, and makes no
secret key; a data directory and its store are created only when there
is something to append. A progress bar (events/s, time left) is shown on
stderr when it is a terminal.`
