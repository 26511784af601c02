# SPDX-License-Identifier: MIT
"""The metrics history database (docs/database.md), used as a person would:
a live run on the ground-truth host stored with --db and read back with the
documented sqlite3 command; a recorded run, its trace file and its JSON
summary imported; `history` listing the runs and one query across them;
`diff --db` against the diff of the source files; a writer killed during a
large store; concurrent writers; bad input."""
import json
import os
import random
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

from sptest import (SPTRACE, check, eq, finish, host_truth, require_bpf,
                    rows, run, tmpfile)

GT = os.environ["GT_HOST"]
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "docs", "database.md")
ITER = 10
THREADS = 2
WORK = tempfile.mkdtemp(prefix="sptest-history-")


def documented_query():
    """The sqlite3 command under the marker in docs/database.md, as words."""
    with open(DOC) as f:
        text = f.read()
    m = re.search(r"<!-- e2e_history: documented query -->\s*```sh\n(.*?)\n```",
                  text, re.S)
    assert m, "docs/database.md has the documented query"
    return shlex.split(m.group(1))


def sqlite_cli(db):
    """Runs the documented command on db; returns {name: (count, cache
    hits, blocked, incr loads)}."""
    words = documented_query()
    eq(words[:2], ["sqlite3", "perf.db"], "documented query: sqlite3 perf.db ...")
    p = run(["sqlite3", db] + words[2:])
    eq(p.returncode, 0, "sqlite3 runs the documented query (%s)" % p.stderr.strip())
    out = {}
    for line in p.stdout.splitlines():
        f = line.split("|")
        out[f[0]] = tuple(int(x) for x in f[1:])
    return out


def db_path(name):
    return os.path.join(WORK, name)


def check_gt_counts(got, truth, label):
    n = truth["iterations"] * truth["threads"]
    eq(got.get("outer"), (n, 0, 0, 0), label + ": outer")
    eq(got.get("inner"), (2 * n, 3 * n, 0, 0), label + ": inner (count, cache hits)")
    eq(got.get("recurse"), (3 * n, 0, 0, 0), label + ": recurse")
    eq(got.get("lib_query"), (n, 0, 0, 0), label + ": lib_query")
    eq(got.get("shared"), (0, 0, n, 0), label + ": shared (blocked)")
    eq(got.get("codegen"), (0, 0, 0, n), label + ": codegen (incr loads)")
    eq(got.get("warm_outer"), (truth["threads"], 0, 0, 0), label + ": warm_outer")


def test_live():
    """sptrace --db on a launched host: the JSON report is written as
    before, and the database holds the same run, read by sqlite3."""
    db = db_path("live.db")
    out = tmpfile(".json")
    p = run([SPTRACE, "--db", db, "--label", "gt", "-f", "json", "-o", out,
             "--", GT, "--threads", str(THREADS), str(ITER)])
    eq(p.returncode, 0, "live --db: exit status 0 (%s)" % p.stderr.strip())
    truth = host_truth(p.stdout)
    with open(out) as f:
        report = json.load(f)
    os.unlink(out)
    check_gt_counts(sqlite_cli(db), truth, "live --db, sqlite3")
    eq(oct(os.stat(db).st_mode & 0o777), "0o600", "database created 0600")
    # Every figure of the report is in the database, as is.
    con = sqlite3.connect(db)
    con.text_factory = bytes
    q = {r[0].decode(): r[1:] for r in con.execute(
        "SELECT name, count, self_ns, total_ns, min_ns, max_ns, cache_hits,"
        " incr_loads, incr_load_ns, blocked_count, blocked_ns, p50_ns,"
        " p90_ns, p99_ns FROM queries")}
    keys = ("count", "self_ns", "total_ns", "min_ns", "max_ns", "cache_hits",
            "incr_loads", "incr_load_ns", "blocked_count", "blocked_ns",
            "p50_ns", "p90_ns", "p99_ns")
    for name, r in rows(report).items():
        eq(q.get(name), tuple(r[k] for k in keys), "live --db: row %s as reported" % name)
    bins = dict(con.execute(
        "SELECT q.name, sum(b.count) FROM hist_bins b JOIN queries q"
        " ON q.id = b.query_id GROUP BY q.id").fetchall())
    eq(bins.get(b"inner"), 2 * truth["iterations"] * truth["threads"],
       "live --db: inner's bins hold every invocation")
    run_row = con.execute("SELECT label, command, pids, host, version, source,"
                          " duration_ns, total_self_ns FROM runs").fetchall()
    eq(len(run_row), 1, "live --db: one run")
    label, command, pids, host, version, source, dur, tself = run_row[0]
    eq(label, b"gt", "live --db: label")
    eq(command, ("%s --threads %d %d" % (GT, THREADS, ITER)).encode(), "live --db: command")
    check(pids and pids.isdigit(), "live --db: pid stored (%r)" % pids)
    eq(host, os.uname().nodename.encode(), "live --db: host")
    eq(source, b"live", "live --db: source")
    p = run([SPTRACE, "--version"])
    eq(b"sptrace " + version, p.stdout.strip().encode(), "live --db: version")
    eq(dur, report["duration_ns"], "live --db: duration as reported")
    eq(tself, report["total_self_ns"], "live --db: total self time as reported")
    con.close()
    # The table still prints as before, and a second run lands as run 2.
    p = run([SPTRACE, "--db", db, "--", GT, "--threads", "1", "3"])
    eq(p.returncode, 0, "live --db, table: exit status 0")
    check("| inner" in p.stdout, "live --db: the table is printed")
    con = sqlite3.connect(db)
    eq(con.execute("SELECT count(*), max(id) FROM runs").fetchone(), (2, 2),
       "live --db: second run stored")
    con.close()
    return db, truth


