// Package pgstore is an events.Store on PostgreSQL (pgx/v5 and pgxpool),
// for operators who outgrow one bbolt file, and for two controllers sharing
// one database, one of them leading (Store.AcquireLeader).
//
// # Schema (a persisted format)
//
// The schema is embedded (migrations/NNNN_what.sql) and versioned in the
// table schema_migrations (version, name, applied_at). Open migrates the
// database unless told not to (WithoutMigrate); Migrate does it alone. Each
// migration is applied once, in one transaction with its record, under a
// transaction-scoped advisory lock, so running it twice, or from two
// processes at once, applies each migration exactly once. A database that
// holds migrations this build does not know is refused (ErrSchemaTooNew).
//
// One table holds the log:
//
//	events(position bigint PK, id uuid UNIQUE, stream text, version bigint,
//	       type text, schema int, at_ns bigint, actor text, causation text,
//	       correlation text, data bytea, UNIQUE (stream, version))
//
// at_ns is the event's time in Unix nanoseconds (timestamptz keeps only
// microseconds, and the contract keeps nanoseconds); data is the payload's
// bytes exactly as appended. Strings are text, so a name holding a NUL byte,
// which events.Validate allows but PostgreSQL's text does not, fails its
// append with the server's error and writes nothing.
//
// Invariants: positions are exactly 1..head, with no hole, ever (not even
// a transient one, see below); a stream's versions are exactly 1..its
// version; rows are never updated or deleted.
//
// # Positions commit in order: no reader skips or repeats an event
//
// A position taken from a sequence is handed out when a transaction asks,
// and committed when that transaction commits; two writers commit in either
// order, so a reader can see position 11 before 10 commits, move its cursor
// past 10, and never see it. Published event stores have shipped this bug.
//
// Here every append transaction first takes one transaction-scoped advisory
// lock (pg_advisory_xact_lock), and only then, in a statement of its own and
// so in a READ COMMITTED snapshot taken after the lock, reads the head
// (max(position)) and the versions of its streams, and writes its rows at
// head+1... The lock is released only after the transaction has committed,
// and PostgreSQL makes a commit visible (ProcArrayEndTransaction) before it
// releases the transaction's locks. So the next writer can take positions
// only after every lower position is visible, and every snapshot sees a
// prefix 1..k of the log. A reader that follows positions (Subscribe,
// ReadAll paged by position) therefore never skips one, and since positions
// are dense it can check (events.Follow does) that it never repeats one.
// TestNoReaderSkipsOrRepeats holds it: 8 writers on two stores for 10s, two
// subscribers, one order.
//
// The price is that appends to one database are serialised for the length
// of a transaction, commit included. Within a process that is paid back by
// group commit (events/internal/groupcommit's, which boltstore runs too):
// one committer goroutine takes every Append queued while the previous
// transaction ran and commits them in one transaction, each
// request decided on its own, in queue order (ids, then the expected
// version; a refused request writes nothing and does not affect the
// others). When fewer requests are queued than the writers it knows to be
// active (those of the last group and those that queued during its
// commit), it waits up to a quarter of the last commit for the rest, so
// that writers that each wait for their answer commit together rather
// than in two alternating halves.
//
// Round trips: a group is one round trip, in one implicit transaction,
// when the committer can predict it: the lock, and the group's accepted
// rows at the positions, versions and chain values that follow its last
// commit (the committer keeps that commit's head, the head's chain value
// and the versions of the streams it read or wrote: its tail). Up to 64
// rows go by one pipelined INSERT ... SELECT (from unnest() for more than
// one), which writes only if the head, read in its own snapshot after the
// lock, is still the tail's, with the tail's chain value; from 64 rows, by
// one simple query of the lock, a guard that fails the transaction unless
// the head is the tail's, and a COPY of the rows in its binary format,
// sent without waiting for the server. Since rows are never updated or
// deleted, the head unmoved proves nothing was appended since, so every
// version the tail holds is still its stream's. If another writer appended
// (another process, or the other of two controllers), nothing is written
// and the group goes as below. A group with a stream the tail does not
// know, or a request the tail refuses by its version (it may be a replay),
// goes as below at once: an explicit transaction of two round trips
// (BEGIN, the lock, the reads of the head, its chain value and the
// streams' versions; then the rows, by COPY from 64 rows, and COMMIT). Ids
// are not looked up first, since almost every append carries new ones: a
// request refused by its expected version (it may be a replay, which
// succeeds whatever it expected) is decided again with its ids looked up,
// and an insert that hits a stored id makes the group start over with
// every id looked up. Any failure drops the tail: the next group reads the
// head.
//
// The alternative, reading below pg_snapshot_xmin with a
// (pg_current_xact_id(), id) cursor, lets writers run in parallel but
// cannot give Append the dense position the events.Store contract returns.
//
// # Expected versions, idempotence, unique violations
//
// Under the lock, a request's expected version is checked against the
// stream's max(version) in the same transaction, after the lock, that
// writes it. The unique
// constraints on (stream, version) and id are the backstop for a writer that
// bypasses the lock (another program, or an old build): a unique violation
// is never taken as success. The group is retried request by request, and a
// request whose own transaction still violates (stream, version) gets a
// *events.VersionError carrying the stream's actual version; a violated id
// gets ErrIDConflict.
//
// # Reads
//
// Every column is read in the binary format, and a page's rows share one
// string for each distinct stream, type, actor and correlation. ReadAll
// copies the payloads of a page into one buffer; ScanAll (events.Scanner)
// hands each row to a function with its payload still in the connection's
// buffer, which is how a projection rebuild reads: it decodes each payload
// as it comes, and never copies one.
//
// # Subscriptions
//
// Subscribe is events.Follow over ReadAll. Subscribers wait on one signal,
// raised by this store's commits, by a NOTIFY on channel pgstore_events
// received on a dedicated LISTEN connection (commits of other processes:
// each store notifies after its commits, at most once every 5ms, outside
// the append's transaction so that no append waits for it), and by a poll
// ticker (WithPollInterval, 1s by default), which
// covers a lost LISTEN connection or a notification missed in an outage.
// A notification carries nothing but a wake-up: events are always read from
// the table. A read that cannot reach the server is retried at the poll
// interval (WithRetryHook sees each failure), and the subscription goes on
// from its last delivered position: an outage delays it, and costs it
// neither a gap nor a repeat.
//
// # Faults
//
// While the server is down, Append, ReadStream, ReadAll, ScanAll and Head fail at
// once with an error naming the store and the stream ("pgstore: append
// node-novox: ..."); they do not retry. An Append whose COMMIT was sent but
// not answered has an unknown outcome: appending the same events again is
// safe, since appends are idempotent by event id.
package pgstore
