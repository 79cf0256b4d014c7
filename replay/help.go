package replay

// Help is mesh replay's help, kept beside the code it describes.
const Help = `Replay an exported history (mesh export's JSON lines) against this build, and
say where today's run diverges from the recorded one: the proof that a fix
works is that the incident, replayed, does not happen (docs/design.md rule 7).

The file is checked as mesh import checks it (a line import would refuse is
an error), then read up to --until POSITION (the file's positions; default:
all of it). It is read once: a pipe or /dev/stdin is copied to a temporary
file (in $TMPDIR, removed at the end); a line longer than 1114112 bytes
refuses the file; SIGINT and SIGTERM stop the read. From it the replay takes what the world did: the operators'
commands (nodes registered, adopted and set, modules defined, assigned,
taken and released, builds recorded, operators' deploys), the store's
failed reads (a declaration.compose-failed naming a node read: that node's
stream fails to read until the node that recorded it composes again), sends
cut (declaration.push-failed, and reports kept and delivered late),
containers removed from outside (an apply that created what was running),
and the directories found on adopted nodes (those the history shows held).

It re-runs that in a sandbox (a memory store, simulated nodes, bus and
clock: nothing is written anywhere) through today's commands, compose,
controller pass and agent, pass by pass. A pass is a round of the recorded
history: the commands before it, the controller's events of its push, each
node's apply. Then, per pass and node, it compares the two runs: what each
composed (or failed to compose, or composed again unchanged), the digests,
roster names and resources of declarations that differ (and the spec fields,
where both specs are recorded), what each apply created, replaced, updated,
removed or failed, the holds, and the churn episodes (loops and flips) each
run's projections open.

Exit 0 when the runs agree, 1 when they diverge (every divergence printed);
-o json prints the report (its field names are a public API). Limits: a read
of something other than a node (the node list, a module) is not injected and
is listed; a pass in which nothing at all was recorded cannot be told apart.`