def test_record_import():
    """record --db, then import of its trace file and of its JSON summary:
    three runs with the same counts; the recorded run and the imported trace
    file are the same summary, to the nanosecond."""
    db = db_path("rec.db")
    spt, js = db_path("run.spt"), db_path("run.json")
    p = run([SPTRACE, "record", "--db", db, "--label", "rec", "-o", spt,
             "--summary", js, "--", GT, "--threads", str(THREADS), str(ITER)])
    eq(p.returncode, 0, "record --db: exit status 0 (%s)" % p.stderr.strip())
    truth = host_truth(p.stdout)
    p = run([SPTRACE, "import", "--db", db, "--label", "imp", spt, js])
    eq(p.returncode, 0, "import: exit status 0 (%s)" % p.stderr.strip())
    eq(p.stderr.count("stored"), 2, "import: says where each file went")
    check("as run 2" in p.stderr and "as run 3" in p.stderr,
          "import: names the run ids (%r)" % p.stderr)
    check_gt_counts(sqlite_cli(db), truth, "import of the JSON summary")
    con = sqlite3.connect(db)
    con.text_factory = bytes
    meta = con.execute("SELECT id, label, source, command, started_at FROM runs"
                       " ORDER BY id").fetchall()
    eq([m[1] for m in meta], [b"rec", b"imp", b"imp"], "labels of the three runs")
    eq([m[2] for m in meta], [b"record", ("import:" + spt).encode(),
                              ("import:" + js).encode()], "sources")
    eq(meta[1][3], meta[0][3], "import of a trace file: its command line")
    eq(meta[1][4], meta[0][4], "import of a trace file: its start time")

    def table(run_id):
        return con.execute(
            "SELECT name, pid, count, self_ns, total_ns, min_ns, max_ns,"
            " cache_hits, incr_loads, incr_load_ns, blocked_count,"
            " blocked_ns, p50_ns, p90_ns, p99_ns FROM queries"
            " WHERE run_id = ? ORDER BY name", (run_id,)).fetchall()
    eq(table(1), table(2), "record --db == import of its trace file, every figure")
    with open(js) as f:
        summary = json.load(f)
    imported = {r[0].decode(): r for r in table(3)}
    for name, r in rows(summary).items():
        eq((imported[name][2], imported[name][3]), (r["count"], r["self_ns"]),
           "import of the JSON summary: %s count and self time" % name)
    # p50 etc. from the JSON's bins: same as the summary's own.
    eq(imported["inner"][12:], (rows(summary)["inner"]["p50_ns"],
                               rows(summary)["inner"]["p90_ns"],
                               rows(summary)["inner"]["p99_ns"]),
       "import of the JSON summary: inner percentiles")
    con.close()
    return db, spt, js, truth


