# SPDX-License-Identifier: MIT
"""sptrace serve --top N against a host whose queries' self times are known
and far apart (fleet_host --spin-factor: name i spins U x 2^i, each query
timed by the host inside and outside its probes): a scrape names exactly
the N rows of most self time, each with its exact counts and a self time
between the host's two readings; every other row is summed into the
process's `<other>` row, exactly; sptrace_folded_rows says how many. With
N at least the number of rows nothing is folded. The `<other>` row keeps
its process's pid, so sptrace_process_info joins it to the host's
executable."""
import os

from fleet_metrics import (info_of, info_pids, parse, query_pids, scrape,
                           start_serve, stop_serve, value)
from sptest import check, eq, finish, host_truth, require_bpf, run

HOST = os.environ["FLEET_HOST"]
HOST_REAL = os.path.realpath(HOST)
NAMES = 8
ROUNDS = 20
SPIN_US = 100


def queries_of(s, pid):
    """{query: self ns} of process pid, from sptrace_query_self_seconds."""
    return {l["query"]: round(v * 1e9) for n, l, v in s
            if n == "sptrace_query_self_seconds_total" and
            l.get("pid") == str(pid)}


def run_host():
    p = run([HOST, "--names", str(NAMES), "--rounds", str(ROUNDS),
             "--pause-ms", "0", "--spin-us", str(SPIN_US),
             "--spin-factor", "2"])
    eq(p.returncode, 0, "fleet_host ran")
    return host_truth(p.stdout)


def check_top(n):
    serve, url = start_serve(["--top", str(n), "-b", HOST])
    try:
        if not url:
            return
        t = run_host()
        pid = t["pid"]
        names = ["q%05d" % i for i in range(NAMES)]
        inner = dict(zip(names, t["inner_ns_per_name"]))
        outer = dict(zip(names, t["outer_ns_per_name"]))
        # The documented order: most self time first. The host's own
        # readings say which N rows those are when the N-th one's
        # [inner, outer] lies above the next one's (2x apart by
        # construction; preemptions worth half the smaller row's time
        # could blur it, and then this run proves nothing: a failure).
        rank = sorted(names, key=lambda q: inner[q], reverse=True)
        check(n >= NAMES or inner[rank[n - 1]] > outer[rank[n]],
              "--top %d: the host's self times are apart at the cut "
              "(%r, %r)" % (n, inner, outer))
        kept = rank[:n]
        folded = rank[n:]
        s = parse(scrape(url)[2])
        rows = queries_of(s, pid)
        want = set(kept) | ({"<other>"} if folded else set())
        eq(set(rows), want, "--top %d: the rows a scrape names" % n)
        for q in kept:
            eq(value(s, "sptrace_query_invocations_total", query=q, pid=pid),
               float(ROUNDS), "--top %d: %s invocations" % (n, q))
            eq(value(s, "sptrace_query_cache_hits_total", query=q, pid=pid),
               float(ROUNDS), "--top %d: %s cache hits" % (n, q))
            check(q in rows and inner[q] <= rows[q] <= outer[q],
                  "--top %d: %s self time %s ns in [%d, %d]" %
                  (n, q, rows.get(q), inner[q], outer[q]))
        if folded:
            eq(value(s, "sptrace_query_invocations_total", query="<other>",
                     pid=pid), float(ROUNDS * len(folded)),
               "--top %d: <other> invocations" % n)
            eq(value(s, "sptrace_query_cache_hits_total", query="<other>",
                     pid=pid), float(ROUNDS * len(folded)),
               "--top %d: <other> cache hits" % n)
            lo = sum(inner[q] for q in folded)
            hi = sum(outer[q] for q in folded)
            check(lo <= rows.get("<other>", -1) <= hi,
                  "--top %d: <other> self time %s ns in [%d, %d]" %
                  (n, rows.get("<other>"), lo, hi))
            b = [v for nm, l, v in s if nm == "sptrace_query_latency_seconds_count"
                 and l.get("query") == "<other>" and l.get("pid") == str(pid)]
            eq(b, [float(ROUNDS * len(folded))],
               "--top %d: <other> latency histogram count" % n)
        eq(value(s, "sptrace_folded_rows"), float(len(folded)),
           "--top %d: sptrace_folded_rows" % n)
        # The host runs 0.5 s: seen alive, labelled.
        eq((info_of(s, pid) or {}).get("binary"), HOST_REAL,
           "--top %d: sptrace_process_info of the host (and so of its "
           "<other> row) names its executable" % n)
        eq(sorted(info_pids(s)), sorted(query_pids(s)),
           "--top %d: one sptrace_process_info per pid with series" % n)
    finally:
        eq(stop_serve(serve), 0, "--top %d: serve exits 0" % n)


require_bpf()
check_top(3)
check_top(NAMES)
finish()
