# SPDX-License-Identifier: MIT
"""normalize=pg against pg_stat_statements (track=all) as the truth, on a
throw-away PostgreSQL 15 cluster: every statement row sptrace prints has
the text and the calls of a pg_stat_statements row, and no row is
missing, for literals of every lexical form (comments with quotes,
E-strings, dollar quotes, numerics, bit strings, arrays, IN lists of 2, 3
and 8, negative numbers, case and ';' variants, multi-statement strings),
pgbench's simple protocol (query__start) and its extended protocol
(query__parse__start). Strings longer than the 255 bytes BPF copies are
rows of their own, shown as <truncated>, with their calls. Named prepared
statements (-M prepared) count their PREPAREs, not their calls.
Prints "rows equal N / M" per protocol."""
import json
import os
import signal
import subprocess

import pgcluster
from sptest import SPTRACE, check, cleanup, eq, finish, require_bpf, tmpfile

SIMPLE = ("postgresql:query__start,postgresql:query__done,name=arg0,"
          "normalize=pg,max-rows=2000")
EXTENDED = ("postgresql:query__parse__start,postgresql:query__parse__done,"
            "name=arg0,normalize=pg,max-rows=2000")
LONG = "x" * 300
# One query string per statement (psql -f sends each alone); run twice,
# so rows merge across runs too. Of statements pg_stat_statements counts
# as one (the same tree but for constants, aliases, comments, case or
# spacing) it shows the first text it saw, sptrace the smallest: the first
# of each such group here is its smallest.
LEXICAL = r"""
SELECT   4   AS v;
SELECT 'a1' AS "Q1";
SELECT substr('abcdef',2,3), substr('abcdef',2);
SELECT 2,'abc';
SELECT ARRAY[1,2,3];
SELECT 1 AS l WHERE 1 IN (1,2);
SELECT 1 AS l WHERE 1 IN (1,2,3);
SELECT 1 AS l WHERE 1 IN (1,2,3,4,5,6,7,8);
SELECT 4 AS l WHERE 4 IN (9,8);
SELECT 7 /* don't */ AS c;
SELECT 8 -- it's
 AS c2;
SELECT E'a\'b 7' AS e;
SELECT $$dollar 123$$ AS d;
SELECT $q$it's 5$q$ AS d;
SELECT .5e-3 AS n;
SELECT 1.5 AS n;
SELECT B'101' AS b;
SELECT X'1F' AS b;
SELECT -5 AS neg;
SELECT 5000000000 AS big;
SELECT 3 AS v;
select 3 as v;
SELECT 3 AS v ;
SELECT 'a1' AS "Q2";
SELECT count(*) FROM pg_class WHERE relname = 'pg_proc' AND relpages > 10;
SELECT count(*) FROM pg_class WHERE relname = 'x' AND relpages > 1234567;
SELECT '""' AS dq, 5 AS five;
SET work_mem = '4MB';
SET work_mem = '8MB';
SHOW work_mem;
SELECT '%s' AS long1 FROM pg_class LIMIT 1;
SELECT '%s' AS long2 FROM pg_proc LIMIT 1;
""" % (LONG, LONG)
MULTI = ["SELECT 1 AS m1; SELECT 'x' AS m2; SELECT 2 AS m1",
         "SELECT 10 AS m3;SELECT 11 AS m3;",
         "BEGIN; SELECT 12 AS m4; COMMIT"]
CLIENTS, TXNS = 2, 200

require_bpf()
pgcluster.require()


def pgss(c):
    p = c.psql("SELECT coalesce(json_agg(json_build_array(query, calls)), "
               "'[]') FROM pg_stat_statements WHERE query NOT LIKE "
               "'%pg_stat_statements%'")
    return json.loads(p.stdout)


