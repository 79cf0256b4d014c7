// Package bus is meshplane's NATS adapter: the controller puts each node's
// latest declaration in a JetStream key-value bucket, each agent watches its
// own key, and agents publish apply reports on a JetStream stream that the
// controller consumes. By default the bus is a nats-server embedded in the
// controller (Server); with --nats URL it is any NATS cluster, reached with
// the same client code (DialController, DialNode).
//
// # Subjects, bucket, stream
//
//	bucket  mesh-declarations     (stream KV_mesh-declarations, file storage, history 1,
//	                              at most 16 consumers: agents need none)
//	        key = node name       value = JSON of declaration.Declaration
//	republish mesh.decl.<key>     each value the bucket's stream stored, published
//	                              again by it once stored (RePublish), with its
//	                              sequence (Nats-Sequence): what agents subscribe to
//	stream  MESH_REPORTS          subjects mesh.report.<node>, file storage, work-queue
//	                              retention, duplicate window 1 h, at most 1 GiB and
//	                              then new reports are refused (the agents keep them);
//	                              at most 64 reports of one node (then that node's new
//	                              ones are refused: its agent keeps them) and 2 MiB a
//	                              message
//	consumer "controller"         durable, on MESH_REPORTS, explicit ack (the stream
//	                              takes at most 4 consumers)
//	account limits                the mesh account's JetStream consumers bounded
//	                              (AccountMaxConsumers, 64), in the account JWT
//	request mesh.secret.<node>    core NATS: the node asks for the secrets its
//	                              declaration names; only the leading controller
//	                              answers, and refuses (and logs) any other (secret.go)
//
// A node name may hold '.', so a node's key and subjects may be several
// subject tokens; permissions name them exactly, never with a wildcard after
// the name, so node "web" is granted nothing of node "web.a". Inboxes are
// the exception (a prefix must end in one token): NodeInbox writes '.' as
// '~'.
//
// # Joining and revoking
//
// A joining host makes its own user key; Issuer.NodeFor signs a user JWT
// of the node for its public key alone (the seed never leaves the host).
// Server.Revoke makes a list of public keys the mesh account's revocation
// list (jwt.AccountClaims.Revocations), re-signed by the operator: it is
// applied to the server at once (nats-server's UpdateAccountClaims closes
// the revoked users' connections and refuses them after) and published on
// $SYS.REQ.ACCOUNT.<account>.CLAIMS.UPDATE as a system-account user, which
// every server with a memory resolver routed to this one applies too.
// ServerConfig.Revoked carries the list, from history, into every start.
// OpenAuthority reads a trust root and never makes one.
//
// # Declarations
//
// ControllerConn.PutDeclaration puts a declaration under its node's key;
// ControllerConn.PutDeclarations puts many, pipelined (every put of a window
// published, then their acknowledgements awaited). On the
// node, Node.Watch yields the latest declaration at once (an agent that was
// away gets it on return), then each new one, keeping only the newest if
// the agent is busy.
//
// A watch is no JetStream consumer: the bucket's stream republishes each
// value it stored on mesh.decl.<key> (RePublish, only after the store took
// it, with its stream sequence), and the agent holds a core NATS
// subscription to its own key's subject and the roster's, and reads the
// latest value of each with a direct get at its start, whenever the
// connection comes back, and every NodeOptions.Resync (a minute): a value
// republished while it was away is read then, and the sequence orders what
// it gets both ways (an older one is ignored). So the server keeps nothing
// per agent but two subscriptions, any number of agents watch one bucket
// (nats-server gives a stream 1,000 consumers by default, which the watches
// as consumers met at about a thousand agents), and a node's user needs,
// and is given, no right to create a consumer: one node can neither use up
// what others need nor have the server deliver to another's subjects.
// A user minted by an older build (its permissions name consumers, not
// mesh.decl) reads by direct get alone, every 5 s. The controller brings a
// bucket made by an older build up to date at its start (a stream update:
// RePublish added, consumers bounded; its values kept).

