#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_probe_cost.sh BUILD_DIR: what an sp probe costs, as ratios between
# loops timed in this one run (absolute ns differ between machines, ratios
# much less). Needs root (uprobes), the meson build of bench/probe_cost and
# userspace/sptrace, and bpftrace for the comparison rows: on the Debian 12
# VM of ./example.sh, `sudo ./example.sh` then `sudo apt-get install
# bpftrace`. About a minute.
#
# Rows (ns per loop iteration; every row the fastest of the same number of
# timed runs, 3 rounds x R_LOOP untraced, 3 rounds x R_TRACED traced, the
# rounds of the tools alternating):
#   empty loop, sp pair untraced, bare getppid syscall, sp pair traced by
#   sptrace, sdt pair untraced and traced by bpftrace, and the sp pair
#   traced by that same bpftrace script, which separates what the probe site
#   (sp's 5-byte nop vs sdt's 1-byte nop) and the tracer each contribute.
#   Then the same pair named by run-time text (SP_QUERY_BEGIN_STR), untraced
#   and traced by sptrace, against the literal's pair.
#   The bpftrace script does the work sptrace's BPF does per pair: a
#   per-thread start, and per name *pointer* (no string copy) a sum, a
#   count and a histogram.
#
# Every traced row is checked before it is printed: the tracer counted
# exactly the pairs the loop ran (N x runs), or the bench fails.
#
# Loop sizes can be changed from the environment: N_LOOP, N_SYSCALL,
# N_TRACED (the traced loops, sptrace and bpftrace alike).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
pc=$build/bench/probe_cost
bench_need "$pc"
bench_root
bpftrace=$(command -v bpftrace || true)
[ -n "$bpftrace" ] || warn "bpftrace not found: skipping the bpftrace rows (apt-get install bpftrace)"

N_LOOP=${N_LOOP:-50000000}	# empty and untraced pair loops, x R_LOOP x 3
N_SYSCALL=${N_SYSCALL:-1000000}	# x R_SYSCALL
N_TRACED=${N_TRACED:-1000000}	# each traced pair loop, x R_TRACED
R_LOOP=5
R_SYSCALL=3
R_TRACED=3

# The value of ns_per_iter= in probe_cost's output (other output, such as
# the tracer's, is ignored).
ns_of() { sed -n 's/.*mode=.*ns_per_iter=\([0-9.]*\).*/\1/p' | tail -n 1; }

# measure LABEL CMD...: runs CMD, sets $out to its output and $ns to the
# figure probe_cost printed; dies with the output if either fails.
measure() {
	local label=$1
	shift
	if ! out=$(timeout 120 "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		die "$label: '$*' failed"
	fi
	ns=$(ns_of <<<"$out")
	[ -n "$ns" ] || { printf '%s\n' "$out" >&2; die "$label: no ns_per_iter= in the output of '$*'"; }
}

# calc EXPR: floating-point arithmetic; "n/a" when a divisor is not positive.
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }

row() { printf '  %-40s %10.2f\n' "$1" "$2"; }

# A bpftrace script doing what sptrace's BPF does per pair: remember the
# start per thread, and at the end add the duration, a count and a
# histogram bucket, keyed by the name's pointer as sptrace keys its rows
# (sptrace reads a name's string once per pointer, in userspace).
bt_script() { # PROVIDER BEGIN END
	local p=$pc
	printf 'usdt:%s:%s:%s { @s[tid] = nsecs; } ' "$p" "$1" "$2"
	printf 'usdt:%s:%s:%s /@s[tid]/ { $d = nsecs - @s[tid]; @t[arg0] = sum($d); @c[arg0] = count(); @h[arg0] = hist($d); delete(@s[tid]); }' "$p" "$1" "$3"
}

pairs=$((N_TRACED * R_TRACED))

# bt_measure LABEL PROVIDER BEGIN END MODE: the MODE loop under bpftrace,
# R_TRACED timed runs as for sptrace; fails unless bpftrace counted every
# pair under one pointer.
bt_measure() {
	measure "$1" "$bpftrace" -e "$(bt_script "$2" "$3" "$4")" -c "$pc $5 $N_TRACED $R_TRACED"
	grep -q "^@c\[[0-9]*\]: $pairs\$" <<<"$out" ||
		die "$1: bpftrace did not count the loop's $pairs pairs: $(grep '^@c' <<<"$out" | head -3)"
}

echo "probe_cost: ns per loop iteration ($pc)"

# min A B: the smaller of two figures.
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }

