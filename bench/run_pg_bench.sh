#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_pg_bench.sh BUILD_DIR: what tracing PostgreSQL 15's own (1-byte nop)
# probes costs, sptrace --query vs bpftrace doing the same work, on one
# throw-away cluster this script builds (private socket, removed whatever
# happens). Needs root, PostgreSQL 15 (Debian's postgresql-15:
# /usr/lib/postgresql/15/bin), bpftrace and bpftool. Not a test; about
# 6 minutes with the defaults. Prints ratios measured in this one run.
#
# The same work for both tools:
#   count: statements counted by their text (query__start):
#          sptrace kind=cache name=arg0, bpftrace @c[str(arg0)] = count()
#   pair:  statements timed, query__start..query__done, by their text, with
#          count, total time and a latency histogram (sptrace also keeps
#          self time, min and max in the same row)
# on two workloads: ten fixed statements (-f: few names, as normalized text
# gives) and select-only (-S: a distinct text per statement; both tools
# keep 4096 names: bpftrace's default map size, sptrace max-rows=4096).
# Every statement text is shorter than bpftrace's 64-byte str(), so both
# read the same bytes.
#
# 1. BPF time per event (BPF run-time statistics on; bpftool prog show:
#    run_time_ns / run_cnt summed over each tool's programs), both tools
#    attached to the same probes at once, so both see the same events. The
#    program that runs first takes the cache misses of the event (the
#    registers, the string): ROUNDS rounds each attach both orders, and the
#    row prints the median of the 2 x ROUNDS figures and of their ratios,
#    with the ratios' range.
# 2. select-only TPS, untraced / sptrace / bpftrace, each tool alone:
#    RUNS rounds, each running every configuration once in turn (A B C A B
#    C ...), so the machine's drift hits all alike. Per configuration: the
#    median TPS and its spread (max - min over the median); the ratio of
#    each run to the untraced run of its round, median and range. The
#    verdict compares the median ratios and says in how many rounds
#    sptrace had the higher TPS: when not in all or none, the difference
#    is within the noise, and is said so.
#
# 3. (PARTS=ab, with BASE=OTHER_BUILD_DIR) the fixed-text count of 1., A/B:
#    each round and attach order runs BASE's sptrace and BUILD_DIR's in
#    turn, so both builds meet the same machine; medians per build, overall
#    and per attach order.
#
# 4. (PARTS=spec) what the shipped spec's lines cost: select-only TPS
#    untraced, with the default spec (its uncommented lines), and with the
#    default plus each opt-in group (its commented-out `#postgresql:` lines
#    under one comment block, but the extended protocol's statement line),
#    RUNS interleaved rounds as in 2.; per configuration the median ratio
#    to the untraced run of its round, the TPS loss, and what it adds per
#    transaction (1/TPS_traced - 1/TPS_untraced, x CLIENTS: CPU time per
#    transaction). The default spec's loss against the 15% target.
#
# Environment: T (seconds per pgbench run, default 5), CLIENTS (default 4),
# ROUNDS (default 2), RUNS (default 5), PARTS ("bpf tps", default both;
# "ab" and "spec" are extra), BASE (for ab).
set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
src=$(cd "$(dirname "$0")/.." && pwd)
base_sptrace=
if [[ " ${PARTS:-} " == *" ab "* ]]; then
	[ -n "${BASE:-}" ] || die "PARTS=ab needs BASE=OTHER_BUILD_DIR"
	base_sptrace=$(cd "$BASE" && pwd)/userspace/sptrace
	[ -x "$base_sptrace" ] || die "$base_sptrace: not found"
fi
bench_root
command -v bpftrace >/dev/null || die "bpftrace not found (apt-get install bpftrace)"
command -v bpftool >/dev/null || die "bpftool not found (apt-get install bpftool)"

T=${T:-5}
CLIENTS=${CLIENTS:-4}
ROUNDS=${ROUNDS:-2}
RUNS=${RUNS:-5}
PARTS=${PARTS:-bpf tps}

