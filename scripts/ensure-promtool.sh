#!/bin/sh
# ensure-promtool.sh: install promtool (Debian's prometheus package) for
# deploy/prometheus's test, which runs `promtool test rules` on the shipped
# alerting rules (task test runs it first).
#
#   - promtool already on PATH: done;
#   - root: install Debian's prometheus (its service is not started here);
#   - not root: say so and exit 0; the test then skips loudly, or fails
#     under CI=true.
set -eu

if command -v promtool >/dev/null 2>&1; then
	echo "ensure-promtool: $(promtool --version 2>&1 | head -1)"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-promtool: no promtool and not root: not installing it (deploy/prometheus's test skips, or fails under CI=true)" >&2
	exit 0
fi
echo "ensure-promtool: installing prometheus (for promtool; its server is not started)"
apt-get update -qq
# A policy-rc.d that refuses (exit 101) keeps the package's service from
# starting as it installs, as Debian's image builds do; one already there
# is left as it is.
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
	policy=/usr/sbin/policy-rc.d
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
echo "ensure-promtool: $(promtool --version 2>&1 | head -1)"
