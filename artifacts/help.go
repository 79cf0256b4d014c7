package artifacts

// PushHelp is mesh artifact push's help: what Push uploads and what is
// recorded.
const PushHelp = `Upload an image tarball (as docker save writes it) to the artifact store and
record the build: its module, its name and its digest, never an address
(docs/design.md rule 6). The store is found where it is used: at the private
address of the node holding it (mesh node set NODE artifact-store PORT), or
by loopback while that node has none yet and is the mesh's only node (a
first node, mid-genesis); --registry overrides.

The store is read, the image pushed, then the build recorded: the event
store is not held open during the upload, and nothing is recorded unless
the artifact store holds the image. Against a controller (--server) the
module and the node settings are not read (the API has no such query):
--registry is required, and the controller refuses the record of an
undefined module.`
