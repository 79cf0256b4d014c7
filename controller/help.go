package controller

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// PlanHelp is mesh plan's help: what Plan composes, asks and reports.
const PlanHelp = `plan composes what the next push would send each node (every node when none is named)
and asks the node's agent what it would do with it, against what the node holds, without
applying it: per resource create, replace (with the fields that change, from what to what),
update in place, remove, or hold (with the reason), and how many are unchanged. A node that
does not answer is planned from the declaration its last apply report applied, and says so
(and names a push it has not applied yet): what it found and holds is not known then.
--after plans as if commands had run first (repeatable): --after "deploy forge",
--after "assign route-proxy novox", --after "release forge novox", --after "node set novox
port.store 3001", --after "module define forge.yaml" (the file is read here and sent with the
plan), --after "revert forge --to 41" (or a time). Nothing is stored.

A plan that would create, replace or remove at least half of a node's resources, or of its
containers (a container its last apply failed, created now, is a retry and not counted), is
heavy (a heavy pass, rule 7): its first line says so, and mesh plan exits 4. A node whose
declaration does not compose (its line says "does not compose" and why) makes mesh plan
exit 5, over 4.`
