# SPDX-License-Identifier: MIT
"""The shipped PostgreSQL 15 spec on a real, throw-away cluster under
pgbench (-c 4 -j 2 -t 500): each normalized pgbench statement exactly 2,000
times, transactions 2,000 plus pgbench's own setup, buffer-read hits and
misses against an independent counter (a second spec line on the same
probe), `-p POSTMASTER --follow` equal to `-b`, and bad specs refused in
one line. The cluster is removed whatever happens (pgcluster.py)."""
import json
import os
import re
import signal
import subprocess
import time

import pgcluster
from sptest import (SPTRACE, check, cleanup, eq, finish, require_bpf, rows,
                    run, tmpfile)

SPEC = os.path.join(os.environ["SPEC_DIR"], "postgresql15.spec")
PGBENCH = [      # as pg_stat_statements shows them (normalize=pg)
    "BEGIN",
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
    "END",
]
CLIENTS, TXNS = 4, 500
# Independent counters on the probe the spec's buffer_read line reads.
EXTRA = """
postgresql:buffer__read__done,name=read_done,kind=cache
postgresql:buffer__read__done,name=found_true,kind=cache,if=arg7!=0
"""
SPEC_ROWS = {"parse", "rewrite", "plan", "execute", "transaction",
             "transaction [commit]", "transaction [abort]", "buffer_read",
             "read_done", "found_true"}

require_bpf()
pgcluster.require()


def traced_pgbench(c, target, spec_file):
    out = tmpfile(".json")
    sp = subprocess.Popen([SPTRACE] + target + ["--query-file", spec_file,
                                                "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
    try:
        line = sp.stderr.readline()     # "tracing N probe sites" once attached
        check("tracing" in line, "%s: attached (%r)" % (target[0], line.strip()))
        p = c.pgbench(["-n", "-c", str(CLIENTS), "-j", "2", "-t", str(TXNS)])
        check("actually processed: %d/%d" % (CLIENTS * TXNS, CLIENTS * TXNS) in p.stdout,
              "%s: pgbench ran every transaction" % target[0])
        sp.send_signal(signal.SIGINT)
        err = sp.stderr.read()
        sp.wait(timeout=120)
        eq(sp.returncode, 0, "%s: sptrace exit 0 (%s)" % (target[0], err.strip()[-300:]))
        with open(out) as f:
            return json.load(f), err
    finally:
        cleanup(sp, out)


def check_run(what, s):
    r = rows(s)
    n = CLIENTS * TXNS
    for stmt in PGBENCH:
        eq(r.get(stmt, {}).get("count"), n, "%s: %r" % (what, stmt))
    # pgbench's own statements (not the 7 of its script): its scale
    # query and its partition-method query, once each.
    setup = sorted(k for k in r if k not in PGBENCH and k not in SPEC_ROWS
                   and not k.startswith("lockmode:"))
    eq(len(setup), 2, "%s: pgbench's setup statements: %r" % (what, setup))
    check(all(r[k]["count"] == 1 for k in setup), "%s: each once" % what)
    # Transactions: one per pgbench transaction, one per setup statement
    # (autocommit), one per connection (backend start-up reads the
    # catalogs in a transaction: 4 clients + pgbench's own).
    eq(r["transaction"]["count"], n + len(setup) + CLIENTS + 1,
       "%s: transactions = 2000 + setup %d + connections %d" % (what, len(setup), CLIENTS + 1))
    eq(r["transaction [commit]"]["cache_hits"], r["transaction"]["count"],
       "%s: every transaction committed" % what)
    check("transaction [abort]" not in r, "%s: none aborted" % what)
    b = r["buffer_read"]
    eq(b["count"], r["read_done"]["cache_hits"],
       "%s: buffer reads = independent count of buffer__read__done" % what)
    eq(b["cache_hits"], r["found_true"]["cache_hits"],
       "%s: hits = independent count of found=true" % what)
    check(0 < b["cache_hits"] <= b["count"],
          "%s: hits %d, misses %d of %d reads" % (what, b["cache_hits"],
                                                   b["count"] - b["cache_hits"], b["count"]))
    e = s["errors"]
    eq((e["end_without_begin"], e["end_mismatch"], e["stack_overflow"],
        e["names_map_full"], e["name_read_failed"]), (0, 0, 0, 0, 0),
       "%s: no unbalanced pair, no full map, every name read" % what)
    return r


c = pgcluster.Cluster()
spec_file = tmpfile(".spec")
try:
    c.start()
    eq(c.others(), [], "no other PostgreSQL 15 runs (-b would count it)")
    c.pgbench(["-i", "-q", "-s", "1"])
    pgcluster.spec_with_opt_in(SPEC, spec_file, EXTRA)

    s_b, _ = traced_pgbench(c, ["-b", pgcluster.POSTGRES], spec_file)
    rb = check_run("-b", s_b)

    s_p, err = traced_pgbench(c, ["-p", str(c.postmaster_pid()), "--follow"], spec_file)
    rp = check_run("-p --follow", s_p)
    eq({k: rp[k]["count"] for k in PGBENCH + ["transaction"]},
       {k: rb[k]["count"] for k in PGBENCH + ["transaction"]},
       "-p POSTMASTER --follow counts what -b counts")

    # Backends told apart: each pgbench client's backend has its rows under
    # its own pid, titled as PostgreSQL titles it (user, database, host,
    # then its state when last seen alive), though it has exited by the
    # report.
    s_t, _ = traced_pgbench(c, ["-p", str(c.postmaster_pid()), "--follow",
                                "--per-pid"], spec_file)
    backends = {q["pid"]: q["title"] for q in s_t["queries"]
                if q["name"] in PGBENCH}
    eq(len(backends), CLIENTS, "--per-pid: pgbench's statements in %d "
       "backends (%r)" % (CLIENTS, sorted(backends)))
    bad = {pid: t for pid, t in backends.items()
           if not re.match(r"postgres: postgres postgres \[local\] \S", t)}
    eq(bad, {}, "--per-pid: every backend titled 'postgres: postgres "
       "postgres [local] STATE' (%r)" % sorted(set(backends.values())))

    # Bad specs on the real binary: one line each, before or after tracing.
    for bad, needle in [
            ("postgresql:query-strat,postgresql:query-done,name=arg0",
             "no probe postgresql:query__strat in %s or its libraries (their providers: postgresql" % pgcluster.POSTGRES),
            ("postgresql:query__start,postgresql:query__done,name=arg3",
             "probe postgresql:query__start has 1 argument: name=arg3 names none"),
            ("postgresql:buffer__read__start,postgresql:buffer__read__done,name=b,hit=arg8!=0",
             "has 8 arguments: hit=arg8 names none"),
            ("postgresql:transaction__start,postgresql:transaction__commit|,name=t", "an empty END"),
            ("postgresql:buffer__read__done,name=x,kind=cache,if=arg7=!0", "is not an integer"),
            ("postgresql:query__start,postgresql:query__done,name=q,normalize=sql",
             "normalize= needs name=argN")]:
        p = run([SPTRACE, "-b", pgcluster.POSTGRES, "-d", "0.2", "--query", bad], timeout=60)
        lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
        check(p.returncode == 1 and len(lines) == 1 and needle in lines[0],
              "bad spec %r: one line (%r)" % (bad, p.stderr.strip()[-300:]))
finally:
    c.stop()
    if os.path.exists(spec_file):
        os.unlink(spec_file)
check(not os.path.exists(c.dir), "the cluster is removed")
finish()
