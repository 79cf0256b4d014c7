package session

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// RegisterHelp is mesh node register's help: what WriteNodeCreds mints and
// records.
const RegisterHelp = `Register nodes (all or none). With --creds FILE (one node), also write the
node's bus credentials (mode 0600) for 'mesh agent --creds FILE': a user of
that node alone. With --server, the controller mints them (its bus URLs and
CA in them) and records node.credentials-issued. Without, they are minted
from the bus's trust root in the controller's data directory (--data, on
the controller's machine; a directory without one is refused, never given
one), naming the bus URLs of --bus-url, else those the running controller
wrote to DATA/bus-urls, else nats://127.0.0.1:4222.

To add a host without handing it a secret, prefer 'mesh node join-token
NODE': the host makes its own key and the seed never leaves it.`

// WhereHelp is the root help's account of where a command works: what
// Resolve picks and what Open opens.
const WhereHelp = `Where a command works:
  On a local store by default: --data DIR (default ".mesh", or $MESH_DATA), the
  directory holding the event store (events.db, a bbolt file locked while a
  command uses it). Or against a running controller: --server URL (or
  $MESH_SERVER), with the token from --token-file FILE (the controller's
  DATA/api-token) or $MESH_TOKEN, and --tls-ca FILE for a private CA. The
  output is the same either way. When the local store is locked and
  DATA/controller.json names a live controller, the command asks it (with the
  token in DATA/api-token). up, rebuild, store verify and scenario run work
  on a local store only.

  Commands that only read open the store read-only (any number at once); only
  up and the write verbs create it or write to it. A command whose work is
  already done (registering a registered node, assigning an assigned module,
  ...) writes nothing, says so, and exits 0. A command with several items (node
  register a b c, module define f1 f2, the set-up of mesh up) checks them all
  first and writes nothing if one is refused.`

// SlowLocal ends the help of the verbs that fold every event on a local
// store (Open without Resume).
const SlowLocal = `

On a local store (--data) this folds every event from position 0 (it needs every
declaration and timeline entry in memory), so on a long history it is slower
than status, node show, timeline and churn, which resume from the snapshot the
data directory keeps. A controller (--server) answers it from memory.`
