#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_follow_bench.sh BUILD_DIR [N]: what --follow costs a process tree
# that execs a lot: a shell runs the static test host N times (default
# 500), untraced, under `sptrace -- sh` (only the shell traced) and under
# `sptrace --follow -- sh` (each exec stopped until attached). Prints the
# extra time per exec of --follow over plain sptrace, and the ratio of the
# two runs. Needs root.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start "BUILD_DIR [N]" 1 2 "$@"
n=${2:-500}
sp=$sptrace
host=$build/tests/hosts/follow_static
bench_need "$host"
bench_root
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
loop="i=0; while [ \$i -lt $n ]; do \"$host\" --leaf 1 >/dev/null; i=\$((i + 1)); done"

secs() {	# secs CMD...: wall time of CMD, in seconds
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>>"$tmp/stderr"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

plain=$(secs sh -c "$loop")
traced=$(secs "$sp" -f json -o "$tmp/a.json" -- sh -c "$loop")
follow=$(secs "$sp" --follow -f json -o "$tmp/b.json" -- sh -c "$loop")
count=$(python3 -c 'import json,sys; print(sum(q["count"] for q in json.load(open(sys.argv[1]))["queries"]))' "$tmp/b.json")
[ "$count" -eq "$n" ] || { echo "${0##*/}: --follow counted $count queries, not $n" >&2; exit 1; }
awk -v n="$n" -v p="$plain" -v t="$traced" -v f="$follow" 'BEGIN {
	printf "%d execs: untraced %.2f s, sptrace %.2f s, sptrace --follow %.2f s\n", n, p, t, f
	printf "--follow: %.2f ms more per exec than sptrace; ratio %.2f\n", (f - t) * 1000 / n, f / t
}'
