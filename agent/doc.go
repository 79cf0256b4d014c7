// Package agent is the node side of meshplane: it takes a node's
// declaration, compares it with what the node holds, carries out the
// difference through a container Runtime, and reports the outcome to the
// mesh through an outbox that survives restarts.
//
// # Plan, then apply
//
// As in Nomad's reconciler, the decision is pure and the doing is narrow.
// The decision is package declaration/nodeplan's and the report and the
// dry run's answer package wire's, so that the controller reads them
// without linking the agent; the agent spells them under its own names
// (nodeplan.go).
// Observe reads the node through the Runtime (managed containers, and what
// is at every declared path); Diff, which does no I/O and reads no clock,
// turns the declaration, the observation and the agent's State into a Plan:
// one Step per declared resource (Unchanged, Create, Replace, Update, Hold or
// Reject, with the changed fields and a reason), one Remove per managed
// container that is no longer declared, and whether the hosts file must be
// written. Agent.Apply carries the plan out (hosts file, directories, files,
// removals, containers), one resource at a time: a resource that fails is
// listed in the report with its error and the rest are still applied. On a
// runtime that pulls (ImagePuller, images.go) every image the creates and
// replaces need is pulled before any removal or create: a failed pull
// stops nothing of its module. A container that depends on others
// (depends_on, depends.go) is created after them, and, for service_healthy
// on a runtime that can tell (HealthWaiter), once they are healthy, waited
// for at most DependencyWait; one whose dependency failed or is not healthy
// fails naming it, and its running container is left as it is. A
// container whose module rolls out start-first (declaration.Rollout) is
// replaced, on a runtime that can inspect and rename (rollout.go), by a new
// container that proved itself healthy first under a temporary name; one
// that did not is removed, the old one runs on, and that build is not
// tried again while it is the one declared (State.Failed).
//
// What counts as a change (docs/design.md rules 2, 4, 5):
//   - A container is unchanged when its digest and spec equal the ones it was
//     created with (the runtime keeps both with the container, as labels
//     would be kept on Docker). Otherwise it
//     is replaced, and the report names the changed fields: "image",
//     "command", "env.KEY", "mounts.TARGET" (a changed mount path names its
//     target), "networks", and each option in the module file's words
//     ("healthcheck.test", "publish.PORT", "memory", ...: options.go). A managed container listed stopped with an
//     unchanged spec is started in place and reported updated ("running").
//   - A directory at its declared mode, and a byte-identical file at its
//     declared mode, are unchanged; otherwise they are updated in place
//     ("mode", "content"). Directories and files are never removed: they are
//     data.
//   - The hosts file (declaration.HostsPath) is the node's own: it is written in
//     place when it differs, is never counted in a report, and is no part of
//     any container's identity.
//
// # Holds
//
// On an adopted node, the data a module needs may already be there from
// before the mesh (or from an earlier, released assignment). A directory
// resource of a module that is assigned but not taken, whose path exists and
// was not made by this agent, is found, and the agent does not touch it: it
// is held, whether or not its mode already matches, and counts as held, never
// as applied, with the reason "found on this adopted node; not touched until
// MODULE is taken". Every container that mounts a found path (or a path
// under it) is held too, created or not, with "would mount PATH, found on
// this adopted node; not run until MODULE is taken"; every declared file
// under a found directory is held with "under PATH, found on this adopted
// node; not written until MODULE is taken" (a declared directory under one
// that was not itself found: "not made"). Once the module is taken nothing
// is held. A hold is a line in every report (rule 3, seed 002): route-proxy
// with containers proxy, ca and acme, where only ca mounts the found
// /var/lib/route-proxy/ca, reads "applied 2 resource(s), 2 held for untaken
// modules (route-proxy: 2)".
//
// The agent remembers the directories it made (State.Made) so they are never
// found later; when a directory leaves the declaration it is forgotten, so a
// re-assign after a release finds the leftovers again.
//
// # The report and the outbox
//
// Each apply makes one Report: the apply.reported payload (Sent, Applied,
// Unchanged, and every resource that was not unchanged with its reason),
// the time of the apply, the declaration's correlation, and a fresh ApplyID
// from the injected id source. The ApplyID is the id of the event the
// controller appends, so delivering a report twice appends it once.
//
// What is delivered is Report.Wire, the compact form of the payload
// (events.ApplyReported): empty lists left out, a held list the agent
// reported before in full named by that report's apply id (HeldSince), and
// the digest left out while the declaration is the one of the previous
// report. Which report a held list may name, and the last declaration, are
// in the State (State.Last), saved with it, so a restarted agent goes on
// naming them; an agent without them (a fresh state) reports in full. The
// decision is pure (compactAgainst); the Report keeps the whole outcome, so
// its Summary still reads the hold line of rule 3.
//
// A report is written to the Outbox (a line of its log, with the State,
// fsynced: one durable write an apply; see outbox.go for the format)
// before its delivery is attempted, and dropped once delivered. A failed delivery keeps it, with its
// attempt count and last error; Agent.Flush (and every later Apply) retries
// the kept reports in apply order. A new Agent over the same outbox has the
// kept reports and the State (rule 8, seed 000: "applied, and could not tell
// the mesh").
//
// # The running agent
//
// Run is the agent process's loop over two small interfaces a transport
// implements (the bus's are in package bus): a Source of the node's
// declarations (the latest at once, then each new one) and a Reporter that
// publishes a report under its apply id and says whether the mesh took it.
// Run applies each declaration it is given and the latest again every
// Interval (drift, default 1m), keeps every report in the outbox, and sends
// the kept ones again with a backoff until the mesh takes them, with their
// attempts and last error, so the controller records each once, as
// delivered late.
//
// # Dry runs
//
// Agent.DryRun is Apply without the doing (mesh plan): the same Observe and
// Diff, under the same lock and State, returned as a Preview (each step
// that is not unchanged, with what each changed field was and becomes, and
// the report the apply would make); nothing is carried out or kept. Run
// answers dry runs through an optional DryRunServer (on the bus, the node's
// plan subject). Declared is what a node would hold had it applied a
// declaration: the fallback of a plan whose node did not answer.
package agent