def traced(c, line, workload):
    out = tmpfile(".json")
    c.psql("SELECT pg_stat_statements_reset()")
    # -p --follow: our cluster's backends only (another cluster of the
    # same binary may run beside the test).
    sp = subprocess.Popen([SPTRACE, "-p", str(c.postmaster_pid()),
                           "--follow", "--query",
                           line, "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
    try:
        first = sp.stderr.readline()
        check("tracing" in first, "attached (%r)" % first.strip())
        workload()
        sp.send_signal(signal.SIGINT)
        err = sp.stderr.read()
        sp.wait(timeout=120)
        eq(sp.returncode, 0, "sptrace exit 0 (%s)" % err.strip()[-300:])
        with open(out) as f:
            s = json.load(f)
        truth = pgss(c)
        return s, truth, err
    finally:
        cleanup(sp, out)


def compare(what, s, truth, nlong):
    mine = {q["name"]: q["count"] for q in s["queries"]}
    trunc = {k: v for k, v in mine.items() if k.startswith("<truncated")}
    mine = {k: v for k, v in mine.items() if k not in trunc}
    theirs = {}
    for text, calls in truth:
        check(text not in theirs, "%s: pg_stat_statements text %r once "
              "(else rows apart only by constant types)" % (what, text))
        theirs[text] = calls
    # pg_stat_statements' rows of strings longer than the copy: the two
    # long ones and pgbench's partition query.
    long_rows = {t for t in theirs if "AS long" in t or
                 t.startswith("select o.n, p.partstrat")}
    equal = [k for k in mine if theirs.get(k) == mine[k]]
    if os.environ.get("PG_DEBUG"):
        print(json.dumps({"mine": mine, "trunc": trunc, "theirs": theirs}, indent=1))
    print("%s: rows equal %d / %d (pg_stat_statements %d rows, of them "
          "%d longer than the copy: sptrace %d <truncated> rows)" % (
              what, len(equal), len(mine), len(theirs), len(long_rows),
              len(trunc)))
    eq({k: v for k, v in mine.items() if theirs.get(k) != v}, {},
       "%s: every sptrace row equals a pg_stat_statements row" % what)
    eq({k: v for k, v in theirs.items() if k not in mine and k not in long_rows},
       {}, "%s: no pg_stat_statements row missing" % what)
    eq(len(trunc), nlong, "%s: each long statement its own <truncated> row" % what)
    eq(sorted(trunc.values()), sorted(theirs[t] for t in long_rows),
       "%s: truncated rows' calls" % what)


c = pgcluster.Cluster()
sql = tmpfile(".sql")
try:
    c.start("-c shared_preload_libraries=pg_stat_statements "
            "-c pg_stat_statements.track=all "
            "-c pg_stat_statements.track_utility=on")
    c.pgbench(["-i", "-q", "-s", "1"])
    c.psql("CREATE EXTENSION pg_stat_statements")
    with open(sql, "w") as f:
        f.write(LEXICAL)
    os.chmod(sql, 0o644)

    def pgbench(mode):
        """pgbench's TPC-B transactions in protocol `mode`."""
        p = c.pgbench(["-n", "-M", mode, "-c", str(CLIENTS), "-j", "1",
                       "-t", str(TXNS)])
        check("actually processed: %d/" % (CLIENTS * TXNS) in p.stdout,
              "pgbench -M %s ran" % mode)

    def simple():
        for _ in range(2):
            c.psql_file(sql)
        for m in MULTI:
            c.psql(m)
        pgbench("simple")

    s, truth, _ = traced(c, SIMPLE, simple)
    compare("simple", s, truth, 3)

    s, truth, _ = traced(c, EXTENDED, lambda: pgbench("extended"))
    compare("extended", s, truth, 1)

    # Named prepared statements (-M prepared): parsed once per connection,
    # executed many times, and no probe names the statement an execution
    # runs: their rows count the PREPAREs, as providers.md says.
    s, truth, _ = traced(c, EXTENDED, lambda: pgbench("prepared"))
    mine = {q["name"]: q["count"] for q in s["queries"]}
    stmt = "SELECT abalance FROM pgbench_accounts WHERE aid = $1"
    eq((mine.get(stmt), dict(truth).get(stmt)), (CLIENTS, CLIENTS * TXNS),
       "prepared: the row counts the %d PREPAREs, pg_stat_statements the "
       "%d calls" % (CLIENTS, CLIENTS * TXNS))
finally:
    c.stop()
    if os.path.exists(sql):
        os.unlink(sql)
finish()
