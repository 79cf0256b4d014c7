// Package events is meshplane's vocabulary: the event envelope, every event
// type and its payload, the codec that turns payloads into bytes and back
// (with schema versions and upcasters), and the Store contract that every
// event store implements, with its errors.
//
// Nothing in this package does I/O. Stores live in sub-packages, one per
// dependency (today memstore, in memory, and boltstore, a bbolt file), and
// all of them pass the one conformance suite in events/storetest.
//
// # Positions and versions
//
// Every stored event has a version, its place in its stream counted from 1,
// and a position, its place in the whole store counted from 1. Positions are
// dense and strictly increasing in commit order: a reader that has seen
// position p has seen every event at a position below p. A stream that has
// never been written has version 0, and the empty store has head position 0.
//
// Reads take the last position (or version) the caller has already seen and
// return what comes after it, so a checkpoint is simply the last position a
// consumer processed, and 0 means "from the beginning".
//
// # Idempotence
//
// Event ids are UUIDv7, chosen by whoever creates the event. Appending an
// event whose id is already stored, with the same content, is a no-op that
// returns the stored event (with its original version and position); this is
// what makes an agent's outbox deliver exactly once. The same id with other
// content is refused with ErrIDConflict. Every store also reads an event by
// its id alone (IDReader), through that same index.
//
// # Stored and public payloads
//
// Two payloads are public (docs/design.md, "The event vocabulary"): declaration.composed and
// apply.reported. A quiet apply.reported is stored compact (ApplyReported):
// a held list equal to one an earlier report of the node carried in full is
// left out, and held_since names that report by its apply id. held_since
// is an optional field of the public payload too, with this meaning: "the
// holds of this apply are those of the earlier apply held_since names". A
// surface that hands events out (mesh export, the API, scenario checks, the
// page) never gives held_since alone: it gives held in full beside it
// (Public, PublicApplyData; HeldOf finds the list through IDReader at any
// distance), so every event it hands out reads alone. mesh export
// --compact writes the stored form, and mesh import takes both, storing
// the public form compact again, byte for byte (StoredApplyData).
//
// A declaration.composed whose resources are those of its node's last
// declaration that carried them (a roster-only change: a name added,
// moved or removed elsewhere in the mesh) is stored by reference: its
// resources left out, and resources_since names that declaration by its
// event id ("the resources of this declaration are those of the
// declaration resources_since names"). Every surface that hands events
// out gives resources in full beside resources_since (Public,
// PublicResourcesData; ResourceBook and ResourcesOf resolve it, at any
// distance, through IDReader), and mesh import stores the public form by
// reference again, byte for byte (StoredResourcesData). A reference that
// does not resolve (a damaged or forged history) is read with the
// resources unknown and resources_unknown, a reader's note, saying why:
// never a failed read.
package events
