#!/bin/sh
# ensure-docker.sh: make a Docker engine reachable for the tests of
# agent/docker and artifacts (task test runs it first).
#
#   - an engine already answers (DOCKER_HOST, or /var/run/docker.sock): done;
#   - no dockerd and running as root: install Debian's docker.io;
#   - dockerd installed, not running, and root: start it in the background,
#     logging to ${DOCKERD_LOG:-/tmp/dockerd.log}, and wait up to 60 s for
#     its socket.
#
# Not root and no engine: it says so and exits 0; the tests then skip loudly,
# or fail under CI=true. Nothing is ever pulled from an outside registry: the
# tests build their images in Go and serve them from a registry on loopback.
set -eu

sock=/var/run/docker.sock
log=${DOCKERD_LOG:-/tmp/dockerd.log}

answers() {
	if command -v docker >/dev/null 2>&1; then
		docker version --format '{{.Server.Version}}' >/dev/null 2>&1
	else
		[ -S "$sock" ] && command -v curl >/dev/null 2>&1 &&
			curl -fsS --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1
	fi
}

if answers; then
	echo "ensure-docker: engine reachable"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-docker: no Docker engine reachable and not root: not installing one (docker tests skip, or fail under CI=true)" >&2
	exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
	echo "ensure-docker: installing docker.io"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if ! pgrep -x dockerd >/dev/null 2>&1; then
	echo "ensure-docker: starting dockerd (log: $log)"
	nohup dockerd >"$log" 2>&1 &
fi
i=0
while [ $i -lt 60 ]; do
	if [ -S "$sock" ] && answers; then
		echo "ensure-docker: engine reachable"
		exit 0
	fi
	i=$((i + 1))
	sleep 1
done
echo "ensure-docker: dockerd did not answer on $sock within 60 s; see $log" >&2
exit 1
