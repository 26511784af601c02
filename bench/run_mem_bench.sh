#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_mem_bench.sh BUILD_DIR: what `sptrace mem` costs on the libc
# allocator, as figures measured in this one run. Needs root and the meson
# build (bench/probe_cost, tests/hosts/mem_libc, userspace/sptrace);
# bpftrace is optional. About a minute.
#
#   - a bare syscall (getppid), the unit every cost is given in;
#   - one malloc(64)+free pair untraced, and traced by `sptrace mem` with
#     allocation stacks, without (--no-stacks), and with --sample 100:
#     the added cost per pair in syscalls, and the slowdown of the loop;
#   - the same loop under a bpftrace script doing the same live tracking
#     (entry, return and free probes, a pointer -> size map).
set -euo pipefail

prog=${0##*/}
die() { printf '%s: %s\n' "$prog" "$*" >&2; exit 1; }

[ $# -eq 1 ] || { echo "usage: $prog BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
pc=$build/bench/probe_cost
host=$build/tests/hosts/mem_libc
sp=$build/userspace/sptrace
for f in "$pc" "$host" "$sp"; do
	[ -x "$f" ] || die "$f: not built (meson compile -C $1)"
done
[ "$(id -u)" -eq 0 ] || die "must run as root"
libc=$(ldd "$host" | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -n "$libc" ] || die "$host: no libc.so in ldd output"

ns_of() { sed -n 's/.*ns_per_iter=\([0-9.]*\).*/\1/p' | tail -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# Added cost per pair, in syscalls: (traced - untraced) / syscall.
added() { awk -v t="$1" -v u="$2" -v s="$3" 'BEGIN { printf "%.1f", (t - u) / s }'; }

N=${N_PAIRS:-300000}
sys=$("$pc" syscall 1000000 3 | ns_of)
bare=$("$host" loop $((N * 10)) | ns_of)
stacks=$("$sp" mem -o /dev/null --force -- "$host" loop "$N" 2>/dev/null | ns_of)
nostacks=$("$sp" mem --no-stacks -o /dev/null --force -- "$host" loop "$N" 2>/dev/null | ns_of)
sampled=$("$sp" mem --sample 100 -o /dev/null --force -- "$host" loop "$N" 2>/dev/null | ns_of)
bt=""
if command -v bpftrace >/dev/null; then
	bt=$(timeout 300 bpftrace -e "
uprobe:$libc:malloc /pid == cpid/ { @size[tid] = arg0; }
uretprobe:$libc:malloc /pid == cpid/ { @live[retval] = @size[tid]; delete(@size[tid]); }
uprobe:$libc:free /pid == cpid/ { delete(@live[arg0]); }
END { clear(@live); clear(@size); }" -c "$host loop $N" 2>/dev/null | ns_of || true)
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
[ -n "$bt" ] && printf '  %-44s %s\n' "sptrace (stacks) / bpftrace" "$(ratio "$stacks" "$bt")"
exit 0
