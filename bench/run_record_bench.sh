#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_record_bench.sh BUILD_DIR: what recording costs, as figures measured
# in this one run. Needs root and the meson build (bench/probe_cost,
# examples/query_engine, userspace/sptrace): `sudo ./example.sh` on the
# Debian 12 VM builds them. About a minute.
#
# Every figure is checked before it is printed: event counts come from the
# programs traced (query_engine's own totals, probe_cost's loop size), and
# the bench fails when sptrace's figures differ from them.
#
#   - bytes per event on disk, recording the query-engine example;
#   - cost per probe event recorded, as a ratio to a bare syscall and to
#     the live (aggregating only) mode, on bench/probe_cost's pair loop;
#   - summarize throughput in events per second on a file of >= 10 M events;
#   - the loader's peak RSS while recording that file.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
pc=$build/bench/probe_cost
qe=$build/examples/query_engine
sp=$sptrace
bench_need "$pc" "$qe"
bench_root
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ns_of() { sed -n 's/.*ns_per_iter=\([0-9.]*\).*/\1/p' | tail -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# 1. bytes per event on a realistic workload. query_engine prints its own
# totals; its query events are 2 per query, incr load and blocked
# interval, 1 per cache hit. The trace may also hold a few thread names.
"$sp" record -o "$tmp/qe.spt" -- "$qe" -q -j 4 >"$tmp/qe.out" 2>&1 ||
	die "recording query_engine failed: $(tail -n 3 "$tmp/qe.out")"
events=$(sed -n 's/.* queries=\([0-9]*\) cache_hits=\([0-9]*\) incr_loads=\([0-9]*\) blocked=\([0-9]*\).*/\1 \2 \3 \4/p' "$tmp/qe.out" |
	awk '{ print 2 * $1 + $2 + 2 * $3 + 2 * $4 }')
[ -n "$events" ] && [ "$events" -gt 0 ] || die "query_engine printed no totals: $(tail -n 3 "$tmp/qe.out")"
# pause events (kind 14, a batched flush's time) are no probe events.
in_file=$("$sp" export --csv "$tmp/qe.spt" -o - | tail -n +2 | awk -F, '$4 != "pause"' | wc -l)
[ "$in_file" -ge "$events" ] && [ "$in_file" -le $((events + 64)) ] ||
	die "the trace holds $in_file events, query_engine made $events (+ thread names)"
bytes=$(stat -c %s "$tmp/qe.spt")

# 2. cost per event: the pair loop untraced-syscall, live, recorded
N=${N_PAIRS:-1000000}
sys=$("$pc" syscall "$N" 3 | ns_of)
live_out=$("$sp" -f csv -- "$pc" pair "$N" 3 2>/dev/null)
grep -q "^bench,$((3 * N))," <<<"$live_out" ||
	die "live: sptrace did not count the loop's $((3 * N)) pairs: $(grep '^bench,' <<<"$live_out")"
live=$(ns_of <<<"$live_out")
rec=$("$sp" record -o "$tmp/pair.spt" -- "$pc" pair "$N" 3 2>/dev/null | ns_of)
"$sp" summarize -f csv "$tmp/pair.spt" | grep -q "^bench,$((3 * N))," ||
	die "record: the trace does not hold the loop's $((3 * N)) pairs"

# 3. summarize throughput on >= 10 M events (5 M pairs), and 4. the
# recorder's peak RSS meanwhile, read from /proc while it runs.
BIG=${BIG_PAIRS:-5000000}
"$sp" record -o "$tmp/big.spt" -- "$pc" pair "$BIG" 1 >/dev/null 2>&1 &
recorder=$!
peak=0
while kill -0 "$recorder" 2>/dev/null; do
	hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$recorder/status" 2>/dev/null || echo 0)
	[ "${hwm:-0}" -gt "$peak" ] && peak=$hwm
	sleep 0.2
done
wait "$recorder" || die "recording $BIG pairs failed"
t0=$(date +%s.%N)
"$sp" summarize -f json "$tmp/big.spt" >"$tmp/big.json"
t1=$(date +%s.%N)
# The loop's own count: BIG pairs, 2 events each. summarize must find them
# all (a lost event is reported, and then the figure is not printed).
big_events=$((2 * BIG))
big_count=$(python3 -c 'import json,sys; print(sum(q["count"] for q in json.load(open(sys.argv[1]))["queries"]))' "$tmp/big.json")
big_lost=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["errors"]["lost"])' "$tmp/big.json")
[ "$big_count" = "$BIG" ] && [ "$big_lost" = 0 ] ||
	die "the big trace holds $big_count of the loop's $BIG pairs ($big_lost events lost): no throughput figure"

echo "record bench ($build)"
printf '  %-46s %s\n' "bytes per event on disk (query_engine)" "$(ratio "$bytes" "$events") ($bytes bytes, $events events)"
printf '  %-46s %s ns\n' "bare syscall (getppid)" "$sys"
printf '  %-46s %s ns\n' "pair traced live (aggregation only)" "$live"
printf '  %-46s %s ns\n' "pair recorded (aggregation + ring buffer)" "$rec"
printf '  %-46s %s x syscall, %s x live\n' "recorded cost per event (pair / 2)" \
	"$(ratio "$rec" "$(awk -v s="$sys" 'BEGIN{print 2*s}')")" "$(ratio "$rec" "$live")"
printf '  %-46s %s M events/s (%s events in %.2f s)\n' "summarize throughput" \
	"$(awk -v n="$big_events" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) / 1e6 }')" \
	"$big_events" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
printf '  %-46s %s\n' "events lost while recording the big file" "$big_lost"
printf '  %-46s %s MiB\n' "recorder peak RSS while recording" "$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')"