# The sub-ns loops alternate, so that a change of CPU speed or load during
# the run hits both alike; each keeps its fastest figure.
empty='' disabled='' strdisabled=''
for _ in 1 2 3; do
	measure "empty loop" "$pc" empty "$N_LOOP" "$R_LOOP"
	empty=$(min "${empty:-$ns}" "$ns")
	measure "sp pair, not traced" "$pc" disabled "$N_LOOP" "$R_LOOP"
	disabled=$(min "${disabled:-$ns}" "$ns")
	grep -q 'traced=0' <<<"$out" || warn "the untraced sp pair ran with its probes enabled (is another tracer attached?)"
	measure "run-time-name pair, not traced" "$pc" strdisabled "$N_LOOP" "$R_LOOP"
	strdisabled=$(min "${strdisabled:-$ns}" "$ns")
done
row "empty loop (compiler barrier)" "$empty"
row "sp pair, not traced" "$disabled"
row "run-time-name sp pair, not traced" "$strdisabled"

measure "syscall" "$pc" syscall "$N_SYSCALL" "$R_SYSCALL"
sys=$ns
row "bare syscall (getppid)" "$sys"

if [ -n "$bpftrace" ]; then
	measure "sdt pair, not traced" "$pc" sdt "$N_LOOP" "$R_LOOP"
	sdt=$ns
fi
# The traced loops alternate too, three rounds of R_TRACED timed runs each,
# so that sptrace and bpftrace meet the same load; each keeps its fastest.
sp_traced='' str_traced='' sdt_bt='' sp_bt=''
for _ in 1 2 3; do
	measure "sp pair, sptrace" "$sptrace" -f csv -- "$pc" pair "$N_TRACED" "$R_TRACED"
	grep -q 'traced=1' <<<"$out" || die "sptrace had not enabled the probes when the loop started"
	grep -q "^bench,$pairs," <<<"$out" ||
		die "sptrace did not count the loop's $pairs pairs: $(grep '^bench,' <<<"$out")"
	sp_traced=$(min "${sp_traced:-$ns}" "$ns")
	measure "run-time-name pair, sptrace" "$sptrace" -f csv -- "$pc" strpair "$N_TRACED" "$R_TRACED"
	grep -q "^bench_rt,$pairs," <<<"$out" ||
		die "sptrace did not count the run-time-name loop's $pairs pairs: $(grep '^bench_rt,' <<<"$out")"
	str_traced=$(min "${str_traced:-$ns}" "$ns")
	[ -n "$bpftrace" ] || continue
	bt_measure "sdt pair, bpftrace" bench begin end sdt
	sdt_bt=$(min "${sdt_bt:-$ns}" "$ns")
	bt_measure "sp pair, bpftrace" sp query_begin query_end pair
	sp_bt=$(min "${sp_bt:-$ns}" "$ns")
done
row "sp pair, traced by sptrace" "$sp_traced"
row "run-time-name sp pair, traced by sptrace" "$str_traced"
if [ -n "$bpftrace" ]; then
	row "sdt pair, not traced" "$sdt"
	row "sdt pair, traced by bpftrace" "$sdt_bt"
	row "sp pair, traced by bpftrace" "$sp_bt"
fi

# Traced costs are net of the loop the pair sits in.
sp_pair=$(calc "$sp_traced - $empty")
echo
echo "ratios"
printf '  %-40s %10s ns = %sx the empty loop iteration\n' \
	"disabled sp pair overhead:" "$(calc "$disabled - $empty")" "$(ratio "$disabled" "$empty")"
printf '  %-40s %10s ns = %sx a bare syscall\n' \
	"sp pair traced by sptrace:" "$sp_pair" "$(ratio "$sp_pair" "$sys")"
printf '  %-40s %10s ns = %sx the literal'"'"'s\n' \
	"run-time-name pair overhead, untraced:" "$(calc "$strdisabled - $empty")" \
	"$(ratio "$(calc "$strdisabled - $empty")" "$(calc "$disabled - $empty")")"
printf '  %-40s %10s ns = %sx the literal'"'"'s\n' \
	"run-time-name pair traced by sptrace:" "$(calc "$str_traced - $empty")" \
	"$(ratio "$(calc "$str_traced - $empty")" "$sp_pair")"
if [ -n "$bpftrace" ]; then
	sdt_pair=$(calc "$sdt_bt - $sdt")
	sp_bt_pair=$(calc "$sp_bt - $empty")
	printf '  %-40s %10sx\n' "bpftrace sdt pair / sptrace sp pair:" "$(ratio "$sdt_pair" "$sp_pair")"
	printf '  %-40s %10sx  (the tracer alone)\n' "bpftrace sp pair / sptrace sp pair:" "$(ratio "$sp_bt_pair" "$sp_pair")"
	printf '  %-40s %10sx  (the probe site alone)\n' "bpftrace sdt pair / bpftrace sp pair:" "$(ratio "$sdt_pair" "$sp_bt_pair")"
fi
