# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034
#
# bench/lib.sh: how every bench/run_*.sh starts. Sourced after
# `set -euo pipefail`:
#   bench_start ARGS MIN MAX "$@"  the usage line (ARGS after the name) on
#                                  -h or a wrong count; $1 a build directory:
#                                  sets build (absolute) and sptrace
#   bench_need FILE...             each one built and executable
#   bench_root                     running as root (uprobes need it)
#   bench_bpf_stats_on             BPF run-time statistics on, until $! dies
# die exits with $BENCH_DIE, 1 unless the script keeps 1 for "a target
# was missed" and sets 2.

prog=${0##*/}
die() { printf '%s: %s\n' "$prog" "$*" >&2; exit "${BENCH_DIE:-1}"; }
warn() { printf '%s: warning: %s\n' "$prog" "$*" >&2; }

bench_need() {
	local f

	for f; do
		[ -x "$f" ] || die "$f: not found or not executable (meson compile -C $build)"
	done
}

bench_start() {
	local args=$1 min=$2 max=$3

	shift 3
	if [ $# -lt "$min" ] || [ $# -gt "$max" ] || [ "${1:-}" = -h ] ||
	   [ "${1:-}" = --help ]; then
		echo "usage: $prog $args   (BUILD_DIR: a configured and compiled meson build directory)" >&2
		exit 2
	fi
	[ -d "$1" ] || die "$1: no such build directory (meson setup $1 && meson compile -C $1)"
	build=$(cd "$1" && pwd)
	sptrace=$build/userspace/sptrace
	bench_need "$sptrace"
}

# BPF run-time statistics on (run_time_ns, run_cnt) until the background
# process it starts ($!) is killed: a held BPF_ENABLE_STATS descriptor, as
# the kernel.bpf_stats_enabled sysctl is one switch that any other user of
# the machine may turn off meanwhile.
bench_bpf_stats_on() {
	python3 -c '
import ctypes, signal, struct
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("I", 0) + bytes(124))
if libc.syscall(321, 32, attr, 128) < 0:     # bpf(BPF_ENABLE_STATS, RUN_TIME)
    raise SystemExit("BPF_ENABLE_STATS failed: errno %d" % ctypes.get_errno())
signal.pause()' &
}

bench_root() {
	[ "$(id -u)" -eq 0 ] || die "must run as root: attaching uprobes needs it"
}
