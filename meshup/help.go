package meshup

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// UpHelp is mesh up's help: what Up and Passes do.
const UpHelp = `Run the controller in the foreground until SIGINT or SIGTERM (then a clean
stop): the event store in --data, the embedded bus (NATS) on --bus-listen, the
projections kept live, and the HTTP API on --listen, its token in
DATA/api-token.

Listening on every address (--listen or --bus-listen 0.0.0.0, [::], or :PORT)
is said as addresses a client dials: the printed MESH_SERVER (and
DATA/controller.json) names 127.0.0.1, for the CLI on this machine (hosts
elsewhere reach the API at --advertise, named in their join tokens), and
DATA/bus-urls, which 'mesh node register --creds' writes into credentials
carried to agents on this host or others, names the bus at 127.0.0.1 first,
then at every address of this machine's interfaces: an agent tries them in
a random order until one answers. With TLS the certificate must name the
address an agent dials; 'node register --bus-url' names others.

With --mesh FILE or --modules DIR it first builds the images the mesh file's
builds: name (Go programs of the project, static, one layer), defines the
modules and sets up the nodes they name, the builds recorded (each command
checked first: one refused writes none; work already done appends nothing),
then starts one agent process per node of the mesh file (DATA/agents/NODE:
credentials, outbox, agent.log, agent.pid), stopped with the controller.
The agents die with up, even when up is killed (SIGKILL): each gets SIGTERM
from the kernel when up ends. An agent an earlier up left running on a
node's directory (an orphan) is stopped, not adopted, before its node's new
agent starts: up says "stopped orphan agent pid N of node X left by an
earlier mesh up". One whose up still runs is left alone, and up stops.

A node that says runtime: docker runs on the Docker engine (DOCKER_HOST,
else the default socket) when one answers: its paths under
DATA/agents/NODE/root, its engine names prefixed NODE-ID6- (ID6: the first 6
hex digits of the data directory's id, so that two data directories' nodes
of one name on one engine never want one name; NODE- for a node an older up
already ran on the engine, whose volumes and networks keep their names; kept
in DATA/agents/NODE/docker-prefix; a container, network or volume of another
data directory in the way of a name is never touched: the resource fails
naming its owner's id), everything it makes there (and every image up
builds) labelled meshplane.data=ID, the data directory's id in
DATA/data-id, so that the clean-up up prints touches only this data
directory's on a shared engine, and, if it holds the artifact store, its
agent serves it and up pushes the builds there first. With no engine up
says so and simulates it; every other node is simulated.

--once (with the example mesh unless --mesh/--modules say otherwise) does the
set-up, pushes every node, waits until each node's report is recorded, prints
their status, stops the agents and the controller, and exits: 0 when every
node reported.

--passes N instead runs the mesh in this process (every node simulated, no
bus, no API): N passes of push and apply, then exit.`
