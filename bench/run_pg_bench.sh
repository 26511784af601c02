#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_pg_bench.sh BUILD_DIR: what tracing PostgreSQL 15's own (1-byte nop)
# probes costs, sptrace --query vs bpftrace doing the same counting, in one
# run on one throw-away cluster. Needs root, PostgreSQL 15 (Debian's
# postgresql-15: /usr/lib/postgresql/15/bin) and bpftrace. Not a test; about
# 2 minutes. Prints ratios (timings on a shared machine are noisy; compare
# rows of one run, not runs).
#
# For each run: pgbench TPS (-c 4 -j 2, T seconds) as a ratio of the
# untraced run of the same workload, and the BPF programs' own time per
# event (BPF run-time statistics on, bpftool prog show: run_time_ns /
# run_cnt summed over the tool's programs), for the same work by both tools:
#   count: statements counted by their raw text (query__start)
#   pair:  statements timed, query__start..query__done, by raw text
# on three workloads: ten fixed statements (few names: what normalized text
# gives), select-only with a random key (a distinct text per statement:
# both tools keep 4096 names), and, for sptrace alone, the shipped spec.
# The BPF time per event is measured with both tools attached at once (the
# same events, the same cache state; twice); TPS with each tool alone (one
# run each: on a shared machine, compare TPS only as a rough guide).
#
# Environment: T (seconds per pgbench run, default 8), CLIENTS (default 4).
set -euo pipefail

