#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_drain_cost.sh BUILD_DIR: the BPF time per record of the batched
# sp:flush drain. Runs bench/batch_cost's pair loop (one thread) under
# `sptrace -p`, with BPF run-time statistics on, and prints sp_flush's
# run_time_ns / run_cnt over a 4-second window, per flush and per record
# (a full flush drains 254 records: 253 BEGIN/END plus the PAUSE record of
# the flush before; sp_probe.h flushes when the 254th is appended). Needs
# root. Not a test; about 10 seconds.
set -euo pipefail

BENCH_DIE=2	# 1 is a missed target
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
bc=$build/bench/batch_cost
bench_need "$bc"
bench_root
command -v bpftool >/dev/null || die "bpftool not found (apt-get install bpftool)"

out=$(mktemp /tmp/sptrace-drain.XXXXXX)
stats='' host='' sp=''
cleanup() {
	for p in $sp $host $stats; do kill "$p" 2>/dev/null || true; done
	rm -f "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_bpf_stats_on
stats=$!
first=$(bpftool prog show -j | python3 -c 'import json, sys; print(max([p["id"] for p in json.load(sys.stdin)] or [0]))')
"$bc" pair 100000000000 1 >/dev/null &
host=$!
"$sptrace" -v -p "$host" >"$out" 2>&1 &
sp=$!
for _ in $(seq 100); do
	grep -q tracing "$out" && break
	kill -0 "$sp" 2>/dev/null || { cat "$out" >&2; die "sptrace exited"; }
	sleep 0.1
done
grep -q "(batched events)" "$out" || die "the loop was not attached batched (see $out)"
# sp_flush of this sptrace: the first one loaded after we started.
snap() {
	bpftool prog show -j | python3 -c '
import json, sys
ps = sorted((p for p in json.load(sys.stdin) if p["id"] > int(sys.argv[1]) and
             p.get("name") == "sp_flush"), key=lambda p: p["id"])
print(ps[0].get("run_cnt", 0), ps[0].get("run_time_ns", 0)) if ps else print("0 0")' "$first"
}
sleep 1
a=$(snap)
sleep 4
b=$(snap)
echo "$a $b" | awk '{ n = $3 - $1; t = $4 - $2
	if (n <= 0) { print "no flush in the window"; exit 1 }
	printf "sp_flush: %d flushes in 4 s, %.0f ns per flush, %.1f ns per record\n", n, t / n, t / n / 254 }'
