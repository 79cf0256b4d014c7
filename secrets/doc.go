// Package secrets is the controller's secret store: the values a module's
// containers read from their environment (env: {DB_PASSWORD: {secret:
// forge-db}}) without any event, export, backup, API answer, page or plan
// ever holding them.
//
// # Where a value lives: sealed in the event store, the key outside it
//
// A secret's value is recorded in a secret.set event on the secret's stream
// ("secret-<name>"), encrypted with AES-256-GCM (Seal, Open) under a key
// that is never event data: the key file secret.key in each controller's
// data directory (0600, made at the first `mesh secret set`; LoadKey,
// LoadOrMakeKey), or the file $MESH_SECRET_KEY names. The other choice, a
// file per secret in the data directory, was passed over: on a
// PostgreSQL-backed cluster of three controllers the file would sit in the
// data directory of the one that took the `secret set`, and the standby that
// takes over after it could answer no agent. Sealed in the store, a secret
// reaches every controller of the store the way every other event does (the
// operator gives each the same key file, once), a rotation is naturally an
// event (secret.set again, its digest new), and history says when each
// value was set and by whom, never what it was. A backup or export holds
// the sealed bytes only; without the key they are noise. The sealed value
// is bound to its secret's name (the GCM additional data), so it cannot be
// moved to another secret's stream.
//
// # The digest
//
// Events name a secret's value by its keyed digest (Digest,
// "hmac-sha256:<hex>"): HMAC-SHA256, under a key derived from the store's
// key, over the secret's name and value. A plain SHA-256 of a low-entropy
// password could be brute-forced from any export; the keyed digest cannot be
// tried without the key. module.defined and declaration.composed carry the
// digest beside the secret's name, so a rotated secret changes the
// container's digest (it is replaced, plan shows it, why names the digest
// change) while no event says what the value is.
//
// # Delivery
//
// The agent asks for the values a declaration's containers read when it
// creates them, over its own authenticated bus connection (bus: the
// node-scoped subject mesh.secret.<node>); the leading controller answers
// only for secrets the node's current declaration names, at the digest it
// names (the bus checks the declaration, controller.ResolveSecrets the
// digest), and every refusal is logged. The agent holds the values in
// memory only and hands them to the runtime; they are never in its outbox,
// its reports or its data directory.
//
// The key file is this package's only file I/O: secret.key read, and made
// once (LoadKey, LoadOrMakeKey).
package secrets