prog=${0##*/}
die() { printf '%s: %s\n' "$prog" "$*" >&2; exit 1; }

if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
	echo "usage: $prog BUILD_DIR   (a configured and compiled meson build directory)" >&2
	exit 2
fi
[ -d "$1" ] || die "$1: no such build directory"
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
sptrace=$build/userspace/sptrace
pgbin=/usr/lib/postgresql/15/bin
postgres=$pgbin/postgres
[ -x "$sptrace" ] || die "$sptrace: not found (meson compile -C $1)"
[ "$(id -u)" -eq 0 ] || die "must run as root: attaching uprobes needs it"
[ -x "$postgres" ] || die "$postgres: PostgreSQL 15 is not installed (apt-get install postgresql-15)"
command -v bpftrace >/dev/null || die "bpftrace not found (apt-get install bpftrace)"
command -v bpftool >/dev/null || die "bpftool not found (apt-get install bpftool)"
id postgres >/dev/null 2>&1 || die "no 'postgres' user to run the cluster as"

T=${T:-8}
CLIENTS=${CLIENTS:-4}

# ---- a throw-away cluster, removed whatever happens ----------------------
dir=$(mktemp -d /tmp/sptrace-pgbench.XXXXXX)
tracer_pid=
stats_pid=
cleanup() {
	# shellcheck disable=SC2086
	[ -n "$tracer_pid" ] && kill -KILL $tracer_pid 2>/dev/null || true
	[ -n "$stats_pid" ] && kill "$stats_pid" 2>/dev/null || true
	if [ -f "$dir/data/postmaster.pid" ]; then
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$dir/data" -m immediate \
			-w -t 30 stop >/dev/null 2>&1 ||
			kill -KILL "$(head -1 "$dir/data/postmaster.pid")" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
chown postgres: "$dir"
mkdir -m 700 "$dir/sock" && chown postgres: "$dir/sock"
as_pg() { runuser -u postgres -- "$@"; }
as_pg "$pgbin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
as_pg "$pgbin/pg_ctl" -D "$dir/data" -w -t 60 -l "$dir/log" \
	-o "-c listen_addresses='' -k $dir/sock -c autovacuum=off -c fsync=off" start >/dev/null
as_pg "$pgbin/pgbench" -h "$dir/sock" -U postgres -i -q -s 10 postgres >/dev/null 2>&1 ||
	die "pgbench -i failed (see $dir/log)"

# pgbench -c CLIENTS -j 2 -T T with the extra arguments; prints its TPS.
tps() {
	as_pg "$pgbin/pgbench" -h "$dir/sock" -U postgres -n -c "$CLIENTS" \
		-j 2 -T "$T" "$@" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
# Ten fixed statements: few distinct names, as normalized text gives.
for i in $(seq 10); do
	echo "SELECT abalance FROM pgbench_accounts WHERE aid = $i;"
done >"$dir/fixed.sql"
chmod 644 "$dir/fixed.sql"

# The newest BPF program id: a tracer's programs are those loaded after it
# (bpftool here cannot tell which process holds a program).
last_id() { bpftool prog show -j | python3 -c 'import json, sys; print(max([p["id"] for p in json.load(sys.stdin)] or [0]))'; }

# start_tracer CMD...: starts a tracer, waits until its probes are attached.
start_tracer() {
	first_id=$(last_id)
	"$@" >"$dir/tracer.out" 2>&1 &
	tracer_pid=$!
	for _ in $(seq 200); do
		grep -q -e 'tracing' -e 'Attaching' "$dir/tracer.out" && { sleep 1; return; }
		kill -0 "$tracer_pid" 2>/dev/null || { cat "$dir/tracer.out" >&2; die "tracer '$*' exited"; }
		sleep 0.1
	done
	die "tracer '$*' did not attach"
}
# gone PID TENTHS: waits up to TENTHS x 0.1 s for PID to end; true if it did.
gone() {
	local i
	for i in $(seq "$2"); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "$1" 2>/dev/null
}
# stop PID...: Ctrl-C; SIGTERM after 10 s, SIGKILL after 5 more (a bpftrace
# busy printing a large map was seen to miss both).
stop() {
	local p
	kill -INT "$@" 2>/dev/null || true
	for p in "$@"; do
		gone "$p" 100 || { kill -TERM "$p" 2>/dev/null; gone "$p" 50; } ||
			kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
stop_tracer() {
	stop "$tracer_pid"
	tracer_pid=
}

# Per-event BPF time of the programs the last tracer loaded: sum(run_time_ns)
# / sum(run_cnt) over those whose name matches $1 (sptrace: sp_spec_*,
# bpftrace: programs named after the probes, query__*).
bpf_ns() {
	bpftool prog show -j | python3 -c '
import json, re, sys
pat, first = re.compile(sys.argv[1]), int(sys.argv[2])
t = c = 0
for p in json.load(sys.stdin):
    if p["id"] > first and pat.search(p.get("name", "")) and p.get("run_cnt"):
        t += p["run_time_ns"]; c += p["run_cnt"]
print("%.0f" % (t / c if c else float("nan")))' "$1" "$first_id"
}

# BPF run-time statistics on while this script runs, through a held
# BPF_ENABLE_STATS descriptor: the kernel.bpf_stats_enabled sysctl is one
# switch that any other user of the machine may turn off meanwhile.
python3 -c '
import ctypes, signal, struct
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("I", 0) + bytes(124))
if libc.syscall(321, 32, attr, 128) < 0:     # bpf(BPF_ENABLE_STATS, RUN_TIME)
    raise SystemExit("BPF_ENABLE_STATS failed: errno %d" % ctypes.get_errno())
signal.pause()' &
stats_pid=$!

row() {	# row LABEL TPS NS
	printf '%-52s %9.0f %6.2f %10s\n' "$1" "$2" \
		"$(awk -v a="$2" -v b="$base" 'BEGIN { print a / b }')" "$3"
}

# measure LABEL TOOL SPEC PGBENCH-ARGS...: one traced pgbench run.
measure() {
	local label=$1 tool=$2 spec=$3 t ns
	shift 3
	if [ "$tool" = sptrace ]; then
		start_tracer "$sptrace" -b "$postgres" $spec
	else
		start_tracer bpftrace -e "$spec"
	fi
	t=$(tps "$@")
	ns=$(bpf_ns "$([ "$tool" = sptrace ] && echo '^sp_spec_' || echo '^query__')")
	stop_tracer
	row "$label" "$t" "$ns"
}

P="usdt:$postgres:postgresql"
bt_count="$P:query__start { @c[str(arg0)] = count(); }"
# The pair as sptrace does it: count, total time and the latency histogram
# per name (sptrace also keeps self time, min and max in the same row).
bt_pair="$P:query__start { @s[tid] = nsecs; @q[tid] = arg0; }
$P:query__done /@s[tid]/ { \$n = str(@q[tid]); \$d = nsecs - @s[tid]; @t[\$n] = sum(\$d); @c[\$n] = count(); @h[\$n] = hist(\$d); delete(@s[tid]); delete(@q[tid]); }"
sp_count="--query postgresql:query__start,name=arg0,kind=cache"
sp_pair="--query postgresql:query__start,postgresql:query__done,name=arg0"

# ab LABEL SPTRACE-ARGS BPFTRACE-PROG PGBENCH-ARGS...: both tools attached
# at once to the same probes, so each BPF program sees the same events in
# the same cache state; prints each tool's BPF ns per event.
ab() {
	local label=$1 sargs=$2 bprog=$3 first sp bt
	shift 3
	first=$(last_id)
	"$sptrace" -b "$postgres" $sargs >"$dir/ab.sp" 2>&1 &
	sp=$!
	bpftrace -e "$bprog" >"$dir/ab.bt" 2>&1 &
	bt=$!
	tracer_pid="$sp $bt"
	for _ in $(seq 200); do
		grep -q tracing "$dir/ab.sp" && grep -q Attaching "$dir/ab.bt" && break
		sleep 0.1
	done
	sleep 1
	tps "$@" >/dev/null
	bpftool prog show -j | python3 -c '
import json, sys
first, t = int(sys.argv[1]), {}
for p in json.load(sys.stdin):
    n = p.get("name", "")
    if p["id"] > first and p.get("run_cnt") and (n.startswith("sp_spec_") or n.startswith("query__")):
        a = t.setdefault("sptrace" if n.startswith("sp_") else "bpftrace", [0, 0])
        a[0] += p["run_time_ns"]; a[1] += p["run_cnt"]
ns = {k: v[0] / v[1] for k, v in t.items()}
print("%-52s %9.0f %9.0f %6.2f" % (sys.argv[2], ns.get("sptrace", float("nan")),
      ns.get("bpftrace", float("nan")), ns.get("sptrace", float("nan")) / ns.get("bpftrace", float("nan"))))' "$first" "$label"
	stop "$sp" "$bt"
	tracer_pid=
}

printf '%-52s %9s %9s %6s\n' "BPF ns per event, both attached at once" sptrace bpftrace ratio
for round in 1 2; do
	ab "fixed text, count (round $round)" "$sp_count" "$bt_count" -f "$dir/fixed.sql"
	ab "fixed text, pair + histogram (round $round)" "$sp_pair" "$bt_pair" -f "$dir/fixed.sql"
	ab "distinct text, count, 4096 names (round $round)" "$sp_count,max-rows=4096" "$bt_count" -S
	ab "distinct text, pair, 4096 names (round $round)" "$sp_pair,max-rows=4096" "$bt_pair" -S
done
echo

printf '%-52s %9s %6s %10s\n' "pgbench -c $CLIENTS -j 2 -T $T" tps ratio "BPF ns/ev"
base=$(tps -f "$dir/fixed.sql")
row "fixed text (10 statements), untraced" "$base" "-"
measure "fixed text, count, sptrace" sptrace "$sp_count" -f "$dir/fixed.sql"
measure "fixed text, count, bpftrace" bpftrace "$bt_count" -f "$dir/fixed.sql"
measure "fixed text, pair, sptrace" sptrace "$sp_pair" -f "$dir/fixed.sql"
measure "fixed text, pair, bpftrace" bpftrace "$bt_pair" -f "$dir/fixed.sql"
base=$(tps -S)
row "select-only (distinct text), untraced" "$base" "-"
# bpftrace keeps 4096 keys by default (BPFTRACE_MAP_KEYS_MAX) and drops the
# rest; sptrace keeps as many rows (max-rows=4096) and counts the rest in
# "<other>".
measure "distinct text, count, sptrace max-rows=4096" sptrace "$sp_count,max-rows=4096" -S
measure "distinct text, count, bpftrace (4096 keys)" bpftrace "$bt_count" -S
measure "distinct text, pair, sptrace max-rows=4096" sptrace "$sp_pair,max-rows=4096" -S
measure "distinct text, pair, bpftrace (4096 keys)" bpftrace "$bt_pair" -S
measure "distinct text, count, sptrace normalize=sql" sptrace "$sp_count,normalize=sql" -S
measure "select-only, sptrace postgresql15.spec" sptrace \
	"--query-file $src/examples/specs/postgresql15.spec" -S
base=$(tps)
row "tpcb-like, untraced" "$base" "-"
measure "tpcb-like, sptrace postgresql15.spec" sptrace \
	"--query-file $src/examples/specs/postgresql15.spec"
