# SPDX-License-Identifier: MIT
"""PostgreSQL statements that fail, on a real throw-away cluster with
pg_stat_statements as the truth: an ERROR fires no query__done, so each
failed statement leaves its interval open. 200 of them on one connection
(more than the 128 frames of a thread's stack) and then good statements:
the good ones are counted exactly as pg_stat_statements counts them, and
the failed ones are reported as `abandoned` (the spec's `serial` lines),
never left to fill the stack. The cluster is removed whatever happens
(pgcluster.py)."""
import json
import os
import signal
import subprocess

import pgcluster
from sptest import SPTRACE, check, eq, finish, require_bpf, tmpfile, wait_tracing

SPEC = os.path.join(os.environ["SPEC_DIR"], "postgresql15.spec")
# Its opt-in lines too (phases, buffer reads).
FULL_SPEC = tmpfile(".spec")
pgcluster.spec_with_opt_in(SPEC, FULL_SPEC)
FAILS, GOOD = 200, 10
# No literal: the same text in pg_stat_statements and in sptrace's row.
GOOD_SQL = "SELECT count(*) FROM sp_marker"

require_bpf()
pgcluster.require()


def stop(sp, out):
    sp.send_signal(signal.SIGINT)
    _, err = sp.communicate(timeout=120)
    eq(sp.returncode, 0, "sptrace exit 0 (%s)" % err.strip()[-300:])
    with open(out) as f:
        return json.load(f), err


c = pgcluster.Cluster()
script = tmpfile(".sql")
out = tmpfile(".json")
sp = None
try:
    c.start()
    c.psql("CREATE EXTENSION pg_stat_statements; "
           "CREATE TABLE sp_marker (x int); INSERT INTO sp_marker VALUES (1)")
    with open(script, "w") as f:
        f.write("SELECT 1/(x-x) FROM sp_marker;\n" * FAILS)
        f.write((GOOD_SQL + ";\n") * GOOD)
    os.chmod(script, 0o644)
    c.psql("SELECT pg_stat_statements_reset()")

    # No statement while traced: normalize=pg's parser was never called,
    # and freeing its memory context anyway crashed sptrace at its end.
    idle = tmpfile(".json")
    sp = subprocess.Popen([SPTRACE, "-p", str(c.postmaster_pid()), "--follow",
                           "--query-file", SPEC, "-f", "json", "-o", idle],
                          stderr=subprocess.PIPE, text=True)
    check(wait_tracing(sp), "idle: attached")
    s, _ = stop(sp, idle)
    sp = None
    eq([q["name"] for q in s["queries"] if not q["name"].startswith("transaction")],
       [], "idle: no statement, no statement row")

    # The postmaster and what it forks (-b would count other clusters).
    sp = subprocess.Popen([SPTRACE, "-p", str(c.postmaster_pid()), "--follow",
                           "--query-file", FULL_SPEC, "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
    seen = wait_tracing(sp)
    check(seen and "Ctrl-C to stop" in seen[-1], "attached (%r)" % seen)
    # One connection: psql goes on after each ERROR.
    p = c.run([os.path.join(pgcluster.PG_BIN, "psql")] + c.conn() +
              ["-X", "-q", "-At", "-f", script, "postgres"], check=False)
    eq(p.stderr.count("ERROR:  division by zero"), FAILS,
       "psql: %d statements failed" % FAILS)
    eq(p.stdout.split(), ["1"] * GOOD, "psql: %d good statements" % GOOD)
    s, err = stop(sp, out)
    sp = None

    calls = c.psql("SELECT calls FROM pg_stat_statements WHERE query = '%s'"
                   % GOOD_SQL).stdout.split()
    eq(calls, [str(GOOD)], "pg_stat_statements: %d calls" % GOOD)
    got = [q["count"] for q in s["queries"] if q["name"].startswith(GOOD_SQL)]
    eq(got, [GOOD], "sptrace counts the good statements after %d failed "
       "ones as pg_stat_statements does" % FAILS)
    failed = c.psql("SELECT count(*) FROM pg_stat_statements "
                    "WHERE query LIKE 'SELECT $1/(x-x)%'").stdout.split()
    eq(failed, ["0"], "pg_stat_statements counts no failed statement")
    check(not any("(x-x)" in q["name"] for q in s["queries"]),
          "sptrace counts no failed statement as a call")
    e = s["errors"]
    # Each failed statement: its statement (serial) and its execute
    # (abandon= at the transaction's abort).
    eq(e["abandoned"], 2 * FAILS, "each failed statement and its execute "
       "abandoned, counted")
    for line in ("name=arg0", "name=execute"):
        check(any("abandoned" in l and line in l and "%d intervals" % FAILS in l
                  for l in err.splitlines()),
              "a warning names the %s line (%r)" % (line, err.strip()[-600:]))
    eq((e["stack_overflow"], e["end_mismatch"], e["end_without_begin"]),
       (0, 0, 0), "no stack filled up, no unbalanced pair")
    r = {q["name"]: q for q in s["queries"]}
    eq(r["transaction [abort]"]["cache_hits"], FAILS,
       "a transaction aborted per failed statement")
    # ...and the connection's start-up (it reads the catalogs in one).
    eq(r["transaction [commit]"]["cache_hits"], GOOD + 1,
       "a transaction committed per good statement and the connection")
    eq(r["execute"]["count"], GOOD, "execute: the good statements only")
    eq((r["parse"]["count"], r["plan"]["count"]), (FAILS + GOOD, FAILS + GOOD),
       "parse and plan: every statement (they fail in execution)")
finally:
    if sp is not None and sp.poll() is None:
        sp.kill()
        sp.wait()
    c.stop()
    for path in (script, out):
        if os.path.exists(path):
            os.unlink(path)
check(not os.path.exists(c.dir), "the cluster is removed")
finish()
