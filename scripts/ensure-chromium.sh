#!/bin/sh
# ensure-chromium.sh: make a headless Chromium available for the browser
# test of the web page (web/browser_test.go; task test runs it first).
#
#   - $MESH_CHROMIUM names one, or chromium (or chromium-browser,
#     google-chrome) is on PATH: done;
#   - none and running as root: install Debian's chromium.
#
# Not root and none found: it says so and exits 0; the browser test then
# skips loudly, or fails under CI=true.
set -eu

found() {
	if [ -n "${MESH_CHROMIUM:-}" ] && [ -x "$MESH_CHROMIUM" ]; then
		return 0
	fi
	for b in chromium chromium-browser google-chrome google-chrome-stable headless-shell; do
		command -v "$b" >/dev/null 2>&1 && return 0
	done
	return 1
}

if found; then
	echo "ensure-chromium: a Chromium is installed"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-chromium: no Chromium and not root: not installing one (the browser test skips, or fails under CI=true)" >&2
	exit 0
fi
echo "ensure-chromium: installing chromium"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
found || { echo "ensure-chromium: chromium installed but not on PATH" >&2; exit 1; }
echo "ensure-chromium: a Chromium is installed"
