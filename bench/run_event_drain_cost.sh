#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_event_drain_cost.sh BUILD_DIR: what draining the thread's rings first
# adds to a per-event event (a --func entry or return, an SP_ALLOC or
# SP_FREE of `sptrace record`) in a batched session. Runs bench/batch_cost
# loops under `sptrace -p` with BPF run-time statistics on and prints each
# program's run_time_ns / run_cnt over a 3-second window, batched (the
# programs look the thread up in batch_rings, and drain it if it has
# rings) and with SPTRACE_PER_EVENT=1 (the same programs, which then skip
# that): func (a thread without rings), func_pair (bench_fn() inside a
# batched pair: the entry drains the BEGIN) and alloc (record --events
# ...,alloc, a thread without rings). Needs root and bpftool. Not a test;
# about 40 seconds.
set -euo pipefail

BENCH_DIE=2
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start BUILD_DIR 1 1 "$@"
bc=$build/bench/batch_cost
bench_need "$bc"
bench_root
command -v bpftool >/dev/null || die "bpftool not found (apt-get install bpftool)"

out=$(mktemp /tmp/sptrace-evdrain.XXXXXX)
spt=$out.spt
stats='' host='' sp=''
stop() {
	for p in $sp $host; do kill "$p" 2>/dev/null || true; done
	for p in $sp $host; do wait "$p" 2>/dev/null || true; done
	sp='' host=''
	rm -f "$spt"
}
cleanup() {
	stop
	if [ -n "$stats" ]; then kill "$stats" 2>/dev/null || true; fi
	rm -f "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_bpf_stats_on
stats=$!

# run_cnt and run_time_ns of the named programs of process $1 (its BPF
# program fds: other sessions on the machine load programs of these names).
snap() {
	bpftool prog show -j | python3 -c '
import glob, json, sys
pid, names = sys.argv[1], sys.argv[2:]
ids = set()
for fd in glob.glob("/proc/%s/fdinfo/*" % pid):
    try:
        for line in open(fd):
            if line.startswith("prog_id:"):
                ids.add(int(line.split()[1]))
    except OSError:
        pass
ps = {p.get("name"): p for p in json.load(sys.stdin) if p["id"] in ids}
print(" ".join("%d %d" % (ps.get(n, {}).get("run_cnt", 0),
                          ps.get(n, {}).get("run_time_ns", 0)) for n in names))' "$@"
}

# measure MODE EVENTS PROGS... : one line per program
measure() {
	local mode=$1 events=$2 a b i
	shift 2
	"$bc" "$mode" 100000000000 1 >/dev/null &
	host=$!
	local cmd=("$sptrace" -v -p "$host")
	case $mode in
	func|func_pair) cmd+=(--func bench_fn) ;;
	alloc) cmd=("$sptrace" record -v -o "$spt" --events "query,cache,blocked,incr,mark,alloc" -p "$host") ;;
	esac
	if [ "$events" = per-event ]; then
		SPTRACE_PER_EVENT=1 "${cmd[@]}" >"$out" 2>&1 &
	else
		"${cmd[@]}" >"$out" 2>&1 &
	fi
	sp=$!
	for _ in $(seq 100); do
		grep -q tracing "$out" && break
		kill -0 "$sp" 2>/dev/null || { cat "$out" >&2; die "sptrace exited"; }
		sleep 0.1
	done
	grep -q "($events events)" "$out" || die "$mode: not attached with $events events (see $out)"
	sleep 1
	read -ra a <<<"$(snap "$sp" "$@")"
	sleep 3
	read -ra b <<<"$(snap "$sp" "$@")"
	stop
	i=0
	for p in "$@"; do
		echo "$mode $events $p ${a[$i]} ${a[$((i + 1))]} ${b[$i]} ${b[$((i + 1))]}"
		i=$((i + 2))
	done
}

printf "%-26s %12s %12s %10s\n" "program (loop)" "batched ns" "per-event ns" "added ns"
{
	for ev in batched per-event; do
		measure func "$ev" sp_func_entry sp_func_return
		measure func_pair "$ev" sp_func_entry sp_func_return
		measure alloc "$ev" sp_alloc sp_free
	done
} | awk '
{ n = $6 - $4; t = $7 - $5; k = $1 " " $3
  ns[k, $2] = n > 0 ? t / n : -1; keys[k] = 1 }
END {
  for (k in keys) {
    split(k, f, " ")
    printf "%-26s %12.1f %12.1f %10.1f\n", f[2] " (" f[1] ")", ns[k, "batched"],
           ns[k, "per-event"], ns[k, "batched"] - ns[k, "per-event"]
  }
}' | sort
