package install

// The help of the verbs that run this package, kept beside the code it
// describes so that the two change together.

// Help is mesh agent install's help: what Host.Install does.
const Help = `Join this host with a one-time token from 'mesh node join-token NODE' (as
'mesh agent join --no-start' does: URL, when given, is the controller's API as
this host reaches it), then write /etc/systemd/system/mesh-agent.service,
which runs this mesh binary as 'agent --data DIR --runtime R' (Restart=always,
after the network and docker.service), and enable and start it. Run as root.

Running it again is safe: a data directory joined already keeps its
credentials (no token is spent), the unit is rewritten only if it would
change, and the service is restarted only then (or after a new join).
Where systemd does not run, the join is done and the command line to run
the agent with is printed instead.

The agent runs as root: the Docker socket is root on the host, and it makes
and changes the directories and files its node's modules declare, wherever
they are (README "What the agent can touch"). /usr and /boot are read-only
to it. To give it more flags (--artifact-store, --metrics), add a drop-in:
systemctl edit mesh-agent.`

// UninstallHelp is mesh agent uninstall's help: what Host.Uninstall does.
const UninstallHelp = `Stop and disable the systemd service mesh-agent, remove its unit
(/etc/systemd/system/mesh-agent.service) and reload systemd. The agent's data
directory (the node's credentials, its outbox) is kept, so that a new install
finds it joined; --purge removes it too, when it is an agent's and no agent
runs on it: the directory --data names, else the one the unit named, else
/var/lib/mesh-agent. The node's bus user works until 'mesh node revoke NODE'.`
