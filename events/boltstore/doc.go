// Package boltstore is meshplane's embedded default event store: one bbolt
// file, opened by one process at a time.
//
// # On-disk layout (a persisted format)
//
// The file holds four top-level buckets. Integers in keys and values are
// 8-byte big-endian, so bbolt's byte order is numeric order.
//
//	events   position → record          (events.AppendRecord bytes, Version and Position set)
//	streams  stream name → nested bucket
//	           version → position        (one nested bucket per stream)
//	ids      16-byte event id → position (idempotence and id conflicts)
//	meta     "layout" → 1               (this layout; anything else is refused)
//	         "head"   → position        (the last stored position; 0 when empty)
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
// writer goroutine. Append validates its batch (events.Prepare) in the
// caller's goroutine, then queues a request. The writer takes the first
// queued request, and every other request already waiting, and applies them
// in queue order in ONE bbolt Update: one commit, one pair of fsyncs, for the
// whole group. Each request is checked on its own inside the transaction
// (ids, then expected version) before anything of it is written, so a
// refused request writes nothing and does not affect the others, and two
// requests on one stream in one group see each other in order. A lone writer
// waits for nobody: its group is itself. If the commit fails, every request
// of the group gets that error and none is acknowledged.
//
// bbolt's own DB.Batch was not used: it holds every call for up to
// MaxBatchDelay (10ms by default) hoping for company, which a lone writer
// pays on every append, and when one function of a batch fails it re-runs
// the others and retries the failed one alone in its own transaction. Here a
// refused request simply writes nothing, so no re-run is ever needed, and the
// group is exactly what queued up during the previous commit.
//
// # Durability and locking
//
// bbolt's fsync stays on: an acknowledged append has been synced to disk.
// bbolt takes an exclusive flock on the file; a second Open, from another
// process or from this one, gives up after the lock timeout (100ms by
// default) with an error wrapping ErrLocked that names the file.
package boltstore