// # Reports
//
// Node.PublishReport publishes a Report (see its wire format) on
// mesh.report.<node> with the apply id as Nats-Msg-Id and waits for the
// stream's acknowledgement: a re-sent report (its acknowledgement was lost)
// is dropped by the stream within the duplicate window (while the bus runs:
// a recorded report has left the work-queue stream, so a bus restarted
// since no longer knows its id), and otherwise by the event store, since the
// apply id is the apply.reported event's id: the controller's handler must
// be idempotent per apply id, as commands.Handler.RecordApply is. An
// error means the report may not be stored: the agent keeps it in its
// outbox and sends it again (docs/design.md rule 8). A node's connection does
// not buffer publishes while the bus is away (they fail at once), so a
// report is never sent on reconnection behind the agent's back, uncounted.
//
// Node.Agent adapts a node's connection to the agent's Source and Reporter
// (agent.Run); ControllerConn.Publisher adapts the controller's to the
// controller core's Publisher (adapters.go).
//
// ControllerConn.ConsumeReports hands each report to a Handler, one at a time
// (or one at a time per worker, ControllerConfig.ReportWorkers, each node's
// reports always to the same worker so that they stay in order), and
// acknowledges it only after the handler returned nil (recorded). An
// error wrapping ErrRejected (a report the controller's door refused)
// terminates the message, logs it once with the node and the reason, and
// counts it; any other error redelivers it after a backoff (1 s doubling to
// a minute). A message over MaxReportSize, that does not decode, or whose
// node differs from its subject's, is refused before the handler sees it:
// told to the WithRefused callback (the controller records report.refused;
// if it cannot, the message is redelivered and refused again), logged once
// with the node and the reason (a *BadReportError's: too-large, malformed,
// wrong-node), counted (Consumer.Stats, Refused), terminated; the consumer
// goes on. So no message is redelivered for ever for what it is.
//
// Each node's reports are rate-limited (WithRateLimit: 1 a second, bursts
// of 64, by default; golang.org/x/time/rate): a report over its node's limit
// is neither decoded nor queued but given back to the bus (a nak with the
// delay its limiter reserved for it), so it costs the controller O(1),
// waits in the stream in order, and is recorded in its turn (rule 8: never
// lost). Other nodes' reports pass it. What each node had deferred is
// logged once a minute and told to the WithThrottled callback (the
// controller records report.throttled). A node cannot hold more than 64 of
// the consumer's 4,096 unacknowledged reports that way: the stream's
// per-node limit. The reports' stream retention is a work
// queue: an acknowledged report leaves the stream; one not yet recorded
// survives a restart of the bus and of the controller. A work queue takes
// no second consumer overlapping the controller's; a tool that wants to see
// reports go by subscribes to mesh.report.> without JetStream.
//
// # Heartbeats
//
// Each agent publishes a small heartbeat on mesh.heartbeat.<node> every few
// seconds (Node.Heartbeats), on core NATS: never stored, never an event.
// The controller subscribes to mesh.heartbeat.> (SubscribeHeartbeats) and
// keeps the last one heard per node in memory; a node may publish on its
// own subject alone, and a heartbeat naming another node than its
// subject's is ignored. See heartbeat.go.
//
// # Authentication: decentralized JWT
//
// The embedded server runs in operator mode: an operator, a system account
// and the mesh account, whose seeds live in the bus directory (Authority;
// files mode 0600), the account JWTs signed at each start and preloaded in a
// memory resolver. Every client is a user of the mesh account, signed by
// the account's key: the controller with every right in the account, each
// node with NodePermissions alone. So the controller mints a node's
// credentials (NewCreds, written by WriteCreds for `mesh node register
// --creds`) without touching the server's configuration: no reload, no
// restart, and the server checks the permissions carried in the JWT.
// (Per-user permissions in the server's configuration would need a reload
// for each node registered, and the server to know every user.)
// A node's user does not expire; revoking one (a revocation in the account
// JWT) is not built yet.
//
// NodePermissions lists what a node may do, and why each subject is there.
// Its tests run the real server and check that a node can neither read
// another node's key (get, its republished subject) nor create any
// consumer (not even of its own key), nor publish another node's reports,
// nor subscribe beyond its inbox, its plan and logs subjects and its own
// and the roster's republished subjects. A node user minted before the
// logs subject (mesh.logs.<node>, logs.go) was in NodePermissions cannot
// take it: its agent answers no log request (mesh logs says no agent
// answered) until the node is given new credentials.
//
// # TLS and listening
//
// The embedded server listens on 127.0.0.1:4222 by default. Beyond
// loopback it needs a certificate and key (clients then verify it, against
// the CA in their credentials when it is a private one), or Insecure said
// out loud: StartServer refuses otherwise (ErrInsecure). The controller in
// the same process connects in-process (no socket).
//
// # A clustered embedded bus
//
// The controllers sharing a store can run their embedded servers as one
// NATS cluster (ServerConfig.Cluster, Peers, Name, TrustDir): routes
// authenticated with the trust root, JetStream clustered, the bucket and
// the stream replicated (DefaultReplicas). See cluster.go for the design
// and why the trust root is given to each controller rather than kept in
// the store.
//
// # An external NATS cluster (--nats URL)
//
// ExternalAccount (`mesh bus account`) makes the trust of a cluster
// dedicated to meshplane in operator JWT mode and the servers'
// configuration fragment, the controller's user and the signing key it
// mints node users with (IssuerFor); see account.go. Otherwise, what an
// operator sets up there (with nsc, or the server's configuration):
//
//   - an account for the mesh (say MESH) with JetStream enabled: file
//     storage for the bucket and the stream above (the controller makes them
//     on start, or updates them; ControllerConfig.Replicas for R3);
//   - a controller user in MESH allowed to publish and subscribe to
//     everything in the account (it uses $JS.API.>, $KV.mesh-declarations.>,
//     mesh.report.> through its consumer, and its inbox _INBOX.controller.>);
//   - node users: either give the controller a signing key of MESH (NewIssuer
//     with the seed and the account's public key) and it mints each node's
//     user with NodePermissions, as with the embedded bus; or make each node
//     user by hand, named "node:<node>", with exactly NodePermissions(node)
//     (the subjects are listed there) and hand it out as the JSON
//     credentials file (Creds; LoadCreds checks the name);
//   - TLS on the client port, its CA in the credentials if private;
//   - JetStream limits on the account: a consumer limit (ExternalAccount's
//     account JWT sets AccountMaxConsumers, 64; with nsc, `nsc edit account
//     MESH --js-consumer 64`). The controller sets its streams' own limits
//     (16 on the bucket's, 4 on the reports'); agents need no consumer, so
//     the server's default_max_consumers and the number of agents do not
//     meet;
//   - nats-server 2.9 or later (RePublish and direct gets; 2.10 or later
//     to lower the consumer limit of a bucket made by an older meshplane);
//   - max_payload of at least 8 MiB if declarations carry large files or the
//     mesh passes about 3,000 nodes: every declaration carries the whole
//     roster and hosts file, about 330 bytes a node of the mesh (NATS's
//     default is 1 MiB; the embedded server is set to 8 MiB).
//
// The names (bucket, stream, consumer, subjects) are fixed: one mesh per
// account.
//
// `mesh bus check` (Check) connects with the controller's user and says,
// a line each, whether the bus is as meshplane needs it: the server's
// version, the account's consumer limit, the bucket's stream (RePublish to
// mesh.decl.>, direct gets, its consumer limit) and the reports stream's,
// and that a node's user cannot create a consumer; exit 1 if one is not.
// Node users made by hand for an external cluster must carry exactly
// NodePermissions: no $JS.API.CONSUMER subject.
package bus