# ---- a throw-away cluster, removed whatever happens ----------------------
dir=$(mktemp -d /tmp/sptrace-pgbench.XXXXXX)
tracer_pid=
stats_pid=
cleanup() {
	# Every tracer started, also from subshells ($dir/pids).
	# shellcheck disable=SC2046
	[ -f "$dir/pids" ] && kill -KILL $(cat "$dir/pids") 2>/dev/null || true
	[ -n "$stats_pid" ] && kill "$stats_pid" 2>/dev/null || true
	bench_pg_stop "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bench_pg_start "$dir" -c fsync=off
postgres=$pgbin/postgres
as_pg() { runuser -u postgres -- "$@"; }
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

bench_bpf_stats_on
stats_pid=$!

P="usdt:$postgres:postgresql"
bt_count="$P:query__start { @c[str(arg0)] = count(); }"
# The pair as sptrace does it: count, total time and the latency histogram
# per name (sptrace also keeps self time, min and max in the same row).
bt_pair="$P:query__start { @s[tid] = nsecs; @q[tid] = arg0; }
$P:query__done /@s[tid]/ { \$n = str(@q[tid]); \$d = nsecs - @s[tid]; @t[\$n] = sum(\$d); @c[\$n] = count(); @h[\$n] = hist(\$d); delete(@s[tid]); delete(@q[tid]); }"
sp_count="--query postgresql:query__start,name=arg0,kind=cache,max-rows=4096"
sp_pair="--query postgresql:query__start,postgresql:query__done,name=arg0,max-rows=4096"

# start TOOL ARGS OUT: starts sptrace (-b postgres ARGS) or bpftrace (-e
# ARGS), output to OUT; waits until its probes are attached; sets $started.
start() {
	local tool=$1 args=$2 out=$3 word
	: >"$out"
	if [ "$tool" = sptrace ]; then
		# shellcheck disable=SC2086
		"$sptrace" -b "$postgres" $args >"$out" 2>&1 &
		word=tracing
	else
		bpftrace -e "$args" >"$out" 2>&1 &
		word=Attaching
	fi
	started=$!
	echo "$started" >>"$dir/pids"
	tracer_pid="$tracer_pid $started"
	for _ in $(seq 300); do
		grep -q "$word" "$out" && { sleep 1; return; }
		kill -0 "$started" 2>/dev/null || { cat "$out" >&2; die "$tool $args: exited"; }
		sleep 0.1
	done
	die "$tool $args: did not attach"
}

# ns_per_event FIRST-ID: "sptrace-ns bpftrace-ns" of the programs loaded
# after FIRST-ID (sptrace: sp_spec_*, bpftrace: query__*).
ns_per_event() {
	bpftool prog show -j | python3 -c '
import json, sys
first, t = int(sys.argv[1]), {"sp": [0, 0], "bt": [0, 0]}
for p in json.load(sys.stdin):
    n = p.get("name", "")
    if p["id"] > first and p.get("run_cnt") and (n.startswith("sp_spec_") or n.startswith("query__")):
        a = t["sp" if n.startswith("sp_") else "bt"]
        a[0] += p["run_time_ns"]; a[1] += p["run_cnt"]
print(" ".join("%.1f" % (a[0] / a[1]) if a[1] else "nan" for a in (t["sp"], t["bt"])))' "$1"
}

# ab ORDER SPTRACE-ARGS BPFTRACE-PROG PGBENCH-ARGS...: both tools attached
# at once (ORDER: sb = sptrace first, bs = bpftrace first); prints
# "sptrace-ns bpftrace-ns".
ab() {
	local order=$1 sargs=$2 bprog=$3 first pids
	shift 3
	first=$(last_id)
	tracer_pid=
	if [ "$order" = sb ]; then
		start sptrace "$sargs" "$dir/ab.sp"
		start bpftrace "$bprog" "$dir/ab.bt"
	else
		start bpftrace "$bprog" "$dir/ab.bt"
		start sptrace "$sargs" "$dir/ab.sp"
	fi
	tps "$@" >/dev/null
	ns_per_event "$first"
	pids=$tracer_pid
	tracer_pid=
	# shellcheck disable=SC2086
	stop $pids
	: >"$dir/pids"
}

# alone SPTRACE-ARGS PGBENCH-ARGS...: sptrace alone; prints its ns/event.
alone() {
	local sargs=$1 first pids
	shift
	first=$(last_id)
	tracer_pid=
	start sptrace "$sargs" "$dir/ab.sp"
	tps "$@" >/dev/null
	ns_per_event "$first" | cut -d' ' -f1
	pids=$tracer_pid
	tracer_pid=
	# shellcheck disable=SC2086
	stop $pids
	: >"$dir/pids"
}

# bpf_row LABEL SPTRACE-ARGS BPFTRACE-PROG PGBENCH-ARGS...
bpf_row() {
	local label=$1 sargs=$2 bprog=$3 o
	shift 3
	for _ in $(seq "$ROUNDS"); do
		for o in sb bs; do
			ab "$o" "$sargs" "$bprog" "$@"
		done
	done | python3 -c '
import statistics as st, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
sp = [r[0] for r in rows]; bt = [r[1] for r in rows]
q = [a / b for a, b in rows]
print("%-44s %8.0f %8.0f %6.2f  %4.2f..%4.2f  (%s)" % (sys.argv[1], st.median(sp),
      st.median(bt), st.median(q), min(q), max(q),
      " ".join("%.0f/%.0f" % r for r in rows)))' "$label"
}

if [[ " $PARTS " == *" bpf "* ]]; then
	echo "BPF ns per event, both tools attached at once; $ROUNDS rounds x both attach orders"
	printf '%-44s %8s %8s %6s  %10s  %s\n' "" sptrace bpftrace ratio range "(each run: sptrace/bpftrace)"
	bpf_row "fixed text, count" "$sp_count" "$bt_count" -f "$dir/fixed.sql"
	bpf_row "fixed text, pair + histogram" "$sp_pair" "$bt_pair" -f "$dir/fixed.sql"
	bpf_row "select-only (distinct text), count" "$sp_count" "$bt_count" -S
	bpf_row "select-only (distinct text), pair + histogram" "$sp_pair" "$bt_pair" -S
	echo "sptrace alone, BPF ns per event (one run each):"
	printf '  %-42s %8s\n' "select-only, count, normalize=sql" \
		"$(alone "--query postgresql:query__start,name=arg0,kind=cache,normalize=sql" -S)"
	printf '  %-42s %8s\n' "select-only, count, normalize=pg" \
		"$(alone "--query postgresql:query__start,name=arg0,kind=cache,normalize=pg" -S)"
	printf '  %-42s %8s\n' "tpcb-like, count, normalize=pg" \
		"$(alone "--query postgresql:query__start,name=arg0,kind=cache,normalize=pg")"
	printf '  %-42s %8s\n' "select-only, shipped postgresql15.spec" \
		"$(alone "--query-file $src/examples/specs/postgresql15.spec" -S)"
	printf '  %-42s %8s\n' "tpcb-like, shipped postgresql15.spec" \
		"$(alone "--query-file $src/examples/specs/postgresql15.spec")"
	echo
fi

if [[ " $PARTS " == *" ab "* ]]; then
	echo "A/B, fixed text, count: BPF ns per event, both tools attached at once; $ROUNDS rounds x both orders x both builds"
	this_sptrace=$sptrace
	for _ in $(seq "$ROUNDS"); do
		for o in sb bs; do
			for b in base this; do
				if [ $b = base ]; then sptrace=$base_sptrace; else sptrace=$this_sptrace; fi
				echo "$b $o $(ab "$o" "$sp_count" "$bt_count" -f "$dir/fixed.sql")"
			done
		done
	done | python3 -c '
import statistics as st, sys
rows = [l.split() for l in sys.stdin if l.strip()]
print("%-16s %8s %8s %6s  %10s  %s" % ("", "sptrace", "bpftrace", "ratio", "range",
      "ratio, sptrace first / bpftrace first"))
for b, label in (("base", sys.argv[1]), ("this", sys.argv[2])):
    r = [(x[1], float(x[2]), float(x[3])) for x in rows if x[0] == b]
    q = [s / t for _, s, t in r]
    qo = lambda o: st.median([s / t for oo, s, t in r if oo == o])
    print("%-16s %8.0f %8.0f %6.2f  %4.2f..%4.2f  %.2f / %.2f" % (label[-16:],
          st.median([s for _, s, _ in r]), st.median([t for _, _, t in r]),
          st.median(q), min(q), max(q), qo("sb"), qo("bs")))' "$BASE" "$1"
	sptrace=$this_sptrace
	echo
fi

# tps_run CONFIG: one select-only pgbench run under CONFIG; prints its TPS.
tps_run() {
	local pids t
	tracer_pid=
	case $1 in
	untraced) ;;
	sptrace-count) start sptrace "$sp_count" "$dir/t.out" ;;
	bpftrace-count) start bpftrace "$bt_count" "$dir/t.out" ;;
	sptrace-pair) start sptrace "$sp_pair" "$dir/t.out" ;;
	bpftrace-pair) start bpftrace "$bt_pair" "$dir/t.out" ;;
	esac
	t=$(tps -S)
	pids=$tracer_pid
	tracer_pid=
	# shellcheck disable=SC2086
	[ -z "$pids" ] || stop $pids
	: >"$dir/pids"
	echo "$t"
}

