# SPDX-License-Identifier: MIT
"""Recording: `sptrace record` writes a trace file, `sptrace summarize`
replays it through the same aggregation as the live mode. One run of the
example, recorded and aggregated live at once, gives identical tables.
Ground truth holds for recorded runs too; event filters attach only what
was asked; bad files give clear errors."""
import json
import os
import re
import signal
import subprocess

from sptest import (SPTRACE, between, check, close, cross_bounds, eq, finish,
                    host_truth, require_bpf, retry_timing, rows, run, tmpfile)

GT = os.environ["GT_HOST"]
QE = os.environ["QE_HOST"]
BATCH = os.environ["BATCH_HOST"]
ENABLED = os.environ["ENABLED_HOST"]
# meson runs this file twice: batched (the default) and per-event.
MODE = ("per-event" if os.environ.get("SPTRACE_PER_EVENT", "0") not in ("", "0")
        else "batched")


def summarize_json(path, *extra):
    p = run([SPTRACE, "summarize", "-f", "json", path] + list(extra))
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        check(False, "summarize -f json %s: JSON (rc %d, %r)" % (
            path, p.returncode, p.stderr.strip()[-200:]))
        return p, None


def record(args, *extra):
    out = tmpfile(".spt")
    p = run([SPTRACE, "record", "-o", out] + list(extra) + args)
    return p, out


def test_record_equals_live():
    live = tmpfile(".json")
    p, spt = record(["--", QE, "-q", "-j", "3", "-n", "120"], "--summary", live)
    eq(p.returncode, 0, "record+live: exit 0 (%s)" % p.stderr.strip()[-200:])
    with open(live) as f:
        a = json.load(f)
    p, b = summarize_json(spt)
    eq(p.returncode, 0, "summarize: exit 0")
    if b is None:
        return
    eq(a.get("events"), MODE, "record --summary: the events came %s" % MODE)
    ra, rb = rows(a), rows(b)
    eq(sorted(ra), sorted(rb), "same queries live and recorded")
    check(len(ra) >= 8, "the example has its queries (%d)" % len(ra))
    same = True
    for name in ra:
        for k in ("count", "cache_hits", "incr_loads", "blocked_count",
                  "self_ns", "total_ns", "min_ns", "max_ns", "incr_load_ns",
                  "blocked_ns", "p50_ns", "p90_ns", "p99_ns", "hist"):
            if ra[name][k] != rb.get(name, {}).get(k):
                same = check(False, "%s.%s: live %r, recorded %r" % (
                    name, k, ra[name][k], rb.get(name, {}).get(k)))
    check(same, "every figure of every query identical live and recorded")
    eq(b["errors"]["lost"], 0, "no event lost")
    st = os.stat(spt)
    check(st.st_mode & 0o777 == 0o600, "trace file created 0600")
    events = sum(q["count"] * 2 + q["cache_hits"] + q["blocked_count"] * 2 +
                 q["incr_loads"] * 2 for q in a["queries"])
    check(st.st_size / events <= 16,
          "%.1f bytes per event on disk (<= 16)" % (st.st_size / events))
    for f in (live, spt):
        os.unlink(f)


def test_ground_truth():
    # One worker: the recorder needs a CPU of its own on a 2-CPU machine,
    # or preemptions inside probes blur the host's own clock readings.
    p, spt = record(["--", GT, "--threads", "1", "20"])
    eq(p.returncode, 0, "gt record: exit 0")
    truth = host_truth(p.stdout)
    p, s = summarize_json(spt)
    os.unlink(spt)
    eq(p.returncode, 0, "gt summarize: exit 0")
    if s is None:
        return
    r = rows(s)
    eq(r["outer"]["count"], 20, "gt: outer count")
    eq(r["inner"]["count"], 40, "gt: inner count")
    eq(r["inner"]["cache_hits"], 60, "gt: cache hits")
    eq(r["recurse"]["count"], 60, "gt: recursion")
    eq(r["lib_query"]["count"], 20, "gt: shared library")
    eq(r["shared"]["blocked_count"], 20, "gt: blocked")
    eq(r["codegen"]["incr_loads"], 20, "gt: incr loads")
    for name in ("outer", "inner", "recurse"):
        close(r[name]["self_ns"], truth["self_ns"][name], "gt: %s self" % name)
        close(r[name]["total_ns"], truth["total_ns"][name], "gt: %s total" % name)


