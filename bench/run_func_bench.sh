#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_func_bench.sh BUILD_DIR: the cost of one function call traced with
# --func (an entry and a return probe), as a ratio to a bare syscall timed
# in the same run. Needs root and a C compiler (`sudo ./example.sh` on the
# Debian 12 VM installs both). Each loop runs once, timed the same way; the
# traced figure is printed only if sptrace counted every one of the calls.
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
bench_root
sp=$sptrace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/calls.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
static volatile unsigned long sink;
__attribute__((noinline)) void bench_fn(void) { sink++; }
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}
int main(int argc, char **argv)
{
	long n = atol(argv[2]), i;
	double t0 = now();
	if (argv[1][0] == 's')
		for (i = 0; i < n; i++)
			syscall(SYS_getppid);
	else
		for (i = 0; i < n; i++)
			bench_fn();
	printf("%.2f\n", (now() - t0) / n);
	return 0;
}
C
cc -O2 -fno-optimize-sibling-calls "$tmp/calls.c" -o "$tmp/calls"
N=${N_CALLS:-1000000}
sys=$("$tmp/calls" s "$N")
plain=$("$tmp/calls" c "$N")
traced=$("$sp" --func bench_fn -f csv -o "$tmp/counts.csv" -- "$tmp/calls" c "$N" 2>/dev/null)
grep -q "^bench_fn,$N," "$tmp/counts.csv" || {
	echo "${0##*/}: sptrace did not count the $N calls: $(grep '^bench_fn,' "$tmp/counts.csv")" >&2
	exit 1
}
printf 'bare syscall (getppid): %s ns; untraced call: %s ns; call traced by --func: %s ns = %s x a syscall\n' \
	"$sys" "$plain" "$traced" "$(awk -v a="$traced" -v b="$sys" 'BEGIN { printf "%.2f", a / b }')"
