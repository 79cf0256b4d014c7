// Package metrics is meshplane's Prometheus instrumentation: the
// controller's metrics (Controller) and an agent's (Agent), each on a
// registry of its own (never the global default), served by Handler.
//
// Nothing in the core is instrumented in place. The controller's metrics
// come from three seams:
//
//   - the event store, wrapped by Controller.Store: every Append is timed
//     (meshplane_store_append_seconds) and its failures counted;
//   - the event stream, followed by Controller.Run with a projections
//     runner of its own from the store's head: every event appended is
//     counted by type, and pushes and apply outcomes are read from their
//     events, so the counters say what the store holds, whichever
//     controller appended it;
//   - the live projections, read at scrape time (Controller.Watch): the
//     projection lag, holds by module, the churn loops active, and each
//     node's health and last apply (nodes.go), its compose axis (a
//     failed compose, its modules pending); and the controller's
//     liveness (Seen): each node's last heartbeat heard, and whether it is
//     unreachable;
//   - the report door, told by the bus consumer's wiring: every report
//     refused for good, by reason (Controller.ReportRefused), and every
//     report deferred by its node's rate limit (Controller.ReportsDeferred).
//
// No value from outside reaches a counter unchecked: a count below zero
// (history may hold a report the door would refuse) adds nothing, never
// panics (a Prometheus counter panics on a negative Add).
//
// An agent's metrics (Agent) count its applies by outcome and its bus
// errors (Agent.Reporter wraps its Reporter), and read its outbox's depth at
// scrape time.
//
// # Metrics
//
// Controller (mesh up, at /metrics on the API's listener):
//
//	meshplane_events_appended_total{type}          counter   events appended since the controller started
//	meshplane_store_append_seconds                 histogram one Append call, success or not
//	meshplane_store_append_errors_total            counter   Append calls that failed
//	meshplane_projection_lag_events                gauge     the store's head minus the projections' position
//	meshplane_projection_lag_seconds               gauge     how long ago the oldest event not yet folded was made (0 when caught up)
//	meshplane_projection_position                  gauge     the projections' position
//	meshplane_store_chain_head{chain}              gauge     the store's hash chain head: its position, labelled with its chain value
//	meshplane_pushes_total{result}                 counter   pushed, push-failed, compose-failed
//	meshplane_apply_outcomes_total{kind}           counter   resources per outcome in apply reports: created, updated, replaced, removed, held, failed, unchanged
//	meshplane_holds{module}                        gauge     resources held now (latest apply of each node), per module
//	meshplane_churn_loops_active                   gauge     nodes in a churn loop now
//	meshplane_node_compose_failed{node}            gauge     1 when the node's latest compose failed (until a compose succeeds), else 0
//	meshplane_node_modules_pending{node}           gauge     modules assigned to the node and absent from its applied declaration
//	meshplane_reports_refused_total{reason}        counter   report messages refused for good: too-large, malformed, wrong-node,
//	                                                         bad-counts, unknown-declaration, bad-time, apply-id-conflict,
//	                                                         unknown-node (other: never, unless a caller names another)
//	meshplane_reports_deferred_total               counter   reports deferred on the bus by their node's rate limit (recorded in their turn)
//	meshplane_panics_total{where}                  counter   panics recovered, by the goroutine boundary that recovered them (package safego lists them)
//	meshplane_node_health{node,health}             gauge     1 for the node's health now, 0 for each other state (HealthStates)
//	meshplane_container_state{node,module,container,state}  gauge  1 for the state the engine runs each declared container in (the agent's last container.* event)
//	meshplane_container_restarts{node,module,container}     gauge  a crash-looping container's restarts since its episode began, else 0
//	meshplane_node_last_apply_timestamp_seconds{node} gauge  when the node's last recorded apply was made
//	meshplane_node_last_seen_timestamp_seconds{node}  gauge  the node's last heartbeat the controller heard (none before one)
//	meshplane_node_unreachable{node}               gauge     1 when not heard within mesh up --silent-after
//	meshplane_build_info{version,goversion}        gauge     1, labelled with the build
//
// Agent (mesh agent --metrics ADDR, at /metrics):
//
//	meshplane_agent_outbox_depth{node}             gauge     reports kept in the outbox, not yet taken by the mesh
//	meshplane_agent_applies_total{node}            counter   applies made
//	meshplane_agent_apply_outcomes_total{node,kind} counter  resources per outcome, as above
//	meshplane_agent_bus_errors_total{node}         counter   report deliveries the bus refused or that failed
//	meshplane_agent_panics_total{node,where}       counter   panics recovered, as above
//	meshplane_build_info{version,goversion}        gauge     1, labelled with the build
//
// The controller does not see an agent's outbox: its depth is the agent's
// own gauge, scraped from each agent.
//
// # Authorization
//
// Mount serves the controller's /metrics behind the API's tokens, as every
// API route (the bootstrap token, or a live per-operator one: give
// Prometheus its own, mesh token create prometheus): a scrape job sends it
// with
//
//	authorization:
//	  type: Bearer
//	  credentials_file: /var/lib/mesh/api-token
//
// An agent's /metrics carries counts only (no names beyond its own node's)
// and has no token; Handler with an empty token serves it to anyone, so an
// agent's --metrics address should be a private or loopback one.
package metrics