if [[ " $PARTS " == *" tps "* ]]; then
	configs="untraced sptrace-count bpftrace-count sptrace-pair bpftrace-pair"
	for _ in $(seq "$RUNS"); do
		for c in $configs; do
			echo "$c $(tps_run "$c")"
		done
	done >"$dir/tps"
	echo "select-only pgbench -S -c $CLIENTS -j 2 -T $T, $RUNS interleaved rounds of: $configs"
	python3 - "$dir/tps" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    c, t = line.split()
    runs.setdefault(c, []).append(float(t))
base = runs["untraced"]
def spread(v):
    return (max(v) - min(v)) / st.median(v)
# Each traced run against the untraced run of its own round (seconds
# apart): the machine's drift cancels better than between medians.
print("%-16s %9s %9s %7s  %-13s %s" % ("", "median", "spread", "ratio",
      "ratio range", "each round (TPS)"))
for c, v in runs.items():
    q = [a / b for a, b in zip(v, base)]
    print("%-16s %9.0f %8.1f%% %7.3f  %5.3f..%5.3f  %s" % (c, st.median(v),
          100 * spread(v), st.median(q), min(q), max(q),
          " ".join("%.0f" % x for x in v)))
for w in ("count", "pair"):
    s, b = runs["sptrace-" + w], runs["bpftrace-" + w]
    ls = 1 - st.median([a / u for a, u in zip(s, base)])
    lb = 1 - st.median([a / u for a, u in zip(b, base)])
    better = sum(a >= c for a, c in zip(s, b))
    verdict = "met" if ls <= lb else "missed"
    if 0 < better < len(s):
        verdict += (" (within noise: sptrace had the higher TPS in %d of %d rounds)"
                    % (better, len(s)))
    else:
        verdict += (" (sptrace had the higher TPS in %d of %d rounds)" % (better, len(s)))
    print("%s: TPS loss (median of per-round ratios) sptrace %.1f%%, bpftrace %.1f%%: "
          "sptrace <= bpftrace %s" % (w, 100 * ls, 100 * lb, verdict))
