#!/bin/sh
# ensure-nats-server.sh: install a separately built nats-server (Debian's
# package) for cmd/mesh's TestExternalNATSCluster, which runs three of them
# in a cluster and the controller against them with --nats (task test runs
# it first).
#
#   - nats-server already on PATH: done;
#   - root: install Debian's nats-server;
#   - not root: say so and exit 0; the test then skips loudly, or fails
#     under CI=true.
set -eu

if command -v nats-server >/dev/null 2>&1; then
	echo "ensure-nats-server: $(nats-server --version 2>&1 | head -1)"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-nats-server: no nats-server and not root: not installing it (TestExternalNATSCluster skips, or fails under CI=true)" >&2
	exit 0
fi
echo "ensure-nats-server: installing nats-server"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
echo "ensure-nats-server: $(nats-server --version 2>&1 | head -1)"
