# SPDX-License-Identifier: MIT
"""Connection churn on a real throw-away PostgreSQL 15 cluster: pgbench -C
opens one connection (one backend process) per transaction. A one-shot run
moves the rows of exited backends out of the BPF maps while it traces, so
thousands of short-lived processes never fill them: every statement is
counted, and commits and buffer reads (hits and misses) equal
pg_stat_database's deltas. The cluster is removed whatever happens
(pgcluster.py)."""
import json
import os
import re
import signal
import subprocess
import time

import pgcluster
from sptest import SPTRACE, check, eq, finish, require_bpf, tmpfile, wait_tracing

SPEC = os.path.join(os.environ["SPEC_DIR"], "postgresql15.spec")
# Its opt-in lines too (phases, buffer reads).
FULL_SPEC = tmpfile(".spec")
pgcluster.spec_with_opt_in(SPEC, FULL_SPEC)
# 5,000 connections (the figure) take about a minute traced on a
# loaded 2-CPU machine; SPTEST_PG_CONNECTIONS lowers it for a quick run.
CONNECTIONS = int(os.environ.get("SPTEST_PG_CONNECTIONS", "5000"))
CLIENTS = 2
# As pg_stat_statements shows it (normalize=pg): no semicolon.
SELECT = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
STATS = ("SELECT sum(xact_commit), sum(blks_read), sum(blks_hit) "
         "FROM pg_stat_database")

require_bpf()
pgcluster.require()


def db_stats(c):
    """pg_stat_database summed over databases (the shared catalogs'
    row too), once every earlier backend has exited: a backend flushes
    its counters as it exits."""
    quiet(c)
    return [int(v) for v in c.psql(STATS).stdout.strip().split("|")]


def quiet(c):
    """Until no client backend runs, seen in /proc: a query to ask would
    be one more connection, counted by sptrace."""
    pm = c.postmaster_pid()
    end = time.time() + 60
    while time.time() < end:
        n = 0
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    cmd = f.read()
            except (OSError, ValueError, IndexError):
                continue
            n += ppid == pm and b"[local]" in cmd
        if not n:
            return
        time.sleep(0.05)
    raise AssertionError("backends did not exit")


c = pgcluster.Cluster()
out = tmpfile(".json")
sp = None
try:
    c.start()
    c.pgbench(["-i", "-q", "-s", "1"])
    # What the psql reading the statistics adds to them itself: read
    # twice with nothing in between, once the pages its start-up reads
    # are in shared buffers (a first read after initdb misses some).
    db_stats(c)
    a = db_stats(c)
    own = [y - x for x, y in zip(a, db_stats(c))]
    before = db_stats(c)

    # Only pgbench runs while sptrace traces: the statistics are read
    # before and after.
    eq(c.others(), [], "no other PostgreSQL 15 runs (-b would count it)")
    sp = subprocess.Popen([SPTRACE, "-v", "-b", pgcluster.POSTGRES,
                           "--query-file", FULL_SPEC, "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
    seen = wait_tracing(sp)
    check(seen and "after start" in seen[-1], "attached (%r)" % seen[-3:])
    t0 = time.time()
    p = c.pgbench(["-n", "-C", "-c", str(CLIENTS), "-j", str(CLIENTS),
                   "-t", str(CONNECTIONS // CLIENTS)])
    took = time.time() - t0
    check("actually processed: %d/%d" % (CONNECTIONS, CONNECTIONS) in p.stdout,
          "pgbench: %d connections in %.0f s" % (CONNECTIONS, took))
    quiet(c)
    sp.send_signal(signal.SIGINT)
    _, err = sp.communicate(timeout=120)
    eq(sp.returncode, 0, "sptrace exit 0 (%s)" % err.strip()[-300:])
    sp = None
    after = db_stats(c)
    with open(out) as f:
        s = json.load(f)

    r = {q["name"]: q for q in s["queries"]}
    e = s["errors"]
    eq((e["queries_map_full"], e["hist_map_full"], e["names_map_full"],
        e["threads_map_full"]), (0, 0, 0, 0), "no map filled up")
    eq(r.get(SELECT, {}).get("count"), CONNECTIONS,
       "every SELECT counted, one per connection")
    # The deltas hold pgbench's figures and the `before` psql's own.
    d = [y - x - o for x, y, o in zip(before, after, own)]
    eq(r["transaction [commit]"]["cache_hits"], d[0],
       "commits = pg_stat_database's xact_commit delta")
    eq(r["buffer_read"]["count"] - r["buffer_read"]["cache_hits"], d[1],
       "buffer misses = blks_read delta")
    eq(r["buffer_read"]["cache_hits"], d[2], "buffer hits = blks_hit delta")
    check("exited processes moved out of the BPF maps" in err,
          "-v says the rows of exited backends were moved out (%r)"
          % [l for l in err.splitlines() if "moved" in l])

    # --per-pid under churn: each backend lives a few milliseconds, less
    # than the 200 ms between two title reads; its title is taken as it
    # exits, PostgreSQL's own (never "" nor the postmaster's).
    os.unlink(out)
    sp = subprocess.Popen([SPTRACE, "-b", pgcluster.POSTGRES, "--query-file",
                           FULL_SPEC, "--per-pid", "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
    wait_tracing(sp)
    c.pgbench(["-n", "-C", "-c", "2", "-j", "2", "-t", "100"])
    quiet(c)
    sp.send_signal(signal.SIGINT)
    _, err = sp.communicate(timeout=120)
    eq(sp.returncode, 0, "--per-pid: sptrace exit 0 (%s)" % err.strip()[-300:])
    sp = None
    with open(out) as f:
        s = json.load(f)
    sel = [q for q in s["queries"] if q["name"] == SELECT]
    eq((len(sel), sum(q["count"] for q in sel)), (200, 200),
       "--per-pid: one SELECT in each of the 200 backends")
    bad = sorted({q["title"] for q in sel
                  if not re.match(r"postgres: postgres postgres \[local\] \S",
                                  q["title"])})
    eq(bad, [], "--per-pid: every short-lived backend titled 'postgres: "
       "postgres postgres [local] STATE'")
finally:
    if sp is not None and sp.poll() is None:
        sp.kill()
        sp.wait()
    c.stop()
    if os.path.exists(out):
        os.unlink(out)
check(not os.path.exists(c.dir), "the cluster is removed")
finish()
