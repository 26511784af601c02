#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_mem_bench.sh BUILD_DIR: what `sptrace mem` costs on the libc
# allocator, as figures measured in this one run. Needs root and the meson
# build (bench/probe_cost, tests/hosts/mem_libc, userspace/sptrace):
# `sudo ./example.sh` on the Debian 12 VM; bpftrace is optional (`sudo
# apt-get install bpftrace`). About a minute. Each loop runs once, timed the
# same way by the host; a traced figure is printed only once the tracer is
# shown to have seen the loop's N allocations (sampled: N within the
# sampling error), or the bench fails.
#
#   - a bare syscall (getppid), the unit every cost is given in;
#   - one malloc(64)+free pair untraced, and traced by `sptrace mem` with
#     allocation stacks, without (--no-stacks), and with --sample 100:
#     the added cost per pair in syscalls, and the slowdown of the loop;
#   - the same loop under a bpftrace script doing the same live tracking
#     (entry, return and free probes, a pointer -> size map), compared
#     with --no-stacks (bpftrace records no stacks).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
pc=$build/bench/probe_cost
host=$build/tests/hosts/mem_libc
sp=$sptrace
bench_need "$pc" "$host"
bench_root
libc=$(ldd "$host" | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -n "$libc" ] || die "$host: no libc.so in ldd output"

ns_of() { sed -n 's/.*ns_per_iter=\([0-9.]*\).*/\1/p' | tail -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# Added cost per pair, in syscalls: (traced - untraced) / syscall.
added() { awk -v t="$1" -v u="$2" -v s="$3" 'BEGIN { printf "%.1f", (t - u) / s }'; }

N=${N_PAIRS:-300000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# traced_ns LABEL MIN MAX SPTRACE_MEM_OPTIONS...: the loop's ns per pair
# under sptrace mem; dies unless the loop's site (the heap's total without
# stacks) counted MIN..MAX allocations.
traced_ns() {
	local label=$1 min=$2 max=$3 out n
	shift 3
	rm -f "$tmp/m.json"
	out=$("$sp" mem "$@" -f json -o "$tmp/m.json" -- "$host" loop "$N" 2>/dev/null) ||
		die "$label: sptrace mem failed"
	n=$(python3 -c 'import json,sys; print(sum(s["allocs"] for s in json.load(open(sys.argv[1]))["sites"] if s["stack"] and s["stack"][0].startswith("loop+")) if json.load(open(sys.argv[1]))["sites"] else json.load(open(sys.argv[1]))["heap"]["allocs"])' "$tmp/m.json")
	[ "$n" -ge "$min" ] && [ "$n" -le "$max" ] ||
		die "$label: sptrace counted $n of the loop's $N allocations"
	ns_of <<<"$out"
}
sys=$("$pc" syscall 1000000 3 | ns_of)
bare=$("$host" loop $((N * 10)) 2>/dev/null | ns_of)
stacks=$(traced_ns "with stacks" "$N" "$N")
# --no-stacks has no sites: the heap's total, the loop's N and stdout's buffer.
nostacks=$(traced_ns "--no-stacks" "$N" $((N + 1)) --no-stacks)
# Sampling: fewer than 100 per CPU may be left unsampled.
sampled=$(traced_ns "--sample 100" $((N - 99 * $(nproc --all))) "$N" --sample 100)
bt=""
if command -v bpftrace >/dev/null; then
	out=$(timeout 300 bpftrace -e "
uprobe:$libc:malloc /pid == cpid/ { @size[tid] = arg0; }
uretprobe:$libc:malloc /pid == cpid/ { @live[retval] = @size[tid]; delete(@size[tid]); @n = count(); }
uprobe:$libc:free /pid == cpid/ { delete(@live[arg0]); }
END { clear(@live); clear(@size); }" -c "$host loop $N" 2>/dev/null) ||
		die "bpftrace failed"
	n=$(sed -n 's/^@n: \([0-9]*\)$/\1/p' <<<"$out")
	[ "${n:-0}" -ge "$N" ] || die "bpftrace saw ${n:-no} of the loop's $N malloc() returns"
	bt=$(ns_of <<<"$out")
fi

echo "mem bench ($build, libc $libc)"
printf '  %-44s %s ns\n' "bare syscall (getppid)" "$sys"
printf '  %-44s %s ns\n' "malloc(64)+free pair, untraced" "$bare"
for row in "traced, with stacks:$stacks" "traced, --no-stacks:$nostacks" \
	   "traced, --sample 100:$sampled" ${bt:+"bpftrace, same live tracking:$bt"}; do
	name=${row%%:*}
	v=${row##*:}
	printf '  %-44s %s ns = +%s syscalls per pair, loop %sx slower\n' \
		"pair $name" "$v" "$(added "$v" "$bare" "$sys")" "$(ratio "$v" "$bare")"
done
[ -n "$bt" ] && printf '  %-44s %s\n' "sptrace (--no-stacks) / bpftrace" "$(ratio "$nostacks" "$bt")"
exit 0
