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
#   bench_pg_start DIR OPTS...     a throw-away PostgreSQL 15 cluster in
#                                  DIR (private socket DIR/sock, no TCP),
#                                  postgres' extra -c OPTS; sets pgbin,
#                                  pm (the postmaster's pid)
#   bench_pg_stop DIR              stops it (also half-started) and
#                                  removes DIR: for the EXIT trap
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

bench_pg_stop() {
	local dir=$1

	if [ -f "$dir/data/postmaster.pid" ]; then
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$dir/data" -m immediate \
			-w -t 30 stop >/dev/null 2>&1 ||
			kill -KILL "$(head -1 "$dir/data/postmaster.pid")" 2>/dev/null || true
	fi
	rm -rf "$dir"
}

bench_pg_start() {
	local dir=$1

	shift
	pgbin=/usr/lib/postgresql/15/bin
	[ -x "$pgbin/postgres" ] || die "$pgbin/postgres: PostgreSQL 15 is not installed (apt-get install postgresql-15)"
	id postgres >/dev/null 2>&1 || die "no 'postgres' user to run the cluster as"
	chown postgres: "$dir"
	mkdir -m 700 "$dir/sock" && chown postgres: "$dir/sock"
	runuser -u postgres -- "$pgbin/initdb" -D "$dir/data" -A trust -U postgres \
		--no-sync >/dev/null
	runuser -u postgres -- "$pgbin/pg_ctl" -D "$dir/data" -w -t 60 -l "$dir/log" \
		-o "-c listen_addresses='' -k $dir/sock -c autovacuum=off $*" start >/dev/null
	pm=$(head -1 "$dir/data/postmaster.pid")
}
