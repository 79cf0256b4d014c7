package controller

import (
	"fmt"
	"meshplane/projections"
	"strings"
)

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
plan), --after "revert forge --to 41" (or a time), --after "secret set forge-db" (a rotation:
every container reading it replaced, no value asked). Nothing is stored.

A plan that would create, replace or remove at least half of a node's resources, or of its
containers, is heavy (a heavy pass, rule 7): its first line says so, and mesh plan exits 4.
A resource its last apply failed, created now, is a retry and not counted; a first deploy (a
node that has had no resource applied) is never heavy: rule 7 is about churn on a running
node. A plan of several nodes is heavy when any node's is. A node whose
declaration does not compose (its line says "does not compose" and why) makes mesh plan
exit 5, over 4.`

// RevokeHelp is mesh node revoke's help: what Revoke records and revokes.
const RevokeHelp = `Revoke every bus user of NODE that its history knows (its joins and the
credentials minted for it): node.credentials-revoked, and the bus's
revocation list, at once: the agent's connection is closed and a
reconnection refused, also after a restart. 'mesh node join-token NODE'
lets the host join again with a new key.

Credentials minted before their key was recorded (node.credentials-issued,
which older versions did not record) are unknown to history: name them
with --creds FILE (the credentials file, whose node must be NODE) or --key
U... (the user's public key), and they are recorded as NODE's, then
revoked with the rest.`

// JoinTokenHelp is mesh node join-token's help: what JoinToken issues.
const JoinTokenHelp = `Ask the controller (--server) for a one-time join token for NODE, registering
the node if needed (node.join-token-issued; the token's secret is never
stored, only its SHA-256). The token is single use, expires after --ttl,
and carries the controller's API URL and its CA certificate's fingerprint.
On the host, run the command printed after it: the agent checks the
controller's certificate against the fingerprint, makes its own bus key,
and sends only the public half; the seed never leaves the host.

The token is printed alone on stdout; the commands to run on the host go
to stderr.`

// TokenHelp is mesh token's help: what per-operator tokens are
// (Authenticate).
const TokenHelp = `Per-operator API tokens. A request made with an operator's token is that
operator's: every event it appends is recorded with actor operator:NAME,
whatever MESH_OPERATOR says. Tokens are the controller's: the verbs need
--server (or MESH_SERVER).`

// TokenCreateHelp is mesh token create's help: what CreateToken records.
const TokenCreateHelp = `Make an API token for the operator NAME (token.created; only the SHA-256 of
its secret is recorded). The token is printed alone on stdout, this once;
give it to NAME, who passes it as MESH_TOKEN (or in a --token-file). NAME
has one live token at a time: revoke it to make another. --ttl 0: no
expiry.`

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

// RebuildHelp is mesh rebuild's help: what Rebuild (in the shadow) and
// RebuildLocal (twice, compared) do, naming the projections.
func RebuildHelp() string {
	return fmt.Sprintf(`Rebuild folds the event stream from position 0 into fresh projections
(every one, or those --projection names: %s;
'mesh rebuild --projection status' rebuilds the status projection, and
says nothing of a rebuild's status). Naming them as arguments still works.

Against a running controller (--server, or a data directory whose store a
controller holds), the controller rebuilds in the shadow while its queries
keep answering from the live projections, compares each rebuilt projection
with the live one at the same position, and swaps it in.

On a local store, the rebuild is checked against a second one (the
projections must be deterministic), and a rebuild of every projection is
saved as the data directory's snapshot (projections.snap and timeline.db).

A progress bar (events/s, time left) is shown on stderr when it is a
terminal.`, strings.Join(projections.Names(), ", "))
}
