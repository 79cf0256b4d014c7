package sim

// Help is mesh sim's help: what Execute runs and scores, and the faults
// SPEC (SpecHelp).
const Help = `Run a whole mesh in this process: the real controller (its commands, compose,
store, projections and pass), simulated nodes (the in-memory runtime) and bus.
--nodes nodes and --modules modules are set up, then --passes passes run:
each is the controller's pass, the one mesh up makes every interval (every
node composed, what changed pushed, a compose failure recorded once), then an
apply on every node, while the faults of --faults are injected. The event stream stays
in the store (--store bolt: the bolt file in --data, which must hold no
events yet), so status, timeline, churn and why work on it afterwards.

The run knows the churn it injected (loops and flips, on which nodes, when),
from the faults and the operator commands, never from the events the
detector reads, and scores the churn projection against it: recall, precision, the delay from
an episode's start to its detection in passes, and the false loops on
legitimate passes (a roll-out, a moved module, a burst of assigns). Targets:
recall 1, no false loop on a legitimate pass, a delay of at most 2 passes.
Exit 1 when a target is missed.

While it runs, a progress bar on a terminal (passes/s, events/s, time left);
at the end, a summary to paste into an incident review (-o json: the same, as
JSON). --measure adds the projections' memory, a status query, a filtered
timeline page and a rebuild of the whole history.

` + SpecHelp + `

--faults default is every kind at once, placed over the run's passes (at
least 20 make every window distinct); --faults none runs without faults.`
