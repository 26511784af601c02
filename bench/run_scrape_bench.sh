#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_scrape_bench.sh BUILD_DIR: what a Prometheus scrape of `sptrace serve`
# costs with 10,000 distinct queries, and how much memory serve holds, as
# figures measured in this one run. Needs root, curl and the meson build
# (userspace/sptrace, tests/hosts/fleet_host). About a minute.
# PROCESS_LABELS=info|series passes serve --process-labels (default: serve's).
#
#   - a host runs 10,000 distinct query names (NAMES) in rounds, every
#     name in every round (200 ms apart): between two scrapes every row
#     changed, the worst case for serve's per-row cache;
#   - N cold scrapes, each after the 500 ms render cache expired, so each
#     one reads the maps and renders the exposition: curl's time to the
#     first byte (read + render) and to the last (+ sending), median and
#     p90, and serve's own CPU time for it (median, p90); each is followed
#     at once by a warm scrape (the same body from the cache: sending
#     only), the floor of that moment; the body size, and serve's own
#     figure of the map read (sptrace_read_duration_seconds);
#   - 100 concurrent scrapes: wall time for all of them, and serve's CPU
#     time for them (each scrape is sent from the same exposition);
#   - serve's CPU time over 4 s without scrapes (its loop, and its look
#     for processes of the -b file every 200 ms), right after a scrape so
#     that no 5 s housekeeping read falls in it;
#   - serve's VmRSS before the scrapes, after them, and after another
#     N cold scrapes (steady: it must not grow with the number of scrapes).
#
# Noise. The VM has 2 CPUs shared with other work: a scrape's wall time
# includes the time serve and curl wait for a CPU, which has nothing to do
# with serve (on a loaded machine it is most of it). So the aim, a cold
# scrape answered in under 50 ms, is judged on serve's own CPU time per
# cold scrape (the kernel's /proc/PID/task/*/schedstat of serve's threads,
# read just before and just after each curl: reading the maps, rendering,
# sending and whatever serve's loop did meanwhile), its median over N; on
# an idle machine the wall time is about that (curl receives on the other
# CPU). Wall times are printed next to it with the load average, and
# curl writes to /dev/null (the body's copy for the checks is fetched
# apart): curl's own writes are not serve's.
#
# Needs `sudo ./example.sh` on the Debian 12 VM (it builds and installs
# curl). Before printing, it checks that tracing happened (serve's count of
# one name equals the host's own, once the host has ended), and it exits 1
# when a stated aim is missed: all 100 concurrent scrapes answered 200,
# VmRSS after the later scrapes within 1 MiB of after the first ones, and
# serve's CPU time per cold scrape, median, under 50 ms.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
sp=$sptrace
host=$build/tests/hosts/fleet_host
bench_need "$host"
bench_root
command -v curl >/dev/null || die "needs curl"

