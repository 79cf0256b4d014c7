#!/bin/sh
# bench-restart.sh DATA [MESH]: times a restart of `mesh up` on the data
# directory DATA (BenchmarkRestartQuietDays's MESH_RESTART_DIR, or any
# other), the page cache dropped first (as root): the seconds to the log's
# "controller: serving", and to the answer of the first `mesh status`.
# MESH is the binary to time (default: mesh on PATH). It stops the
# controller after the answer. BENCHMARKS.md, "Issue 23 item 3: the
# restart measured end to end", has its figures.
set -eu
data=${1:?usage: bench-restart.sh DATA [MESH]}
mesh=${2:-mesh}
log=$(mktemp)
out=$(mktemp)
sync
if [ -w /proc/sys/vm/drop_caches ]; then echo 3 >/proc/sys/vm/drop_caches; else echo "bench-restart: not root: the page cache stays warm" >&2; fi
now() { date +%s.%N; }
start=$(now)
"$mesh" up --data "$data" --listen 127.0.0.1:17480 --bus-listen 127.0.0.1:14222 --interval 1h >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log" "$out"' EXIT
until grep -q "controller: serving" "$log"; do
	kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
	sleep 0.05
done
served=$(now)
MESH_SERVER=http://127.0.0.1:17480 MESH_TOKEN=$(cat "$data/api-token") "$mesh" status >"$out"
answered=$(now)
echo "serving after $(echo "$served - $start" | bc) s; the first mesh status ($(($(wc -l <"$out") - 1)) nodes) after $(echo "$answered - $start" | bc) s"
grep -o 'msg="controller: resumed from a checkpoint".*' "$log" || echo "no checkpoint resumed"