PY
fi

if [[ " $PARTS " == *" spec "* ]]; then
	spec=$src/examples/specs/postgresql15.spec
	# The default spec, and one file per opt-in group: the default plus
	# the group's lines uncommented (groups: blank-line separated blocks).
	grep -v '^#' "$spec" | grep . >"$dir/spec.default"
	python3 - "$spec" "$dir" >/dev/null <<'PY'
import sys
spec, d = sys.argv[1], sys.argv[2]
default = open(d + "/spec.default").read()
groups, cur = [], []
for line in open(spec):
    if line.startswith("#postgresql:") and "name=arg0" not in line:
        cur.append(line[1:])
    elif not line.strip() and cur:
        groups.append(cur)
        cur = []
if cur:
    groups.append(cur)
for g in groups:
    name = g[0].strip().split(",name=")[1].split(",")[0].split(":")[0]
    with open("%s/spec.%s" % (d, name), "w") as f:
        f.write(default + "".join(g))
    print(name)
PY
	optins=$(cd "$dir" && ls spec.* | sed 's/^spec\.//' | grep -v '^default$')
	for _ in $(seq "$RUNS"); do
		for c in untraced default $optins; do
			tracer_pid=
			[ "$c" = untraced ] || start sptrace "--query-file $dir/spec.$c" "$dir/t.out"
			t=$(tps -S)
			pids=$tracer_pid
			tracer_pid=
			# shellcheck disable=SC2086
			[ -z "$pids" ] || stop $pids
			: >"$dir/pids"
			echo "$c $t"
		done
	done >"$dir/spec.tps"
	echo "shipped spec, select-only pgbench -S -c $CLIENTS -j 2 -T $T, $RUNS interleaved rounds; opt-in rows: the default spec plus that line group"
	python3 - "$dir/spec.tps" "$CLIENTS" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    c, t = line.split()
    runs.setdefault(c, []).append(float(t))
clients = int(sys.argv[2])
base = runs.pop("untraced")
print("%-12s %9s %7s %7s  %-13s %11s" % ("", "median", "ratio", "loss",
      "ratio range", "us/txn"))
print("%-12s %9.0f" % ("untraced", st.median(base)))
for c, v in runs.items():
    q = [a / b for a, b in zip(v, base)]
    us = [clients * 1e6 * (1 / a - 1 / b) for a, b in zip(v, base)]
    print("%-12s %9.0f %7.3f %6.1f%%  %5.3f..%5.3f %11.1f" % (c, st.median(v),
          st.median(q), 100 * (1 - st.median(q)), min(q), max(q), st.median(us)))
loss = 1 - st.median([a / b for a, b in zip(runs["default"], base)])
print("default spec: TPS loss %.1f%% (target <= 15%%): %s" % (100 * loss,
      "met" if loss <= 0.15 else "missed"))
PY
fi
