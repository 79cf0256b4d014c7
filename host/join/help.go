package join

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// Help is mesh agent join's help: what Join checks, makes and writes.
const Help = `Join this host to the mesh with a one-time token from 'mesh node join-token
NODE', then run the node's agent as 'mesh agent --data DIR' does.

The join checks the controller's certificate against the CA fingerprint the
token carries, makes the node's bus key here (its seed never leaves the host),
sends only the public key, and writes DIR/node.creds (mode 0600) and
DIR/join.json. URL, when given, is the controller's API as this host reaches
it (default: the token's). A directory already joined is used as it is: no
token is spent. --no-start joins and exits (to run the agent as a service).`
