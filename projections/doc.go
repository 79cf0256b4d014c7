// Package projections is meshplane's read side: pure folds of the event
// stream into the views operators and scenario steps read (roster, status,
// holds, timeline, churn), and the Runner that feeds them from an
// events.Store with a checkpoint.
//
// # Folds
//
// A Projection folds one decoded event at a time: state + event → state. A
// fold does no I/O, reads no clock and touches no global; everything it knows
// comes from the events it was handed, in position order. So a projection
// rebuilt from position 0 is the same, byte for byte (see Projection's
// MarshalJSON), as the one that followed the store live, and two rebuilds are
// identical.
//
// The Runner decodes each event once, with an *events.Registry, and hands the
// envelope and the payload to every projection. Payloads are shared between
// projections: a projection may keep references into a payload but never
// modifies one.
//
// # Bad input
//
// Nothing in the stream is fatal to the read side, and nothing is dropped
// silently:
//   - an event whose type the registry does not know is counted per type
//     (Runner.Unknown) and skipped;
//   - a payload that does not decode is counted and kept, with its position
//     and error, for inspection (Runner.Failures);
//   - an event a projection cannot attribute (an apply report naming no node,
//     on a stream that is not a node's) is refused by that projection's Fold
//     with an error wrapping ErrUnattributed, and counted the same way.
//
// Users may append events by hand, so payloads may lack the added (non
// public) fields of events/types.go, and envelopes may lack actor or
// correlation: the folds fall back where they can (the digest of an apply is
// looked up from its declaration's composed event, a node is read from the
// stream name when the payload does not name it).
//
// # Compact apply reports
//
// An apply that changes nothing is reported compactly (events.ApplyReported):
// empty lists absent, a repeated held list named by HeldSince, digest and
// apply id left out. Status, holds and the timeline resolve each report with
// their own Reports before folding it, so they fold the full report and
// answer alike whichever form the stream holds (TestCompactReportsAnswerAsFullOnes).
// Churn reads no held list and falls back to the composed digest.
//
// # Declarations by reference
//
// A composed declaration after a roster-only change is stored by reference
// to its node's last one that carried the same resources
// (events.DeclarationComposed.ResourcesSince). A Runner resolves it before
// any projection folds it (events.ResourceBook: from the declarations it
// folded, else by id through its store), so every projection folds the
// resources in full (TestComposedByReferenceFolds). A reference that does
// not resolve (a damaged or forged history) is folded with the resources
// unknown and the note why (ResourcesUnknown, which the timeline's line
// says), never refused.
//
// # Runs
//
// api.Collapse and api.CollapseTouches turn runs of identical outcomes on a node
// (a year of quiet passes) into one entry with a Run: the count, the time
// range and the first and last positions. The CLI prints timeline and why
// collapsed, in text and in JSON; Query and Why return every entry. In
// memory, when the timeline has a reader of its store (SetRunReader: a
// Runner gives it its store), a node's quiet passes in a row are one run
// too, whatever their number: the entry before them, a count, the first
// and last positions, the first stream version and the time range (some
// 56 bytes a run, not a pass). The entries of a run are read back from the
// store by version when a query selects them one by one (or off the log,
// when many runs may answer: LogReader), so the timeline's
// memory grows with what changed, not with how long nothing did
// (timeline_runs.go; BenchmarkQuietDays). Without a reader every entry is
// kept, sharing everything but its position and time: some 34 bytes a
// pass.
//
// # Queries that stay fast as history grows
//
// The timeline indexes its entries by node, type, module and resource
// (int32 entry numbers, ascending, 4 bytes an entry per index it is in), and
// knows whether entry times are in order. Timeline.Query walks the
// narrowest index the filter names from its cursor (Filter.After and
// Before, exclusive positions; Forward for the oldest first), finds the
// cursor and the time range by binary search, and renders only the entries
// it returns: a page of 50 costs the same at the start or the end of a
// million events. The controller pages the API's timeline with it
// (controller/read.go).
//
// # Snapshots
//
// A local CLI call does not replay the log: SaveSnapshot writes the state
// of the projections a Runner feeds, with its position, counters and the id
// of the event at that position, to one file (versioned, CRC-32C, written
// to a temporary file and renamed); LoadSnapshot restores them and sets the
// runner there, and CatchUp folds on. The snapshot holds the small
// projections whole (status, holds, churn, each node's last 16
// declarations, the roster's last 16) and the timeline's fold state, not
// its entries: those stay in snapstore's bbolt file (timeline.db), read a
// page at a time. Why: status, holds and churn are a few kilobytes a node
// and load in milliseconds, while a million timeline entries are hundreds of
// megabytes, which no call should load for a page of 50 (see
// projections/snapstore for the files and their formats).
//
// What the snapshot leaves out costs nothing in practice but is never
// guessed: a later event naming a declaration older than the 16 kept marks
// the set Incomplete (snapstore then rebuilds from 0), and a roster loaded
// from a snapshot answers History, and Declaration or Diff of an older
// declaration, with ErrTrimmed (fold from 0, or ask the controller, whose
// projections are whole). A snapshot that is damaged, of another format
// version, or of another history (the event at its position is not the one
// it folded) is ErrSnapshot: a cache, never the truth.
//
// # Checkpoints
//
// A Keeper (checkpoint.go) keeps snapshots in the same format at several
// positions of one history: in memory (a controller's) or one file a
// checkpoint in a directory (DATA/checkpoints locally), each written to a
// temporary file and renamed. A Runner given one (Runner.Keep) saves a
// checkpoint every N events or T of event time as it folds, bounded in
// number and bytes, the old ones thinned so their spacing grows with age.
// FoldTo(pos) restores the nearest usable one at or before pos and folds
// on to pos: the state as it stood after event pos (mesh ... --at). One
// that is damaged, of another version or of another history is passed
// over with a note and removed, and the next older one used, down to a
// fold from 0.
//
// # Concurrency
//
// Every projection guards its state with its own sync.RWMutex: Fold and
// Reset take it for writing, queries for reading, so a projection can be
// read while the Runner feeds it. A query sees the projection after some
// whole event, never half of one; two queries on two projections may see
// different positions (Runner.WaitFor makes a reader wait for a position).
// Values returned by queries are copies or are never modified afterwards.
package projections
