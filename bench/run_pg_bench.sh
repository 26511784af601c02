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
# 1. pgbench TPS (select-only -S, -c 4 -j 2, T seconds each) untraced, under
#    sptrace and under bpftrace, for two workloads:
#      count: statements counted by raw query text (query__start)
#      pair:  statements timed, query__start..query__done, by raw text
#    and under sptrace with the whole shipped spec (normalized SQL, phases,
#    transactions, locks, buffer reads): TPS as a ratio of untraced.
# 2. The BPF programs' own time per event (kernel.bpf_stats_enabled=1,
#    bpftool prog show: run_time_ns / run_cnt) for the same two workloads,
#    sptrace vs bpftrace (sum of a tool's programs over the sum of their runs;
#    a tool's programs are those loaded after it started, by name).
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
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	[ -n "$tracer_pid" ] && kill -KILL "$tracer_pid" 2>/dev/null || true
	if [ -f "$dir/data/postmaster.pid" ]; then
		runuser -u postgres -- "$pgbin/pg_ctl" -D "$dir/data" -m immediate \
			-w -t 30 stop >/dev/null 2>&1 ||
			kill -KILL "$(head -1 "$dir/data/postmaster.pid")" 2>/dev/null || true
	fi
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" || true
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
as_pg "$pgbin/pgbench" -h "$dir/sock" -U postgres -i -q -s 10 postgres >/dev/null 2>&1

tps() {
	as_pg "$pgbin/pgbench" -h "$dir/sock" -U postgres -n -S -c "$CLIENTS" \
		-j 2 -T "$T" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

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
stop_tracer() {
	kill -INT "$tracer_pid"
	wait "$tracer_pid" || true
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
print("%.0f %d" % (t / c if c else float("nan"), c))' "$1" "$first_id"
}

sp_count="postgresql:query__start,name=arg0,kind=cache"
sp_pair="postgresql:query__start,postgresql:query__done,name=arg0"
bt_count="usdt:$postgres:postgresql:query__start { @c[str(arg0)] = count(); }"
bt_pair="usdt:$postgres:postgresql:query__start { @s[tid] = nsecs; @q[tid] = arg0; }
usdt:$postgres:postgresql:query__done /@s[tid]/ { @t[str(@q[tid])] = sum(nsecs - @s[tid]); @c[str(@q[tid])] = count(); delete(@s[tid]); delete(@q[tid]); }"

sysctl -q -w kernel.bpf_stats_enabled=1
base=$(tps)
printf '%-44s %10s %8s %14s\n' "run (pgbench -S -c $CLIENTS -j 2 -T $T)" "tps" "ratio" "BPF ns/event"
printf '%-44s %10.0f %8.2f\n' "untraced" "$base" 1
for work in count pair; do
	eval "sq=\$sp_$work bt=\$bt_$work"
	start_tracer "$sptrace" -b "$postgres" --max-queries 262144 --query "$sq"
	t=$(tps)
	read -r ns n < <(bpf_ns '^sp_spec_')
	stop_tracer
	printf '%-44s %10.0f %8.2f %14s\n' "sptrace, $work by raw text" "$t" \
		"$(awk -v a="$t" -v b="$base" 'BEGIN { print a / b }')" "$ns ($n runs)"
	start_tracer bpftrace -e "$bt"
	t=$(tps)
	read -r ns n < <(bpf_ns '^query__')
	stop_tracer
	printf '%-44s %10.0f %8.2f %14s\n' "bpftrace, $work by raw text" "$t" \
		"$(awk -v a="$t" -v b="$base" 'BEGIN { print a / b }')" "$ns ($n runs)"
done
start_tracer "$sptrace" -b "$postgres" --query-file "$src/examples/specs/postgresql15.spec"
t=$(tps)
read -r ns n < <(bpf_ns '^sp_spec_')
stop_tracer
printf '%-44s %10.0f %8.2f %14s\n' "sptrace, postgresql15.spec (normalized)" "$t" \
	"$(awk -v a="$t" -v b="$base" 'BEGIN { print a / b }')" "$ns ($n runs)"
