#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_attach_bench.sh BUILD_DIR: how long `sptrace -p` takes to attach to a
# process with 1,000 probe sites (500 queries, generated here), trace for
# 10 ms and detach, measured end to end. Needs root and a C compiler
# (`sudo ./example.sh` on the Debian 12 VM). Fails unless sptrace attached
# every site, and exits 1 when the target (under 2 s) is missed.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
bench_root
src=$(cd "$(dirname "$0")/.." && pwd)
sp=$sptrace
tmp=$(mktemp -d)
trap 'kill "$target" 2>/dev/null || true; rm -rf "$tmp"' EXIT

{
	echo '#include <sp_probe.h>'
	echo '#include <stdio.h>'
	echo '#include <unistd.h>'
	echo 'static volatile int sink;'
	for i in $(seq 0 499); do
		echo "__attribute__((noinline)) void f$i(void) { SP_QUERY_BEGIN(\"q$i\"); sink++; SP_QUERY_END(\"q$i\"); }"
	done
	echo 'int main(void) { puts("ready"); fflush(stdout); pause(); f0(); return 0; }'
} >"$tmp/sites.c"
cc -O2 -I"$src/probes" "$tmp/sites.c" -o "$tmp/sites"
sites=$(readelf -n "$tmp/sites" | grep -c 'Provider: sp')
"$tmp/sites" >/dev/null &
target=$!
sleep 0.2
t0=$(date +%s.%N)
"$sp" -v -p "$target" -d 0.01 >/dev/null 2>"$tmp/err" || {
	cat "$tmp/err" >&2
	exit 1
}
t1=$(date +%s.%N)
# -v names each file's attached sites ("...: N probe sites attached").
attached=$(sed -n 's/^sptrace: .*: \([0-9]*\) probe sites attached$/\1/p' "$tmp/err" | head -n 1)
[ "$attached" = "$sites" ] || {
	echo "${0##*/}: sptrace attached ${attached:-no} probe sites of $sites: $(grep '^sptrace' "$tmp/err" | head -n 3)" >&2
	exit 1
}
s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
printf 'attach %d sites, trace 10 ms, detach: %s s (target: < 2 s)\n' "$sites" "$s"
awk -v s="$s" 'BEGIN { exit !(s < 2) }' || { echo "${0##*/}: target missed" >&2; exit 1; }
