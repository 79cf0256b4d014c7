// Package install puts a node's agent on a host as a systemd service:
// `mesh agent install URL --token T` and `mesh agent uninstall`.
//
// # Install
//
// Host.Install, in this order:
//
//  1. where systemd runs (RunDir exists, as sd_booted(3) checks), makes
//     sure UnitDir can be written before anything else, so that a run
//     without root spends no token;
//  2. joins the data directory with the token (package join): a directory
//     joined already is kept as it is, its credentials and all;
//  3. renders the unit (Unit; the golden file testdata/mesh-agent.service
//     shows it) and writes UnitDir/mesh-agent.service only when it differs
//     from the one there (internal/atomicfile, mode 0644);
//  4. runs systemctl: daemon-reload when the unit was written, then
//     `enable --now mesh-agent` for a new unit, or `enable` and `restart`
//     when the unit changed or the node joined anew (new credentials), or
//     `enable --now` alone when nothing changed: a second install with the
//     same arguments writes nothing and restarts nothing.
//
// Where systemd does not run (a container, a host booted otherwise), the
// join is done and Install says so, with the command line to run the agent
// by other means (Result.Command); it writes no unit and runs nothing.
//
// # The unit
//
// ExecStart is the absolute path of the mesh binary that ran install
// (os.Executable) with `agent --data DIR --runtime R`: the agent finds its
// credentials in DIR/node.creds. Restart=always (5 s apart, never given
// up); After= and Wants= network-online.target and, for the Docker
// runtime, docker.service (Wants, not Requires: an engine restart does not
// stop the agent, whose next apply reaches the engine again).
//
// The agent runs as root: the Docker socket it talks to is root on the
// host whatever user holds it, and it makes and changes (never removes)
// the directories and files its node's modules declare, which may be
// anywhere (/etc/forge, /var/lib/forge, declaration.HostsPath), whoever
// owns the directories above them. The hardening takes away what it does
// not need: no new privileges, no capabilities but those it uses
// (CapabilityBoundingSet: overriding file permissions and ownership checks
// (DAC_OVERRIDE, FOWNER), linkat(2) of an open file (DAC_READ_SEARCH), a
// low port for the artifact store (NET_BIND_SERVICE)), /usr and
// /boot read-only (ProtectSystem=true: a module's file there fails), no
// kernel tunables, modules, logs, clock, hostname or cgroup tree, no new
// namespaces, no realtime, no set-uid files, writable memory never
// executable, native system calls only, and sockets of the families it
// uses (unix for the engine, inet for the controller and the bus, netlink
// for interface addresses). /tmp and /home are the host's: a module may mount
// them.
//
// # Uninstall
//
// Host.Uninstall stops and disables the service, removes the unit and
// reloads systemd; the data directory (the node's credentials, its outbox)
// is kept unless Purge, which removes it only when it is an agent's (it
// holds join.CredsFile, agentd.LockFile or agentd.OutboxDir) and no agent
// holds its lock.
//
// # Tests
//
// Host.Root puts every systemd path under a directory and Host.Systemctl
// replaces the systemctl command, so the tests run without systemd, as
// any user.
package install
