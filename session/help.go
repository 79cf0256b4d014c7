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
