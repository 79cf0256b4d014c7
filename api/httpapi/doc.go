// Package httpapi serves an api.Service over HTTP (Handler, Serve), holds
// the controller's API token (LoadOrCreateToken), and is an api.Service
// over HTTP (Client).
//
// # Routes
//
// JSON under /v1. Every request, reads included, carries
// "Authorization: Bearer TOKEN" (the controller's DATA/api-token); without
// it the answer is 401 and nothing is read or appended. Command bodies name
// the operator ({"operator": "alice", ...}), recorded as the events' actor.
// Beside that bootstrap token, a handler WithAuthenticator takes
// per-operator tokens (mesh token create): a request made with one is its
// operator's, whatever the body's "operator" says (the handler overwrites
// it), and a revoked, expired or unknown one is 401 at once.
//
//	method path                                            Service call     body / query
//	GET    /v1/info                                        Info
//	GET    /v1/nodes                                       Status           ?node=N (repeatable; none: every node)
//	POST   /v1/nodes                                       RegisterNodes    {"operator","nodes":[...]} all or none
//	GET    /v1/nodes/{node}                                NodeShow
//	POST   /v1/nodes/{node}/adopt                          AdoptNode        {"operator"}
//	PUT    /v1/nodes/{node}/settings/{key}                 SetSetting       {"operator","value"} ("" clears)
//	POST   /v1/nodes/{node}/modules/{module}/assign        Assign           {"operator"}
//	POST   /v1/nodes/{node}/modules/{module}/take          Take             {"operator"}
//	POST   /v1/nodes/{node}/modules/{module}/release       Release          {"operator"}
//	POST   /v1/nodes/{node}/push                           Push             {"operator"}
//	POST   /v1/push                                        Push (all)       {"operator"}
//	GET    /v1/nodes/{node}/resources                      Resources        what runs now: the last apply's state of each resource
//	GET    /v1/nodes/{node}/roster                         Roster
//	GET    /v1/nodes/{node}/roster/history                 RosterHistory
//	GET    /v1/nodes/{node}/roster/diff                    RosterDiff       ?from=DECL&to=DECL
//	GET    /v1/nodes/{node}/why                            Why              ?resource=R
//	GET    /v1/nodes/{node}/containers/{container}/logs    Logs             ?tail=N ?follow=true: JSON lines, one chunk each; api.Logs
//	GET    /v1/churn                                       Churn            ?node=N (repeatable)
//	GET    /v1/diff                                        Diff             ?from=MOMENT&to=MOMENT (a time in RFC 3339 or a position; no to: the head)
//	GET    /v1/timeline                                    Timeline         ?node ?module ?resource ?type ?correlation
//	                                                                        ?since ?until (RFC 3339) ?after ?before ?forward ?limit
//	POST   /v1/modules                                     DefineModules    {"operator","modules":[{"module","spec"}]} all or none
//	POST   /v1/modules/{module}/artifacts                  RecordArtifact   {"operator","name","digest"}
//	POST   /v1/rebuild                                     Rebuild          {"projections":[...]} (none: every one); Rebuilder
//	POST   /v1/plan                                        Plan             {"nodes":[...],"after":["deploy forge",...]} appends nothing
//	POST   /v1/modules/{module}/deploy                     Deploy           {"operator","digest"} ("" deploys the latest builds)
//	POST   /v1/modules/{module}/revert                     Revert           {"operator","to"} (a time in RFC 3339 or a store position)
//	POST   /v1/nodes/{node}/join-token                     JoinToken        {"operator","ttl_seconds"} registers the node if needed; api.Access
//	POST   /v1/nodes/{node}/creds                          NodeCreds        {"operator"} whole credentials, seed included; api.Access
//	POST   /v1/nodes/{node}/revoke                         Revoke           {"operator","public_keys"} every bus user of the node, at once; api.Access
//	POST   /v1/join                                        Join             {"token","public_key","agent_version","node"} NO operator token (JoinHandler)
//	POST   /v1/tokens                                      CreateToken      {"operator","name","ttl_seconds"} the secret, once; api.Tokens
//	GET    /v1/tokens                                      Tokens           every API token, revoked ones too; api.Tokens
//	DELETE /v1/tokens/{name}                               RevokeToken      {"operator"} refused at once from then on; api.Tokens
//	PUT    /v1/secrets/{name}                              SetSecret        {"operator","value"} sealed, never answered back; api.Secrets
//	GET    /v1/secrets                                     SecretList       names, digests, when set: never a value; api.Secrets
//	GET    /v1/inventory/nodes                             NodeList         every registered node: adopted, modules, sync, health
//	GET    /v1/inventory/modules                           ModuleList       every defined module
//	GET    /v1/modules/{module}                            ModuleShow       its spec, nodes and builds
//	POST   /v1/modules/{module}/remove                     RemoveModule     {"operator","release"} refused while assigned unless release
//	POST   /v1/nodes/{node}/remove                         RemoveNode       {"operator","drain"} revokes its bus users; refused while assigned unless drain
//	GET    /v1/join/ca                                     (JoinHandler)    the CA certificate, PEM text; 404 no-ca on plain HTTP; NO token
//
// Every GET of a Service read (info, nodes, roster, why, churn, timeline,
// inventory, modules) takes ?at=POSITION or ?at=TIME (RFC 3339): the
// answer is as the mesh stood after the last event at or before it
// (api.Historian), and carries "as_of": {"position", "time"}. A moment
// outside the history is 422 invalid; ?at= on a write is 400.
//
// A body naming a node, module or key names the same one as the path, or
// may leave it out. Bodies are one JSON object, at most DefaultMaxBody
// bytes (413 beyond), decoded strictly (events.UnmarshalStrict): a key given
// twice at any depth, a key in another case than its field's ("Operator"),
// an unknown field or a string that is not UTF-8 is 400 invalid, naming the
// key. Then every field the request names is checked before the service
// sees it, as the CLI's arguments are (api's validate.go): the operator by
// commands.CheckOperator (1 to 128 printable bytes of UTF-8: no NUL, no
// newline), the nodes and modules of a command by events.CheckName (a DNS
// label), artifact names and digests as commands check them, the names of
// reads, pushes and plans (which may be names an older build took)
// bounded to MaxRefLen printable bytes, and every list to MaxRequestItems:
// a field refused is 422 invalid, naming it.
//
// Beside /v1, mesh up serves /metrics on the same listener, behind the
// same token (see package metrics).
//
// # Errors
//
// Every error is one JSON object:
//
//	{"error": {"code": "node-unknown", "message": "node novox is not registered"}}
//
// A refusal (a *api.Rejection) travels with its code and an HTTP
// status: 404 for what names something unknown (node-unknown,
// module-unknown, declaration-unknown), 409 for a conflict with the state
// (node-exists, already-assigned, not-assigned, already-taken, not-adopted,
// no-build: a deploy of a build never recorded),
// 422 for the rest (invalid), 400 (code invalid) for a request that does
// not parse. Client turns these back into the same *api.Rejection, so
// the CLI's exit codes hold in both modes. 401 (unauthorized) is
// ErrUnauthorized; 507 (store-full) says the event store could not write
// for lack of space (events.ErrStoreFull: a full disk, PostgreSQL's
// disk_full), nothing written, and is an *Error that is
// events.ErrStoreFull; 500 (internal) and other statuses are an *Error.
//
// # Serving
//
// Serve serves a handler on a listener until its context ends. Beyond
// loopback it serves only TLS, unless told Insecure (CheckListen).
// LoadOrCreateToken makes the token on first start (DATA/api-token, mode
// 0600) and reads it after.
package httpapi