def test_history(db, truth):
    p = run([SPTRACE, "history", "--db", db])
    eq(p.returncode, 0, "history: exit status 0 (%s)" % p.stderr.strip())
    lines = [l for l in p.stdout.splitlines() if l.startswith("|")]
    eq(len(lines), 4, "history: title row and three runs")
    cells = [[c.strip() for c in l.strip("|").split("|")] for l in lines[1:]]
    eq([c[0] for c in cells], ["1", "2", "3"], "history: run ids")
    eq([c[2] for c in cells], ["rec", "imp", "imp"], "history: labels")
    check(all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", c[1]) for c in cells),
          "history: ISO 8601 UTC times (%s)" % [c[1] for c in cells])
    # JSON: the same runs, exact figures.
    p = run([SPTRACE, "history", "--db", db, "-f", "json"])
    h = json.loads(p.stdout)
    eq([r["id"] for r in h["runs"]], [1, 2, 3], "history -f json: runs")
    con = sqlite3.connect(db)
    for r in h["runs"]:
        eq((r["queries"], r["total_self_ns"]), con.execute(
            "SELECT count(*), sum(self_ns) FROM queries WHERE run_id = ?",
            (r["id"],)).fetchone(), "history -f json: run %d totals" % r["id"])
    # One query across runs, with a label filter.
    n = truth["iterations"] * truth["threads"]
    p = run([SPTRACE, "history", "--db", db, "--label", "imp", "inner"])
    eq(p.returncode, 0, "history QUERY: exit status 0")
    check(p.stdout.startswith("Query inner: 2 of 2 runs"), "history QUERY: title (%r)"
          % p.stdout.splitlines()[:1])
    lines = [l for l in p.stdout.splitlines() if l.startswith("|")][1:]
    cells = [[c.strip() for c in l.strip("|").split("|")] for l in lines]
    eq([(c[0], c[4]) for c in cells], [("2", str(2 * n)), ("3", str(2 * n))],
       "history QUERY --label: runs 2 and 3, inner's count")
    check(all(len(c[6]) == 1 and "\u2581" <= c[6] <= "\u2588" for c in cells),
          "history QUERY: one sparkline bar per run (%s)" % [c[6] for c in cells])
    spark = [l for l in p.stdout.splitlines() if l.startswith("Self time: ")]
    eq(len(spark), 1, "history QUERY: the sparkline line")
    p = run([SPTRACE, "history", "--db", db, "-f", "json", "inner"])
    h = json.loads(p.stdout)
    self_ns = [r[0] for r in con.execute(
        "SELECT self_ns FROM queries WHERE name = 'inner' ORDER BY run_id")]
    eq([r["self_ns"] for r in h["runs"]], self_ns, "history QUERY -f json: self times")
    eq([r["count"] for r in h["runs"]], [2 * n] * 3, "history QUERY -f json: counts")
    # The highest self time gets the full bar; the others their eighth.
    mx = max(self_ns)
    bars = "".join("\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"[v * 7 // mx]
                   for v in self_ns)
    p = run([SPTRACE, "history", "--db", db, "inner"])
    check(("Self time: " + bars + "  ") in p.stdout,
          "history QUERY: sparkline %s for self times %s" % (bars, self_ns))
    p = run([SPTRACE, "history", "--db", db, "no_such_query"])
    eq(p.returncode, 0, "history of a query in no run: exit status 0")
    check("0 of 3 runs" in p.stdout, "history of a query in no run: says so")
    con.close()


def test_sparkline(db):
    """history QUERY's bars: each run's self time in eighths of the highest,
    the same series under the table."""
    con = sqlite3.connect(db)
    self_ns = [r[0] for r in con.execute(
        "SELECT self_ns FROM queries WHERE name = 'inner' ORDER BY run_id")]
    con.close()
    mx = max(self_ns)
    bars = ["\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"[v * 7 // mx]
            for v in self_ns]
    check(len(set(bars)) > 1, "sparkline: runs of different sizes (%s)" % self_ns)
    p = run([SPTRACE, "history", "--db", db, "inner"])
    lines = [l for l in p.stdout.splitlines() if l.startswith("|")][1:]
    eq([l.strip("|").split("|")[6].strip() for l in lines], bars,
       "sparkline column for self times %s" % self_ns)
    check(("Self time: " + "".join(bars) + "  ") in p.stdout,
          "sparkline line %s" % "".join(bars))


def test_diff_db(db, spt, js):
    """diff --db of runs 2 and 3 (the imported trace file and JSON summary)
    is diff of those two files: same rows, same figures."""
    for fmt in ("table", "json"):
        a = run([SPTRACE, "diff", "-f", fmt, "--db", db, "2", "latest"])
        b = run([SPTRACE, "diff", "-f", fmt, spt, js])
        eq((a.returncode, b.returncode), (0, 0), "diff --db -f %s: exit status" % fmt)
        if fmt == "json":
            ja, jb = json.loads(a.stdout), json.loads(b.stdout)
            eq((ja.pop("base"), ja.pop("new")), ("2", "latest"), "diff --db: run names")
            jb.pop("base")
            jb.pop("new")
            eq(ja, jb, "diff --db -f json == diff of the files")
        else:
            la, lb = a.stdout.splitlines(), b.stdout.splitlines()
            check(la[0].startswith("sptrace diff: 2 -> latest:"), "diff --db: title (%r)" % la[0])
            eq(la[0].split(":", 2)[2], lb[0].split(":", 2)[2], "diff --db: title figures")
            eq(la[1:], lb[1:], "diff --db table == diff of the files")
    a = run([SPTRACE, "diff", "-f", "json", "--db", db, "1", "latest~1"])
    d = json.loads(a.stdout)
    eq(d["total"]["delta"]["self_ns"], 0, "diff --db of the recorded run and its import: no change")


def test_mem_db():
    """sptrace mem --db and sptrace --mem --db: the memory report's types,
    heap, timeline and counters stored as the JSON report has them
    (tests/hosts/mem_typed.c's figures are known exactly)."""
    typed, libc = os.environ["MEM_TYPED_HOST"], os.environ["MEM_LIBC_HOST"]
    truth = {"Widget": (100, 4800, 60, 2880, 40, 1920, 4800),
             "Gadget": (50, 10000, 20, 4000, 30, 6000, 10000),
             "Buffer": (12, 6900, 10, 5500, 2, 1400, 5500)}
    figs = ("allocs", "alloc_bytes", "frees", "free_bytes", "live",
            "live_bytes", "peak_live_bytes")
    db = db_path("mem.db")
    for cmd in (["mem", "--no-libc"], ["--mem"]):
        out = tmpfile(".json")
        p = run([SPTRACE] + cmd + ["--db", db, "--label", "m", "-f", "json",
                                   "-o", out, "--", typed])
        eq(p.returncode, 0, "%s --db: exit 0 (%s)" % (cmd[0], p.stderr.strip()[-200:]))
        with open(out) as f:
            rep = json.load(f)
        os.unlink(out)
        con = sqlite3.connect(db)
        rid = con.execute("SELECT max(id) FROM runs").fetchone()[0]
        got = {r[0]: r[1:] for r in con.execute(
            "SELECT name, " + ", ".join(figs) + " FROM mem_types WHERE run_id = ?",
            (rid,))}
        for name, tr in truth.items():
            eq(got.get(name), tr, "%s --db: type %s stored exactly" % (cmd[0], name))
        eq(got, {t["name"]: tuple(t[k] for k in figs) for t in rep["types"]},
           "%s --db: every type as reported" % cmd[0])
        errs = dict(con.execute("SELECT name, count FROM run_errors WHERE"
                                " run_id = ? AND kind = 'mem'", (rid,)))
        eq(errs, {k: v for k, v in rep["mem_errors"].items() if v},
           "%s --db: memory counters as reported" % cmd[0])
        eq(con.execute("SELECT sampled FROM mem_reports WHERE run_id = ?",
                       (rid,)).fetchone(), (1,), "%s --db: memory report row" % cmd[0])
        eq(con.execute("SELECT source FROM runs WHERE id = ?", (rid,)).fetchone(),
           ("mem" if cmd[0] == "mem" else "live",), "%s --db: source" % cmd[0])
        con.close()
    # The timeline, point by point.
    out = tmpfile(".json")
    p = run([SPTRACE, "mem", "--interval", "5", "--no-stacks", "--db", db,
             "-f", "json", "-o", out, "--", libc, "loop", "300000"])
    eq(p.returncode, 0, "mem --interval --db: exit 0")
    with open(out) as f:
        rep = json.load(f)
    os.unlink(out)
    pk = ("t_ns", "rss_bytes", "rss_anon_bytes", "rss_file_bytes",
          "heap_live_bytes", "typed_live_bytes")
    con = sqlite3.connect(db)
    pts = con.execute("SELECT " + ", ".join(pk) + " FROM mem_timeline WHERE"
                      " run_id = (SELECT max(id) FROM runs) ORDER BY seq").fetchall()
    want = [tuple(x.get(k, 0) for k in pk) for x in rep["timeline"]]
    check(len(want) >= 2, "mem --interval --db: a timeline (%d points)" % len(want))
    eq(pts, want, "mem --interval --db: every timeline point as reported")
    heap = con.execute("SELECT heap_allocs, heap_live_bytes FROM mem_reports"
                       " WHERE run_id = (SELECT max(id) FROM runs)").fetchone()
    eq(heap, (rep["heap"]["allocs"], rep["heap"]["live_bytes"]),
       "mem --interval --db: heap figures as reported")
    con.close()


def test_hostile_names():
    """Names with quotes, newlines, control bytes and invalid UTF-8
    (tests/hosts/hostile.c) are stored as their exact bytes, found by
    history, and printed terminal-safe."""
    host = os.environ["HOSTILE_HOST"]
    names = [b"quote\"name", b"back\\slash", b"comma,name", b"new\nline",
             b"tab\tname", b"bell\a\x01\x1b[31mred", b"\xff\xfe invalid utf8",
             b"<script>alert(1)</script>", b"=cmd|' /C calc'!A0",
             b"\xe2\x80\xa8 line separator", b"", b"ok"]
    db = db_path("hostile.db")
    p = run([SPTRACE, "--db", db, "--", host])
    eq(p.returncode, 0, "hostile --db: exit 0 (%s)" % p.stderr.strip())
    con = sqlite3.connect(db)
    con.text_factory = bytes
    got = dict(con.execute("SELECT name, count FROM queries"))
    con.close()
    eq(got, {n: i + 1 for i, n in enumerate(names)},
       "hostile --db: every name stored as its exact bytes, with its count")
    for i in (5, 6, 3):
        p = subprocess.run([SPTRACE, "history", "--db", db, names[i]],
                           capture_output=True)
        eq(p.returncode, 0, "history of hostile name %r: exit 0" % names[i])
        row = [l for l in p.stdout.split(b"\n") if l.startswith(b"|")][1:]
        eq([r.split(b"|")[5].strip() for r in row], [str(i + 1).encode()],
           "history of hostile name %r: its count" % names[i])
        check(not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", p.stdout),
              "history of hostile name %r: no raw control bytes" % names[i])
        try:
            p.stdout.decode("utf-8")
            ok = True
        except UnicodeDecodeError:
            ok = False
        check(ok, "history of hostile name %r: valid UTF-8 out" % names[i])
    p = subprocess.run([SPTRACE, "history", "--db", db, "-f", "json", names[6]],
                       capture_output=True)
    h = json.loads(p.stdout)
    eq([(r["present"], r["count"]) for r in h["runs"]], [(True, 7)],
       "history -f json of an invalid-UTF-8 name")
    p = subprocess.run([SPTRACE, "diff", "--db", db, "1", "latest"],
                       capture_output=True)
    eq(p.returncode, 0, "diff --db of hostile names: exit 0")
    check(not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", p.stdout),
          "diff --db of hostile names: no raw control bytes")


def make_big_json(src, path, nqueries):
    """A JSON summary with nqueries rows, copies of src's rows (hist and
    all) under new names."""
    with open(src) as f:
        s = json.load(f)
    qs = s["queries"]
    out = []
    for i in range(nqueries):
        q = dict(qs[i % len(qs)])
        q["name"] = "gen_%06d_%s" % (i, q["name"])
        out.append(q)
    s["queries"] = out
    s["total_self_ns"] = sum(q["self_ns"] for q in out)
    with open(path, "w") as f:
        json.dump(s, f)


def db_state(db):
    con = sqlite3.connect(db)
    ok = con.execute("PRAGMA integrity_check").fetchall()
    runs = con.execute("SELECT id FROM runs ORDER BY id").fetchall()
    per_run = con.execute("SELECT run_id, count(*) FROM queries GROUP BY run_id").fetchall()
    bins = con.execute("SELECT count(*) FROM hist_bins").fetchone()[0]
    orphans = con.execute("SELECT count(*) FROM queries WHERE run_id NOT IN"
                          " (SELECT id FROM runs)").fetchone()[0]
    con.close()
    return ok, [r[0] for r in runs], dict(per_run), bins, orphans


def test_killed_writer(big, nq, bins_per_run):
    """SIGKILL during a large store: the database passes integrity_check
    and holds each run whole or not at all. Kills land while the store's
    pages go to the log (watched), and at random times."""
    db = db_path("killed.db")
    mid = 0
    # One whole run first: the schema is there when the first kill lands.
    p = run([SPTRACE, "import", "--db", db, big])
    eq(p.returncode, 0, "killed writer: first run stored")
    for attempt in range(6):
        p = subprocess.Popen([SPTRACE, "import", "--db", db, big],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wal = db + "-wal"
        base = os.path.getsize(wal) if os.path.exists(wal) else 0
        deadline = time.time() + 60
        in_store = False
        if attempt % 2 == 0:
            # Wait until the transaction is writing pages, then kill.
            while p.poll() is None and time.time() < deadline:
                if os.path.exists(wal) and os.path.getsize(wal) > base + (1 << 20):
                    in_store = True
                    break
                time.sleep(0.002)
        else:
            time.sleep(random.uniform(0.05, 1.5))
        p.send_signal(signal.SIGKILL)
        p.wait()
        killed = p.returncode == -signal.SIGKILL
        ok, runs, per_run, bins, orphans = db_state(db) if os.path.exists(db) \
            else ([("ok",)], [], {}, 0, 0)
        eq(ok, [("ok",)], "killed writer %d: integrity_check" % attempt)
        eq(orphans, 0, "killed writer %d: no query rows without a run" % attempt)
        check(all(per_run.get(r) == nq for r in runs) and set(per_run) == set(runs),
              "killed writer %d: every run whole (%d runs, rows %s)"
              % (attempt, len(runs), sorted(set(per_run.values()))))
        eq(bins, bins_per_run * len(runs), "killed writer %d: bins of whole runs only" % attempt)
        if killed and in_store:
            mid += 1
    check(mid >= 1, "killed writer: at least one kill landed during the store (%d)" % mid)
    # The database is still usable: another run lands.
    p = run([SPTRACE, "import", "--db", db, big])
    eq(p.returncode, 0, "after the kills: a store succeeds (%s)" % p.stderr.strip())


def test_concurrent(big, nq):
    """Two imports at once, several times: every run lands whole, none
    fails with 'database is locked'."""
    db = db_path("conc.db")
    for rnd in range(3):
        ps = [subprocess.Popen([SPTRACE, "import", "--db", db, "--label",
                                "c%d" % i, big], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
              for i in range(2)]
        res = [(p.wait(timeout=300), p.stderr.read()) for p in ps]
        eq([r[0] for r in res], [0, 0], "concurrent round %d: both exit 0 (%s)"
           % (rnd, [r[1].strip() for r in res if r[0]]))
        check(not any("locked" in r[1] for r in res),
              "concurrent round %d: no 'database is locked'" % rnd)
    ok, runs, per_run, _, orphans = db_state(db)
    eq(ok, [("ok",)], "concurrent: integrity_check")
    eq(len(runs), 6, "concurrent: all six runs stored")
    eq(sorted(set(per_run.values())), [nq], "concurrent: every run whole")


def one_error_line(p, what, must):
    eq(p.returncode, 1, what + ": exit status 1")
    lines = p.stderr.strip().splitlines()
    eq(len(lines), 1, what + ": one line (%r)" % p.stderr)
    check(lines and lines[0].startswith("sptrace: ") and must in lines[0],
          what + ": says %r (%r)" % (must, lines[:1]))


def test_bad_input(db, js):
    missing_dir = db_path("no/such/dir/x.db")
    one_error_line(run([SPTRACE, "import", "--db", missing_dir, js]),
                   "missing db directory", missing_dir)
    one_error_line(run([SPTRACE, "--db", missing_dir, "--", GT, "1"]),
                   "live --db in a missing directory (before tracing)", "directory " + os.path.dirname(missing_dir) + " does not exist")
    notdb = db_path("notes.txt")
    with open(notdb, "w") as f:
        f.write("these are my notes, not a database, do not touch\n" * 20)
    one_error_line(run([SPTRACE, "history", "--db", notdb]), "history of a non-database",
                   "not a database")
    one_error_line(run([SPTRACE, "import", "--db", notdb, js]), "import into a non-database",
                   "not a database")
    with open(notdb) as f:
        check(f.read().startswith("these are my notes"), "non-database left untouched")
    one_error_line(run([SPTRACE, "diff", "--db", db, "1", "999"]), "unknown run id",
                   "no run '999'")
    one_error_line(run([SPTRACE, "diff", "--db", db, "1", "latest~99"]), "unknown latest~N",
                   "no run 'latest~99'")
    one_error_line(run([SPTRACE, "diff", "--db", db, "1", "last"]), "malformed run",
                   "invalid run 'last'")
    one_error_line(run([SPTRACE, "history", "--db", db_path("absent.db")]),
                   "history of a missing database", "no such database")
    check(not os.path.exists(db_path("absent.db")), "history does not create a database")
    one_error_line(run([SPTRACE, "--label", "x", "--", GT, "1"]), "--label without --db",
                   "--db")
    for cmd in (["record", "-o", db_path("nolabel.spt")], ["mem"]):
        one_error_line(run([SPTRACE] + cmd + ["--label", "x", "--", GT, "1"]),
                       "%s --label without --db" % cmd[0], "--db")
    # A newer schema: refused, not corrupted.
    future = db_path("future.db")
    shutil.copy(db, future)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db + suffix):
            shutil.copy(db + suffix, future + suffix)
    con = sqlite3.connect(future)
    con.execute("PRAGMA user_version = 2")
    con.commit()
    before = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    con.close()
    one_error_line(run([SPTRACE, "import", "--db", future, js]), "database of a newer sptrace",
                   "schema version 2 is newer")
    con = sqlite3.connect(future)
    eq(con.execute("SELECT count(*) FROM runs").fetchone()[0], before,
       "newer database: nothing stored")
    con.close()
    # Storing fails after the run: the report is still written, nothing
    # of the run is stored, exit 1 with one line. The database loses a
    # table while the trace runs (as a person "cleaning up" might).
    ro = db_path("broken.db")
    p = run([SPTRACE, "import", "--db", ro, js])
    eq(p.returncode, 0, "broken db: first run stored")
    out = db_path("kept.json")
    host = subprocess.Popen([GT, "--wait", "--threads", "1", "2"],
                            stdout=subprocess.PIPE, text=True)
    check(host.stdout.readline().startswith("ready"), "broken db: host ready")
    p = subprocess.Popen([SPTRACE, "--db", ro, "-f", "json", "-o", out, "-p",
                          str(host.pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    check("tracing" in p.stderr.readline(), "broken db: attached")
    con = sqlite3.connect(ro)
    con.execute("DROP TABLE hist_bins")
    con.commit()
    con.close()
    host.send_signal(signal.SIGUSR1)
    host.communicate()
    so, se = p.communicate(timeout=120)
    eq(p.returncode, 1, "store failure: exit status 1 (%r)" % se)
    with open(out) as f:
        kept = json.load(f)
    eq(rows(kept).get("inner", {}).get("count"), 4, "store failure: the JSON report is written")
    lines = se.strip().splitlines()
    eq(len(lines), 1, "store failure: one line (%r)" % se)
    check(lines and "cannot store the run" in lines[0] and ro in lines[0],
          "store failure: says so, naming the file (%r)" % lines[:1])
    con = sqlite3.connect(ro)
    eq(con.execute("SELECT count(*) FROM runs").fetchone()[0], 1,
       "store failure: no part of the run stored")
    eq(con.execute("SELECT count(*) FROM queries WHERE run_id > 1").fetchone()[0], 0,
       "store failure: no query rows of the failed run")
    con.close()


def main():
    require_bpf()
    db, truth = test_live()
    test_sparkline(db)
    rdb, spt, js, rtruth = test_record_import()
    test_history(rdb, rtruth)
    test_diff_db(rdb, spt, js)
    test_bad_input(rdb, js)
    test_mem_db()
    test_hostile_names()
    big = db_path("big.json")
    nq = 60000
    make_big_json(js, big, nq)
    with open(big) as f:
        bins_per_run = sum(len(q["hist"]) for q in json.load(f)["queries"])
    test_killed_writer(big, nq, bins_per_run)
    test_concurrent(big, nq)
    shutil.rmtree(WORK, ignore_errors=True)
    finish()


main()