def record_counts(stderr):
    """(events, ring-buffer records, batches) from record -v."""
    m = re.search(r"(\d+) events in (\d+) ring-buffer records \((\d+) of them batches\)",
                  stderr)
    check(m is not None, "record -v: says how the events came")
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


def test_batched_path():
    """Batched recording sends the events of one drain of a thread's rings
    as one ring-buffer record; the recorder writes each as the per-event
    path would. Queries that begin in a library and end in the executable
    (two rings merged by time) must replay nested as the host measured
    them, and equal the live figures of the same run exactly; probes of a
    signal handler that interrupt appends all count."""
    live = tmpfile(".json")
    p, spt = record(["--", BATCH, "cross", "300"], "-v", "--summary", live)
    eq(p.returncode, 0, "record cross: exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    events, records, batches = record_counts(p.stderr)
    if MODE == "batched":
        check(batches > 0 and records * 20 <= events,
              "batched: %d events in %d ring-buffer records (%d batches), "
              "at least 20 events a record" % (events, records, batches))
    else:
        check(batches == 0 and records == events,
              "per-event: one ring-buffer record per event (%d events, %d "
              "records, %d batches)" % (events, records, batches))
    with open(live) as f:
        a = json.load(f)
    os.unlink(live)
    eq(a.get("events"), MODE, "record cross: mode")
    p, b = summarize_json(spt)
    os.unlink(spt)
    if b is None:
        return
    r = rows(b)
    eq(r["span"]["count"], 300, "recorded cross: span (library BEGIN, executable END)")
    eq(r["back"]["count"], 300, "recorded cross: back (executable BEGIN, library END)")
    eq(r["step"]["count"], 600, "recorded cross: step nested in both")
    # Between the host's readings inside and around the probes (per-event,
    # each probe is a trap, whose cost depends on the machine)
    for q in ("span", "back"):
        total, self_ = cross_bounds(t, q, per_event=MODE != "batched")
        between(r[q]["total_ns"], total, "recorded cross: %s total" % q)
        between(r[q]["self_ns"], self_, "recorded cross: step nested in %s, self" % q,
                rel=0.01)
    ra = rows(a)
    for q in ("span", "back", "step"):
        for k in ("count", "self_ns", "total_ns", "min_ns", "max_ns", "hist"):
            eq(r[q][k], ra[q][k], "recorded cross: %s.%s as live" % (q, k))
    eq(b["errors"]["lost"], 0, "recorded cross: nothing lost")
    eq(a["errors"]["batch_lost"], 0, "recorded cross: no batch lost")

    # per-event, a pair traps twice: ~25 us on a VM with slow traps
    p, spt = record(["--", BATCH, "signal",
                     "1000000" if MODE == "batched" else "200000"], "-v")
    eq(p.returncode, 0, "record signal: exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    events, records, batches = record_counts(p.stderr)
    if MODE == "batched":
        check(records * 20 <= events, "record signal: %d events in %d records"
              % (events, records))
    p, b = summarize_json(spt)
    os.unlink(spt)
    if b is None:
        return
    check(t["sig"] > 1000, "record signal: the handler ran often (%d)" % t["sig"])
    eq(rows(b)["work"]["count"], t["work"], "record signal: work pairs exact")
    eq(rows(b).get("sig", {}).get("count"), t["sig"],
       "record signal: every handler pair recorded")
    eq(b["errors"]["lost"], 0, "record signal: nothing lost")


def test_filters():
    p, spt = record(["--", GT, "--threads", "1", "5"], "--events", "query")
    eq(p.returncode, 0, "--events query: exit 0")
    p, s = summarize_json(spt)
    os.unlink(spt)
    if check(s is not None, "JSON summary written (test_record.py:94)"):
        r = rows(s)
        eq(r["inner"]["count"], 10, "--events query: queries recorded")
        eq(r["inner"]["cache_hits"], 0, "--events query: no cache hits recorded")
        check("shared" not in r, "--events query: no blocked intervals recorded")
    p, spt = record(["--", GT, "--threads", "1", "5"], "--only", "inner,lib_query")
    p, s = summarize_json(spt)
    os.unlink(spt)
    if check(s is not None, "JSON summary written (test_record.py:102)"):
        eq(sorted(rows(s)), ["inner", "lib_query"], "--only keeps those names")
        eq(rows(s)["inner"]["cache_hits"], 15, "--only: cache hits of inner kept")
    p = run([SPTRACE, "record", "-o", tmpfile(), "--events", "query,bogus",
             "--", GT, "1"])
    check(p.returncode != 0 and "bogus" in p.stderr, "--events: unknown class refused")


def test_pid_record():
    host = subprocess.Popen([GT, "--wait", "--threads", "2", "5"],
                            stdout=subprocess.PIPE, text=True)
    host.stdout.readline()
    spt = tmpfile(".spt")
    tracer = subprocess.Popen([SPTRACE, "record", "-o", spt, "-p",
                               str(host.pid)], stderr=subprocess.PIPE, text=True)
    check("tracing" in tracer.stderr.readline(), "record -p: attached")
    host.send_signal(signal.SIGUSR1)
    host.communicate()
    eq(tracer.wait(timeout=30), 0, "record -p: stops when the target exits")
    p, s = summarize_json(spt)
    os.unlink(spt)
    if check(s is not None, "JSON summary written (test_record.py:123)"):
        eq(rows(s)["outer"]["count"], 10, "record -p: outer count")


def test_duration_from_armed():
    """The run's duration starts when counting is armed, not when sptrace
    started (the BPF load before it is no traced time; issue 25: 15.2 s for
    a 4 s run). The host's own clock says when the tracer attached (its
    semaphore rose: after the load, before arming) and detached (it fell:
    after disarming); the duration, live and recorded, lies within, and the
    trace's start (export --chrome's base_monotonic_ns) is not before it."""
    for rec in (False, True):
        host = subprocess.Popen([ENABLED, "--clock"], stdout=subprocess.PIPE,
                                text=True)
        try:
            at = {}
            eq(host.stdout.readline().split()[:3],
               ["sema=0", "flush=0", "enabled=0"], "host: untraced at first")
            spt = tmpfile(".spt")
            args = ([SPTRACE, "record", "-o", spt] if rec else
                    [SPTRACE, "-f", "json"]) + ["-p", str(host.pid), "-d", "1"]
            t = subprocess.Popen(args, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            while len(at) < 2:
                f = host.stdout.readline().split()
                if not f:
                    break
                key = "on" if f[2] == "enabled=1" else "off"
                at.setdefault(key, int(f[3].split("=")[1]))
            out, err = t.communicate(timeout=60)
        finally:
            host.kill()
            host.wait()
        what = "record" if rec else "live"
        if not check(t.returncode == 0 and len(at) == 2,
                     "%s -p -d 1: traced, the host saw it attach and detach "
                     "(%s, %r)" % (what, at, err.strip()[-200:])):
            continue
        if rec:
            s = summarize_json(spt)[1]
            p = run([SPTRACE, "export", "--chrome", spt, "-o", "-"])
            base = int(json.loads(p.stdout)["otherData"]["base_monotonic_ns"])
            os.unlink(spt)
            check(base >= at["on"] - 20000000,
                  "record: the trace starts when counting was armed, not "
                  "before the host saw the tracer attach (%.3f s before it)"
                  % ((at["on"] - base) / 1e9))
        else:
            s = json.loads(out)
        window = at["off"] - at["on"]
        dur = s["duration_ns"] if s else -1
        check(0.9e9 <= dur <= window + 20000000,
              "%s: duration %.3f s within the host's attached window %.3f s "
              "(and about -d 1)" % (what, dur / 1e9, window / 1e9))


def test_bad_files():
    def bad(content, *words):
        path = tmpfile(".spt")
        with open(path, "wb") as f:
            f.write(content)
        p = run([SPTRACE, "summarize", path])
        os.unlink(path)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode != 0 and lines and all(w in lines[0] for w in words),
              "bad file %r: %r" % (content[:12], p.stderr.strip()))
    bad(b"", "empty")
    bad(b"not a trace file at all, just text\n", "magic")
    p = run([SPTRACE, "summarize", "/nonexistent.spt"])
    check(p.returncode != 0 and "/nonexistent.spt" in p.stderr, "missing file named")
    # A good file cut short keeps the chunks before the cut. Chunks end
    # every second, so record ~3 s (375 iterations of ~8 ms).
    p, spt = record(["--", GT, "--threads", "1", "375"])
    size = os.path.getsize(spt)
    with open(spt, "rb") as f:
        data = f.read()
    with open(spt, "wb") as f:
        f.write(data[: size * 2 // 3])
    p, s = summarize_json(spt)
    os.unlink(spt)
    check(p.returncode == 0 and s is not None and
          0 < rows(s).get("inner", {}).get("count", 0) < 750,
          "truncated file: recovered %s inner queries" %
          (rows(s).get("inner", {}).get("count") if s else None))
    check("footer" in p.stderr or "truncated" in p.stderr or "cut" in p.stderr,
          "truncated file: warning says so (%r)" % p.stderr.strip()[:200])


def test_output_safety():
    out = tmpfile(".spt")
    with open(out, "w") as f:
        f.write("keep")
    p = run([SPTRACE, "record", "-o", out, "--", GT, "1"])
    check(p.returncode != 0 and "exists" in p.stderr, "record refuses an existing file")
    with open(out) as f:
        eq(f.read(), "keep", "existing file untouched")
    os.unlink(out)


def test_diff_and_exports():
    live = tmpfile(".json")
    p, spt = record(["--", GT, "--threads", "2", "5"], "--summary", live)
    p2, spt2 = record(["--", GT, "--threads", "2", "10"])
    with open(live) as f:
        base = json.load(f)
    # diff: a trace against its own live JSON summary changes nothing
    p = run([SPTRACE, "diff", "-f", "json", spt, live])
    eq(p.returncode, 0, "diff trace vs JSON: exit 0 (%s)" % p.stderr.strip()[:200])
    d = json.loads(p.stdout) if p.returncode == 0 else {"queries": []}
    check(d["queries"] and all(q["status"] == "both" and
                               all(v == 0 for v in q["delta"].values())
                               for q in d["queries"]),
          "diff of a run against itself: every delta 0")
    # diff: twice the iterations doubles the counts
    p = run([SPTRACE, "diff", "-f", "json", spt, spt2])
    d = {q["name"]: q for q in json.loads(p.stdout)["queries"]}
    eq(d["inner"]["delta"]["count"], 20, "diff: inner count +20")
    eq(d["warm_outer"]["delta"]["count"], 0, "diff: warm-up unchanged")
    p = run([SPTRACE, "diff", spt, spt2])
    check(p.returncode == 0 and "Total" in p.stdout, "diff table printed")

    # Without -o, standard output: `export --chrome X > out.json` (a
    # file), a pipe; the same bytes as -o FILE, for every format.
    for fmt in ("--chrome", "--folded", "--csv"):
        want = tmpfile(".out")
        eq(run([SPTRACE, "export", fmt, spt, "-o", want]).returncode, 0,
           "export %s -o FILE" % fmt)
        got = tmpfile(".out")
        with open(got, "w") as f:
            p = subprocess.run([SPTRACE, "export", fmt, spt], stdout=f,
                               stderr=subprocess.PIPE, text=True)
        piped = run([SPTRACE, "export", fmt, spt])
        with open(want) as a, open(got) as b:
            wb = a.read()
            check(p.returncode == 0 and piped.returncode == 0 and
                  wb == b.read() == piped.stdout and wb,
                  "export %s > FILE and | PIPE without -o: exit 0, the bytes "
                  "of -o FILE (%s)" % (fmt, p.stderr.strip()[:200]))
        os.unlink(want)
        os.unlink(got)

    # Chrome trace: valid JSON, required fields, one slice per invocation
    out = tmpfile(".json")
    p = run([SPTRACE, "export", "--chrome", spt, "-o", out])
    eq(p.returncode, 0, "export --chrome: exit 0")
    with open(out) as f:
        chrome = json.load(f)
    os.unlink(out)
    evs = chrome["traceEvents"]
    check(all({"ph", "pid", "tid", "name"} <= set(e) for e in evs),
          "chrome: every event has ph, pid, tid, name")
    check(all("ts" in e for e in evs if e["ph"] in "XiB"), "chrome: timed events have ts")
    xs = [e for e in evs if e["ph"] == "X"]
    eq(sum(1 for e in xs if e["name"] == "inner"), rows(base)["inner"]["count"],
       "chrome: one slice per inner invocation")
    check(all(e["dur"] >= 0 for e in xs), "chrome: durations non-negative")
    check(any(e["ph"] == "M" and e["name"] == "thread_name" for e in evs),
          "chrome: thread names as metadata")
    # Perfetto names a process track by this, not by a bare PID.
    pn = [(e["pid"], e["args"]["name"]) for e in evs
          if e["ph"] == "M" and e["name"] == "process_name"]
    eq(len(pn), len({e["pid"] for e in xs}),
       "chrome: one process_name per traced process")
    check(pn and pn[0][1].startswith(GT) and "--threads 2 5" in pn[0][1],
          "chrome: the process is named by its command: %r" % pn)
    # nesting: every inner slice lies inside an outer slice of its thread
    outers = [(e["tid"], e["ts"], e["ts"] + e["dur"]) for e in xs if e["name"] == "outer"]
    check(all(any(t == e["tid"] and a <= e["ts"] and e["ts"] + e["dur"] <= b + 1e-3
                  for t, a, b in outers)
              for e in xs if e["name"] == "inner"), "chrome: inner nested in outer")

    # folded stacks weighted by self time add up to the total self time
    out = tmpfile(".folded")
    p = run([SPTRACE, "export", "--folded", spt, "-o", out])
    with open(out) as f:
        lines = f.read().splitlines()
    os.unlink(out)
    eq(sum(int(l.rsplit(" ", 1)[1]) for l in lines), base["total_self_ns"],
       "folded: weights sum to total self time")
    check(any(l.startswith("outer;inner ") for l in lines), "folded: outer;inner stack")

    # raw CSV: one line per event
    out = tmpfile(".csv")
    p = run([SPTRACE, "export", "--csv", spt, "-o", out])
    with open(out) as f:
        rdr = list(__import__("csv").DictReader(f))
    os.unlink(out)
    eq(sum(1 for r in rdr if r["kind"] == "query_begin" and r["name"] == "inner"),
       rows(base)["inner"]["count"], "csv: one query_begin row per inner call")
    for f in (live, spt, spt2):
        os.unlink(f)


def test_record_order():
    """Marks, allocations, frees and --query spec probes are per-event:
    each drains its thread's batched records first, so within a thread
    the file's events are in time order, and each round's spec pair, mark,
    alloc and free lie inside that round's (batched) "rq" query, after the
    batched cache hit before each, as the host ran them (two threads, N
    rounds each, 2 us apart)."""
    p, spt = record(["--", BATCH, "marks", "300"], "--events",
                    "query,cache,blocked,incr,mark,alloc", "--query",
                    "bh:sdt__start,bh:sdt__done,name=sdt")
    eq(p.returncode, 0, "record marks: exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    out = tmpfile(".csv")
    p = run([SPTRACE, "export", "--csv", spt, "-o", out])
    eq(p.returncode, 0, "record marks: export --csv")
    with open(out) as f:
        evs = list(__import__("csv").DictReader(f))
    for f in (out, spt):
        os.unlink(f)
    by_tid = {}
    for e in evs:
        by_tid.setdefault(e["tid"], []).append(e)
    want = []
    for i in range(t["rounds"]):
        # a spec line's events carry its track + 1 in arg1
        hit = ("cache_hit", "rq", 0)
        want += [("query_begin", "rq", 0), ("query_begin", "sdt", 1),
                 ("query_end", "sdt", 1), hit, ("mark", "m", i), hit,
                 ("alloc", "obj", 64), hit, ("free", "obj", 0),
                 ("query_end", "rq", 0)]
    threads = 0
    for tid, es in sorted(by_tid.items()):
        seq = [(e["kind"], e["name"], int(e["arg1"])) for e in es
               if e["kind"] in ("query_begin", "query_end", "cache_hit", "mark",
                                "alloc", "free")]
        if not seq:
            continue
        threads += 1
        back = [k for k in range(1, len(es))
                if int(es[k]["ts_ns"]) < int(es[k - 1]["ts_ns"])]
        check(not back, "record marks: thread %s: events in time order in the "
              "file (%d out of order%s)" % (
                  tid, len(back), ", first: %s after %s" % (
                      es[back[0]], es[back[0] - 1]) if back else ""))
        bad = next((k for k in range(min(len(seq), len(want)))
                    if seq[k] != want[k]), None)
        check(seq == want, "record marks: thread %s: mark, alloc, free and "
              "spec pair inside each round's rq, in the host's order (%d events, "
              "first difference at %s: %r, the host ran %r)" % (
                  tid, len(seq), bad, seq[bad] if bad is not None else None,
                  want[bad] if bad is not None else None))
    eq(threads, t["threads"], "record marks: both threads in the file")


require_bpf()
test_record_order()
test_record_equals_live()
test_diff_and_exports()
retry_timing(test_ground_truth)
test_filters()
test_pid_record()
test_duration_from_armed()
test_bad_files()
test_output_safety()
test_batched_path()
finish()
