// Package controllerd assembles the controller process (`mesh up`): the event
// store, the bus (embedded, or an external NATS cluster), the controller
// core (package controller), the report door's wiring, the leader election
// of a shared store, the metrics and the HTTP API with the page. cmd/mesh
// parses the flags into a Config and calls Run; nothing of the assembly is
// left there.
//
// # Start and stop
//
// Run starts the parts in this order, each only once the one before it
// works:
//
//  1. the store, opened for writing from Config.Store (package storeurl):
//     the bolt file DATA/events.db, held locked, or a URL; a PostgreSQL
//     store is also the Leadership the controllers sharing it elect a
//     leader with;
//  2. the API token (DATA/api-token, made on first start);
//  3. the controller core (controller.New, a standby under a Leadership),
//     its projections resumed from the newest checkpoint in
//     DATA/checkpoints/controller that matches the store and folded on to
//     the head (controller.Resume: a restart folds what came after the
//     checkpoint, not the history; one that does not match is passed over
//     with a logged note, down to a fold from 0). Its publisher waits for
//     the bus (laterPublisher);
//  4. the bus: the embedded server on DATA/bus (BusDir), started with the
//     revocation list the resumed projections hold (a checkpoint carries
//     it, so no start reads the whole store for it), or the external
//     cluster's configuration, and the controller's connection to it; the
//     agents' heartbeats handed to the controller (liveness.go), and its
//     run: the projections live, the interval passes, the liveness checks
//     (Config.SilentAfter);
//  5. the metrics follower;
//  6. the report consumer (the door: controller.RecordReport): at once
//     without a Leadership; under one, once the lock is held. A free lock
//     is taken before the API serves, so a lone controller leads from its
//     first request; one held elsewhere is waited for in the background,
//     the controller a standby meanwhile (reads answered, writes refused);
//  7. the API under /v1 and the page at /, on Config.Listen;
//  8. DATA/controller.json, then Config.Ready.
//
// It stops them in the reverse order when ctx ends (nil), when a part fails
// (its error), or when the leader lock is lost (an error wrapping the
// lock's: another controller may lead already, so this one stops at once,
// and its supervisor starts it again as a standby). Every part is stopped
// whatever made Run return; the errors of the stops are joined to its own.
//
// # Panics
//
// Each goroutine Run starts has a boundary of package safego (see its
// table): a handler's panic (controller.pass, controller.push, bus.report,
// api.request, web.feed) is logged with its stack and counted, and the
// controller carries on. A loop's (controller.run, controller.projections,
// controller.lead, api.serve) is that loop's error: Run stops every part
// as for any failure and returns it, and mesh exits 70. The metrics
// follower's (controller.metrics) stops the process through safego.Fatal,
// which cancels the root context Run was given.
package controllerd
