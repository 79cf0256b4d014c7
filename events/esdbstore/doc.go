// Package esdbstore is an events.Store on KurrentDB (formerly EventStoreDB),
// through github.com/EventStore/EventStore-Client-Go/v4: the store for
// operators who already run one. Open takes a KurrentDB connection string
// (esdb://host:2113?tls=false, esdb+discover://..., with credentials if the
// server wants them).
//
// # Streams, versions, ids
//
// Each stream s of the contract is the KurrentDB stream prefix+s (the prefix
// is "mesh-" unless WithPrefix says otherwise), so meshplane shares a server
// with other applications without reading their events. Stores that share a
// server must use prefixes that are not prefixes of one another, and nothing
// but esdbstore may write to the prefix's streams: an event there without
// esdbstore's metadata is refused, loudly, by every read.
//
// KurrentDB counts stream revisions from 0, the contract counts versions
// from 1: version v is revision v-1. Expected versions map onto the client's
// expected revisions: events.Any is esdb.Any{}, events.NoStream is
// esdb.NoStream{}, events.Exactly(n) (n >= 1) is esdb.StreamRevision{n-1}.
//
// Every event is written with its own events.Event.ID as its KurrentDB event
// id. The client would invent one for an unset id, and a retried append
// would then write the events twice; events.Prepare refuses an unset id
// before anything is sent. Event types starting with "$" are refused: the
// server reserves them, and reads of $all skip them.
//
// The envelope fields KurrentDB does not hold natively (schema, at with its
// nanoseconds, actor, causation, correlation) travel in the event's metadata
// JSON; its format is documented on meta, in meta.go.
//
// # Positions
//
// The contract's positions are dense (1, 2, 3, ... across the store, Head
// the last), and its Subscribe checkpoints are those positions. KurrentDB's
// are not: an event's place in $all is a (commit, prepare) pair of byte
// offsets in the server's log, with gaps between events, shared by other
// applications' events and the server's own ($-typed) ones. So a commit
// position cannot be used as is, and a position written into the event's
// metadata could not be assigned atomically across writers. Instead:
//
//	position p  =  the p-th event of this store (stream with the prefix,
//	               type not starting with "$") in $all order
//
// $all is append-only and totally ordered, so every reader, in every
// process, numbers the same events the same way, and a position never
// changes. The store keeps the table p -> (commit, prepare, event id, chain
// value): in memory as it reads, and in KurrentDB, in a stream of its own,
// so that an open need not count the whole log again.
//
// Reads and subscriptions go through the table: ReadAll(after) reads $all
// from the (commit, prepare) of position after, Subscribe(after) opens a
// catch-up subscription to $all whose From is that pair (exclusive) and
// counts the store's events it delivers from there; after 0 is esdb.Start{}
// (not the pair (0, 0), which is the first event of a fresh server's log).
// The commit position is the checkpoint the subscription resumes from; the
// prepare position orders the events of one transaction, which share their
// commit position. Both are kept whole, as uint64.
//
// KurrentDB bounds one append by its MaxAppendSize (1 MiB by default): a
// batch whose events and metadata exceed it is refused by the server, and
// Append returns the client's error; split such batches, or raise the
// server's limit.
//
// Deleting, truncating ($maxCount, $maxAge, $tb) or scavenging the store's
// streams removes events from $all and renumbers every later position: do
// not, for a meshplane store (reads that find the count and the table
// disagree fail, rather than hand out wrong positions).
//
// # The position table
//
// The table's stream is the prefix followed by TableStream
// ("mesh-$positions-chained"; Append and ReadStream refuse that name, and
// LegacyTableStream's). Each of its events is one chunk: the entries of 4096
// consecutive positions, each with its chain value (see The hash chain), and
// a directory of where every chunk before it begins, as binary data under a
// $ event type, which no store counts among its events (an older build's
// neither); the format is documented in table.go. Chunk k is revision k of
// the stream, written with expected revision k-1, so chunks follow each
// other with no gap or overlap whoever writes them.
//
// Open reads the last chunk (one event, read backwards from the end),
// checks that $all still holds its last position's event where the chunk
// says (and its chain value), and reads $all on from there: an open costs
// one chunk and what a read of the events since it costs, not a read of the
// whole log. A store written without a table (by an older build), or whose
// table an older build wrote (see The hash chain), is read from the start
// once, and that open writes the table.
//
// Whichever store (of any process) has read a chunk's worth of positions
// past the last chunk writes the next one, after its read of $all. If
// another store wrote it first, KurrentDB refuses the write as a wrong
// expected revision, and the store reads that chunk back and takes it, once
// it has checked that the chunk agrees with what it read of $all itself.
// The table is a cache of what $all says: a chunk that cannot be written
// (the server refuses it, say: with the empty prefix the table stream is
// a system stream, which a secured server lets only admins write) leaves
// the store working as before, reading $all from the last chunk written.
// A chunk that does not decode, or that disagrees with $all, is damage: the
// call fails with an error wrapping events.ErrDamaged that names the chunk.
//
// Chunks before the last are read when a call needs them: ReadAll or
// Subscribe from a position in one, ReadStream of events in one, and the
// first append of a process, whose id check (see Idempotence) needs every
// id of the store: 64 bytes a position, not the events. A process keeps
// what it has read (about 100 bytes a position: 100 MB for a million) and
// what it reads on. An append learns its positions by reading $all on from
// the table's end until its events are numbered (concurrent appends share
// those reads), so it costs at least two round trips.
//
// # The hash chain
//
// Every position has its chain value (events/chain.go: SHA-256 over the
// value before it and the event's record, with its version and position),
// from position 1. A position is known only once $all has numbered the
// event (see Positions), so the value cannot travel in the event's
// metadata, written before: the reader that numbers an event computes it,
// from the value before it, as it counts the position, and every reader, in
// every process, computes the same. So it needs the event itself: the read
// of $all that numbers events decodes each one, and an event in the
// prefix's streams that is not esdbstore's fails it (every read would
// refuse it anyway). The values are kept in the position table's entries,
// with the value before each chunk in its header and in the directory.
// Reads hand out the table's values, and compute them (as numbering does)
// for events newer than the table.
//
// The chunks are checked against what a reader computes where it has read
// the events: an open checks that the last chunk's last entry chains from
// the entry before it (recomputing it from its event, which it reads to
// resume), and a store taking a chunk another wrote first compares every
// value with its own; a chunk read when needed must begin with the value
// the directory says and end with the one the next chunk follows. A chunk
// that fails any of these is damage: events.ErrDamaged, naming the chunk.
// A value wrong inside a chunk that no reader of this process computed is
// not found by reads; it is what mesh store verify finds (storeverify.Chain
// recomputes every value from position 1), naming its position. A chunk
// another store wrote past what this one had read is taken as it is, its
// values too, as its positions are.
//
// KurrentDB rewrites no event in place; what the chain adds here is a
// check of the table, and, against a head kept off the host (ChainHead,
// mesh store head), that the history read through this store is the one
// the head was taken of: no event removed (a scavenge, a truncation), the
// newest included.
//
// An older build's table, in chunks of the format before the chain, is in
// LegacyTableStream ("mesh-$positions"). A store with no chunk in
// TableStream and one there reads its last chunk, reads $all from the start
// (once: chaining from position 1 needs every event), checks that $all holds
// the old chunk's last event where it says (else damage, naming the old
// chunk), and writes TableStream's chunks; it never writes the old table,
// which an older build still running keeps writing, and reading, as before.
// So the chain of a KurrentDB store always starts at position 1, unlike
// bolt's and PostgreSQL's for a store made before the chain: the events are
// all there to compute it from.
//
// # Idempotence
//
// The contract: re-appending ids that are all stored with the same content is
// a no-op returning the stored events, whatever the expected version; an id
// stored with other content, or a batch mixing stored and new ids, is
// ErrIDConflict. KurrentDB's own idempotence is narrower: it recognises a
// batch only in the same stream, at the same expected revision (or, with
// any, within a cache), and never compares content. So Append works on top:
//
//   - Appends of this process that share an id run one after the other, and
//     each looks its ids up in the table first: if they are stored, it reads
//     the stored events back and decides by events.AlreadyStored, as every store
//     does, and sends nothing.
//   - Ids another process stored, not yet in the table, reach the server.
//     If KurrentDB recognises the batch it writes nothing and reports no
//     position of ours; Append then brings the table up to date, reads the
//     stored events back and compares them (same: they are returned;
//     otherwise ErrIDConflict). On a wrong expected version Append looks the
//     ids up again in the table (other calls may have grown it) before it
//     reports the *events.VersionError.
//   - Two processes appending the same new id to two different streams at
//     the same instant can both succeed, and a replay through a process that
//     has not yet read the first write is reported as the wrong expected
//     version it is: KurrentDB has no cross-stream uniqueness to enforce
//     the contract with.
//
// Appends to one stream from one process also run one after the other, and
// the store remembers the highest version it has seen each stream at (by
// appending, reading, or being refused): an expected version below it is
// refused at once, without a round trip, with that version as Actual.
// Otherwise Actual is the current revision the server reports, plus one.
//
// # Errors
//
// A wrong expected version is a *events.VersionError (errors.Is
// events.ErrWrongExpectedVersion); a call on a closed store, or one blocked
// when Close is called, returns events.ErrClosed; a done context returns its
// error; a server that cannot be reached (gRPC unavailable, deadline, no node
// found) is ErrUnavailable, wrapping the client's error. After the client
// gives up on a node (it closes itself once discovery fails), the store
// replaces it with a new client on the next call.
//
// The package's tests run the events/storetest suite against a gRPC double
// of a KurrentDB node (esdbdouble, imported by tests only; not KurrentDB) in every run, and
// against a real server when MESH_ESDB_URL is set.
package esdbstore
