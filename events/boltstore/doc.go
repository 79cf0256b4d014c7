// Package boltstore is meshplane's embedded default event store: one bbolt
// file, opened for writing by one process at a time (or read-only by many).
//
// # On-disk layout (a persisted format)
//
// The file holds four top-level buckets. Integers in keys and values are
// 8-byte big-endian, so bbolt's byte order is numeric order.
//
//	events   position → record          (events.AppendRecord bytes, Version and Position set)
//	streams  stream name → nested bucket, its sequence the stream's version
//	           version → position        (one nested bucket per stream)
//	ids      16-byte event id → position (idempotence and id conflicts)
//	chain    position → chain value     (layout 3: 32 bytes, then a CRC-32C of
//	                                     the position's 8 bytes and the value)
//	meta     "layout" → 1, 2 or 3       (anything else is refused)
//	         "head"   → position        (the last stored position; 0 when empty)
//	         "chainstart" → position    (layout 3: the first chained position)
//
// Layout 3 (every file created since records are chained): layout 2, and
// every position from chainstart on has its chain value (events' chain.go)
// in chain, written in the transaction that writes its record, from the
// value of the position before. A layout-2 file opened for writing becomes
// layout 3, chainstart its head plus one: its records keep their format and
// carry no chain value. The value is beside the record, not in it, since the
// record's bytes are what it covers; its CRC catches damage as a record's
// does (a read fails), while Verify recomputes the chain, which catches a
// record rewritten with a CRC made again. Layout 2: every record
// is format 3, with its CRC-32C (see events.AppendRecord), and a format-1
// record is damage. Layout 1 (older files): records are format 1, or format
// 2 when appended since; the file keeps layout 1, and is not chained.
//
// Invariants, kept by the single writer goroutine and checked at Open where
// cheap to do so:
//
//   - The keys of events are exactly 1..head: positions are dense. A record's
//     own Position field equals its key, and its Version equals its key in
//     its stream's bucket.
//   - A stream's version is the last key of its nested bucket (0 when the
//     bucket is absent); its keys are exactly 1..version.
//   - Every stored event has exactly one entry in ids.
//   - Every Append is all-or-nothing: its records and index entries are
//     written in one bbolt transaction, and a request that fails validation
//     writes nothing at all.
//
// Records are written with FillPercent 1.0 in events and in each stream's
// bucket, since their keys only ever grow; ids are UUIDv7, roughly
// time-ordered, so that bucket is filled to 0.9.
//
// # Positions and group commit
//
// Positions and versions are assigned inside the write transaction by one
// writer goroutine: the group commit of events/internal/groupcommit, which
// pgstore runs too (its package comment says what it guarantees), around
// this package's commit function. Append validates its batch
// (events.Prepare) in the caller's goroutine, then queues a request. The
// writer takes the first queued request, and every other request already
// waiting, and applies them in queue order in ONE bbolt Update: one commit,
// one pair of fsyncs, for the whole group. When fewer are queued than the
// writers it knows to be active, it waits up to a quarter of the last commit
// (5ms at most) for the rest, so that writers that each wait for their
// answer commit together rather than in two alternating halves. Each request
// is checked on its own inside the transaction (ids, then expected version)
// before anything of it is written, so a refused request writes nothing and
// does not affect the others, and two requests on one stream in one group
// see each other in order. A lone writer waits for nobody: its group is
// itself. If the commit fails, every request of the group gets that error
// and none is acknowledged.
//
// bbolt's own DB.Batch was not used: it holds every call for up to
// MaxBatchDelay (10ms by default) hoping for company, which a lone writer
// pays on every append, and when one function of a batch fails it re-runs
// the others and retries the failed one alone in its own transaction. Here a
// refused request simply writes nothing, so no re-run is ever needed, and the
// group is exactly what queued up during the previous commit.
//
// # Damage
//
// Records carry their own checksum, checked on every read; bbolt checksums
// only its meta pages, so everything else is checked by agreement: a record
// is at the position its key says, a stream's versions are dense and each
// points at the record of that stream and version, the stream's last
// version equals its bucket's sequence, a stream is reported absent only
// after every stream bucket's name was checked against its first record,
// the head equals the last position. bbolt trusts the pages it maps: on a
// damaged file it panics, faults on a page past the end of the file, or
// loops. So Open first walks the file's pages with plain reads (walk.go),
// proving every page bbolt can reach is in the file and reached once, and
// refuses a file whose meta pages are not both valid. A read-only Open
// walks only what it reads itself (the meta pages, the root, the meta
// bucket, the path to the last event), and each read walks, before it
// starts, the pages it can reach that were not walked yet: ReadAll from
// position p the events from p on, ReadStream the whole file (walktail.go).
// A call that reads the last thousand events of a million walks a few
// hundred pages, not the file. A writer opened with WalkInBackground (the
// controller's) reads so too while the walk of the whole file goes on
// beside it, and writes nothing until that walk has passed: bbolt's
// freelist is trusted only once every page is known to be reached once.
// So a restart that resumes from a checkpoint serves before the walk of a
// 27 GB file (about 96 s, read cold) ends. And every call into
// bbolt runs under guard, which turns a fault into a panic and a panic into
// an error. Any damage found is an error wrapping events.ErrDamaged, never a
// short or wrong answer. Verify checks everything, including bbolt's own
// tx.Check, and lists what is damaged.
//
// # Durability and locking
//
// bbolt's fsync stays on: an acknowledged append has been synced to disk.
// bbolt takes an exclusive flock on the file; a second Open, from another
// process or from this one, gives up after the lock timeout (100ms by
// default) with an error wrapping ErrLocked that names the file. Open with
// ReadOnly takes a shared flock instead: read-only stores open at once, but
// none beside a writer. A read-only Open never creates or writes the file,
// and no Open initialises an empty one.
package boltstore
