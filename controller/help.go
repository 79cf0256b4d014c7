package controller

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// PlanHelp is mesh plan's help: what Plan composes, asks and reports.
const PlanHelp = `plan composes what the next push would send each node (every node when none is named)
and asks the node's agent what it would do with it, against what the node holds, without
applying it: per resource create, replace (with the fields that change, from what to what),
update in place, remove, or hold (with the reason), and how many are unchanged. A node that
does not answer is planned from the declaration last pushed to it, and says so: what it
found and holds is not known then. --after plans as if commands had run first (repeatable):
--after "deploy forge", --after "assign route-proxy novox". Nothing is stored.

A plan that would create, replace or remove at least half of a node's resources, or of its
containers (a container its last apply failed, created now, is a retry and not counted), is
heavy (a heavy pass, rule 7): its first line says so, and mesh plan exits 4. A node whose
declaration does not compose (its line says "does not compose" and why) makes mesh plan
exit 5, over 4.`

// RemoveModuleHelp is mesh module remove's help: what RemoveModule does.
const RemoveModuleHelp = `Remove MODULE from the mesh (module.removed): its definition and builds are
forgotten, and 'mesh module define' of the same name later defines it anew, with
no builds. Refused while it is assigned to a node (exit 3, naming the nodes),
unless --release: then it is released from every node first (a module.released
on each), in the same request, checked whole (all or nothing), and what changed
is pushed. 'mesh plan NODE --after "release MODULE NODE"' shows what the release
does on a node before it is made.`

// RemoveNodeHelp is mesh node remove's help: what RemoveNode does.
const RemoveNodeHelp = `Remove NODE from the mesh (node.removed): its bus users are revoked at once
(node.credentials-revoked; the bus's revocation list, also at every start), and
its registration, adoption, settings and unused join tokens are forgotten: status,
node list, node show, roster and churn no longer list it; its history stays in
the timeline. 'mesh node register' of the same name later registers it anew.
Refused while modules are assigned to it (exit 3, naming them), unless --drain:
then each is released first (module.released) and the emptied declaration is
pushed to it, so its agent, if it is still connected, removes what ran there.`
