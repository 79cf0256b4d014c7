package storeverify

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// Help is mesh store verify's help: what Data and Agent check.
const Help = `Verify checks the bolt event store (DATA/events.db) read-only: bbolt's pages,
walked one by one, bbolt's own consistency check, every record's checksum and
position, the stream and id indexes against the records, and the head.

Then the cache files local queries keep beside it: DATA/projections.snap
(whole: its checksum, its content, and that it is of this store's history) and
DATA/timeline.db (whole: bbolt's pages and consistency, every entry's checksum,
every index against the entries), and that the two agree. It says of each
whether the next status, node show, timeline or churn resumes from it or
rebuilds it from the event store, and why.

Exit 1 on any damage: of the event store (restore it from a copy: verify says
what is lost), or of a cache file (nothing is lost: the next query, or mesh
rebuild now, rebuilds it; damage there still says the disk or something on
the machine scribbles on the data directory). A cache file that is only
stale (another format version, another history, missing) is reported and is
no failure.

With --agent-data DIR it checks an agent's data directory instead (on the
node: mesh agent --data DIR): every report kept in DIR/outbox and the agent's
state, checksums included, without changing anything. A damaged file is named
(exit 1); the agent moves it aside (NAME.damaged) and logs it when it next
reads its outbox.

With --anchor LINE it checks the hash chain instead, of any store (bolt,
--store postgres://... or esdb://...): every record from position 1 against
its chain value, recomputed from its bytes and the value before it, and the
history against LINE, a head printed by mesh store head and kept off the host.
It names the first position that is not intact: a record changed (even with
its checksum made again), removed or moved, or a history cut short of the
anchor (the anchor is past the store's head: its newest records were removed,
which the chain alone cannot see). A history rewritten with its chain
recomputed (an edited export imported again, a swapped store, another store's
anchor) matches every record's value but not the anchor's: it says only that
the history does not end at the anchor's chain value (position N's chain is
X, the anchor says Y), as a head alone cannot locate the first position
rewritten. Records older than the chain (a store made before it) are read,
not checked: it says where the chain starts. Exit 1 when not intact; an empty
LINE (a head file that was not there) or one that does not parse is a wrong
command line (exit 2).`

// HeadHelp is mesh store head's help.
const HeadHelp = `Head prints the head of the store's hash chain as one line:

  meshplane-head position=N chain=sha256:HEX at=TIME

the last position, its chain value (SHA-256 over the value before it and the
record's bytes; see events/chain.go) and its event's time (RFC 3339, UTC).
Keep it off the host (a ticket, a log shipper, a second machine): mesh store
verify --anchor LINE later proves the history up to it intact, or names where
it is not. It reads the store itself (read-only): a bolt file held by a
running controller is locked, so run it beside a stopped one, or against
PostgreSQL (--store postgres://...) or KurrentDB (--store esdb://...), which
any number of readers share.`