NAMES=${NAMES:-10000}
N=${N_SCRAPES:-20}
tmp=$(mktemp -d)
spid="" hpid=""
cleanup() {
	[ -n "$hpid" ] && kill "$hpid" 2>/dev/null || true
	[ -n "$spid" ] && kill -INT "$spid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

: >"$tmp/serve.err"
# PROCESS_LABELS=series: binary and title on every series (serve
# --process-labels), to compare both expositions with one build.
labels=()
[ -z "${PROCESS_LABELS:-}" ] || labels=(--process-labels "$PROCESS_LABELS")
"$sp" serve --listen 127.0.0.1:0 --max-queries 16384 "${labels[@]}" \
	-b "$host" 2>"$tmp/serve.err" &
spid=$!
for _ in $(seq 100); do
	grep -q 'serving http://' "$tmp/serve.err" && break
	sleep 0.1
done
url=$(sed -n 's/.*serving \(http:[^ ]*\).*/\1/p' "$tmp/serve.err")
[ -n "$url" ] || die "serve did not start: $(cat "$tmp/serve.err")"
"$host" --names "$NAMES" --pause-ms 200 --spin-us 1 >"$tmp/host.out" &
hpid=$!
last=$(printf 'q%05d' $((NAMES - 1)))
seen() {
	curl -s -o "$tmp/body" "$url" &&
		grep -q "invocations_total{query=\"$last\"" "$tmp/body"
}
for _ in $(seq 300); do
	seen && break
	sleep 0.2
done
seen || die "the $NAMES series did not appear"

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$spid/status"; }
cpu_ns() {	# serve's time on a CPU so far (all its threads)
	cat /proc/"$spid"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
# N cold scrapes, each followed by a warm one; per line, in ms: cold first
# byte, cold total, serve's CPU for the cold one, warm total, serve's CPU
# for the warm one.
cold() {
	local c0 c1 c2 t w
	for _ in $(seq "$N"); do
		sleep 0.6
		c0=$(cpu_ns)
		t=$(curl -s -o /dev/null -w '%{time_starttransfer} %{time_total}' "$url")
		c1=$(cpu_ns)
		w=$(curl -s -o /dev/null -w '%{time_total}' "$url")
		c2=$(cpu_ns)
		echo "$t $c0 $c1 $w $c2" | awk '{ printf "%.1f %.1f %.1f %.1f %.1f\n",
			$1 * 1000, $2 * 1000, ($4 - $3) / 1e6, $5 * 1000, ($6 - $4) / 1e6 }'
	done
}
stats() {	# column $1 of stdin: median and p90 (nearest rank)
	awk -v c="$1" '{ print $c }' | sort -n |
		awk '{ v[NR] = $1 } END { p = int(0.9 * NR); if (p < 0.9 * NR) p++
			printf "median %.1f ms, p90 %.1f ms", v[int((NR + 1) / 2)], v[p] }'
}
median() {	# column $1 of stdin
	awk -v c="$1" '{ print $c }' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
load() { cut -d' ' -f1 /proc/loadavg; }

rss0=$(rss)
load0=$(load)
curl -s -o /dev/null "$url"
i0=$(cpu_ns)
sleep 4
i1=$(cpu_ns)
cold >"$tmp/t1"
rss1=$(rss)
sleep 0.6
curl -s -o "$tmp/body" "$url"
bytes=$(wc -c <"$tmp/body")
lines=$(wc -l <"$tmp/body")
read_s=$(awk '/^sptrace_read_duration_seconds / { print $2 * 1000 }' "$tmp/body")
sleep 0.6
t0=$(date +%s.%N)
c0=$(cpu_ns)
seq 100 | xargs -P 100 -I{} curl -s -o /dev/null -w '%{http_code}\n' "$url" >"$tmp/codes" || true	# a failed curl: counted below
c1=$(cpu_ns)
t1=$(date +%s.%N)
ok=$(grep -c '^200$' "$tmp/codes" || true)
cold >"$tmp/t2"
rss2=$(rss)
load1=$(load)
# Tracing happened: the host's own count of q00000, once it has ended,
# equals serve's (read after the render cache expired).
kill -TERM "$hpid"
wait "$hpid" || true
hpid=""
want=$(sed -n 's/.*"invocations_per_name":\([0-9]*\).*/\1/p' "$tmp/host.out")
sleep 0.6
curl -s -o "$tmp/body" "$url"
got=$(awk '/^sptrace_query_invocations_total\{query="q00000",/ { s += $NF } END { print s + 0 }' "$tmp/body")
fail=""
[ -n "$want" ] && [ "$want" -gt 0 ] && [ "$got" = "$want" ] ||
	die "serve counted $got invocations of q00000, the host made ${want:-?}: no figures"
[ "$ok" = 100 ] || fail="$fail; $ok of 100 concurrent scrapes answered 200"
[ "$rss2" -le $((rss1 + 1024)) ] || fail="$fail; VmRSS grew from $rss1 to $rss2 kB"
# A warm scrape that took CPU like a cold one was rendered again (the
# cold one ended past the 500 ms cache): not a floor, left out.
awk '$5 < $3 / 2' "$tmp/t1" >"$tmp/w1"
cpu=$(median 3 <"$tmp/t1")
awk -v m="$cpu" 'BEGIN { exit !(m < 50) }' ||
	fail="$fail; serve's CPU time per cold scrape, median $cpu ms, aim < 50 ms"

echo "scrape bench ($build, $NAMES distinct queries, process labels ${PROCESS_LABELS:-default}, $(nproc) CPUs, load average $load0 .. $load1)"
printf '  %-40s %s\n' "body" "$bytes bytes, $lines lines"
printf '  %-40s %s\n' "cold scrape: serve's CPU time (aim)" "$(stats 3 <"$tmp/t1") over $N, aim < 50 ms"
printf '  %-40s %s\n' "cold scrape, wall, whole" "$(stats 2 <"$tmp/t1")"
printf '  %-40s %s\n' "  first byte (read + render)" "$(stats 1 <"$tmp/t1")"
printf '  %-40s %s\n' "  reading the maps (last scrape)" "$read_s ms"
printf '  %-40s %s\n' "warm scrape right after (sending only)" "$(stats 4 <"$tmp/w1") over $(wc -l <"$tmp/w1"), serve's CPU $(stats 5 <"$tmp/w1")"
printf '  %-40s %s\n' "100 concurrent scrapes" "$ok of 100 answered 200, all in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms, serve's CPU $(( (c1 - c0) / 1000000 )) ms"
printf '  %-40s %s\n' "no scrapes for 4 s: serve's CPU" "$(( (i1 - i0) / 1000000 )) ms"
printf '  %-40s %s\n' "cold scrape later: serve's CPU time" "$(stats 3 <"$tmp/t2") over $N"
printf '  %-40s %s\n' "  wall, whole" "$(stats 2 <"$tmp/t2")"
printf '  %-40s %s\n' "serve VmRSS" "$rss0 kB before, $rss1 kB after $N scrapes, $rss2 kB after $((2 * N + 100))"
printf '  %-40s %s\n' "q00000, serve and host" "$got invocations, the host's own count"
[ -z "$fail" ] || die "aim missed${fail}"
