// Package controller is the core of meshplane's daemon: it owns an event
// store (any events.Store), the write side over it (commands.Handler with
// the wall clock), the projections kept live by a runner following the
// store, and a Publisher the bus implements. It implements api.Service, so
// the HTTP API (api/httpapi) and a CLI on a local store answer from the
// same code; wire.go is the one place the projections' and the agent's
// structs become the API's own.
//
// It is handed its adapters (the store, the Publisher, a DryRunner) and
// imports none of them, nor HTTP, a driver or the bus (deps_test.go holds
// it to that): besides the core (events, declaration, commands,
// projections) it imports api, for the Service it implements and its
// request and response types, and wire and declaration/nodeplan, for a
// plan's preview (wire.Preview, nodeplan.Declared): never the agent. Its
// only I/O of its own is
// controller.json (info.go).
//
// Checkpoints (at.go, resume.go): the runner keeps checkpoints of the
// projections as it folds (Config.Checkpoints; in memory unless given: the
// daemon keeps them on disk), from which At folds a past moment and Resume
// restores the live projections at a start, folding only what came after.
//
// Reads are read-your-writes: a command returns once the projections have
// folded what it appended, and a query first waits for the projections to
// reach the store's head as it was when the query began.
//
// Pushes: after a command, the controller composes every node the command
// may have changed (the registered node for a registration; every node for
// anything else, since routes reach every roster) and pushes each
// declaration whose digest differs from the last one handed to the bus. Run
// does the same for every node at start and on every interval (default 5m),
// so an idle mesh appends nothing. Push (mesh push) pushes now, changed or
// not. A compose that fails is recorded once per distinct failure. A push
// of many nodes runs in three stages over all of them at once (pushNodes,
// up to pushWorkers): compose and record declaration.composed, hand every
// declaration to the bus (one pipelined batch when the Publisher is a
// BatchPublisher), record each put's outcome; each node's push is recorded
// on its own stream exactly as it would be alone, its declaration.composed
// always stored before its declaration is on the bus, and the composes of
// one push share a commands.MeshCache: each node and module is
// read once and each node planned once, and each compose loops only over
// the nodes that can change another node's declaration: registering N
// nodes with no module costs O(N), not O(N²) (when every node serves a
// route, every roster lists them all: N² routes copied, no more plans).
//
// Reports: the bus consumer hands each agent report to RecordReport, which
// records it exactly once (its apply id), through the report door
// (commands.Handler.RecordApply, the facts about the report's declaration
// read from the projections): a report it refuses is recorded as
// report.refused (RecordRefusal, once per message) and never retried. The
// bus's own refusals (a message that does not decode) go to RecordRefusal,
// and the rate limit's summaries to RecordThrottled.
//
// Liveness (liveness.go, Config.SilentAfter): the bus hands each agent
// heartbeat to Heard, kept in memory; status shows each node's last seen
// and sync "unreachable" past the bound, and the leader records only the
// transitions, node.went-silent and node.came-back. A node never heard (no
// heartbeat, no report in history: its agent not started yet) is never
// unreachable nor silent; its sync stays unreported.
//
// controller.json (WriteInfo, ReadInfo) tells a CLI that finds the store
// locked where the controller listens.
//
// The wiring (flags, the bolt store, the NATS bus, the HTTP listener) lives
// in cmd/mesh.
package controller
