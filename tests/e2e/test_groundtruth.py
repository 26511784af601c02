# SPDX-License-Identifier: MIT
"""Ground truth: every count exact and every time within 3% of what the
host really spent, in launch mode, with -p on a waiting process, and when
attaching in the middle of a run. Also the table and CSV writers on the
same data. Run twice by meson: batched events (the default for hosts built
with the current sp_probe.h) and per-event probes (SPTRACE_PER_EVENT=1);
the JSON summary says which mode ran."""
import csv
import io
import json
import os
import signal
import subprocess
import time

from sptest import (SPTRACE, check, close, eq, finish, host_truth,
                    require_bpf, retry_timing, rows, run, trace_json)

GT = os.environ["GT_HOST"]
MODE = ("per-event" if os.environ.get("SPTRACE_PER_EVENT", "0") not in ("", "0")
        else "batched")
ITER = 25
THREADS = 2


def check_summary(s, truth, label):
    n = truth["iterations"] * truth["threads"]
    r = rows(s)
    check(set(r) >= {"outer", "inner", "shared", "codegen", "lib_query",
                     "recurse"}, label + ": all queries named: %s" % sorted(r))
    if len(r) < 6:
        return
    # counts: exact
    eq(r["outer"]["count"], n, label + ": outer count")
    eq(r["inner"]["count"], 2 * n, label + ": inner count")
    eq(r["inner"]["cache_hits"], 3 * n, label + ": inner cache hits")
    eq(r["recurse"]["count"], 3 * n, label + ": recurse count (nested 3 deep)")
    eq(r["lib_query"]["count"], n, label + ": lib_query count (shared library)")
    eq(r["shared"]["count"], 0, label + ": blocked is not an invocation")
    eq(r["shared"]["blocked_count"], n, label + ": blocked count")
    eq(r["codegen"]["count"], 0, label + ": incr load is not an invocation")
    eq(r["codegen"]["incr_loads"], n, label + ": incr load count")
    # times: within 3% of what the host measured with its own clock
    tot, slf = truth["total_ns"], truth["self_ns"]
    for name in ("outer", "inner", "lib_query", "recurse", "shared",
                 "codegen"):
        close(r[name]["self_ns"], slf[name], label + ": %s self" % name)
        close(r[name]["total_ns"], tot[name], label + ": %s total" % name)
    close(r["shared"]["blocked_ns"], tot["shared"], label + ": blocked time")
    close(r["codegen"]["incr_load_ns"], tot["codegen"],
          label + ": incr load time")
    # percentiles of a 1 ms query, min/max ordering, histogram totals
    inner = r["inner"]
    close(inner["p50_ns"], 1e6, label + ": inner p50 (1 ms busy-wait)")
    check(inner["min_ns"] <= inner["p50_ns"] <= inner["p90_ns"] <=
          inner["p99_ns"] <= inner["max_ns"], label + ": min<=p50<=p90<=p99<=max")
    for name in ("outer", "inner", "recurse", "lib_query"):
        eq(sum(b["count"] for b in r[name]["hist"]), r[name]["count"],
           label + ": %s histogram holds every invocation" % name)
    # The host's own sum of every self time, warm-up rows included.
    close(s["total_self_ns"], truth["total_self_ns"],
          label + ": total_self_ns against the host's sum of self times")
    for k, v in s["errors"].items():
        eq(v, 0, label + ": errors.%s" % k)
    eq(s.get("events"), MODE, label + ": events mode named in the JSON")
    # the warm-up round is there too, under its own names
    eq(r.get("warm_outer", {}).get("count"), truth["threads"],
       label + ": warm-up rows separate")


def test_launch():
    p, s = trace_json(["--", GT, "--threads", str(THREADS), str(ITER)])
    eq(p.returncode, 0, "launch: exit status is the command's")
    if not check(s is not None, "launch: JSON written"):
        print(p.stderr)
        return
    check_summary(s, host_truth(p.stdout), "launch")
    check(s["duration_ns"] > 0, "launch: duration_ns set")


def test_pid():
    host = subprocess.Popen([GT, "--wait", "--threads", str(THREADS),
                             str(ITER)], stdout=subprocess.PIPE, text=True)
    line = host.stdout.readline()
    check(line.startswith("ready"), "pid: host ready")
    out = "/tmp/sptest-pid-%d.json" % host.pid
    if os.path.exists(out):
        os.unlink(out)
    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json",
                               "-o", out], stderr=subprocess.PIPE, text=True)
    # sptrace says "tracing N probe sites" once attached.
    err_line = tracer.stderr.readline()
    check("tracing" in err_line, "pid: attached (%r)" % err_line.strip())
    host.send_signal(signal.SIGUSR1)
    truth = host_truth(host.stdout.read())
    host.wait()
    try:
        rc = tracer.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tracer.kill()
        rc = None
    eq(rc, 0, "pid: sptrace stops by itself when the target exits")
    with open(out) as f:
        s = json.load(f)
    os.unlink(out)
    check_summary(s, truth, "pid")


def test_two_pids():
    """-p A,B: both processes traced, rows merged by name, sptrace ends
    when both have exited."""
    hosts = [subprocess.Popen([GT, "--wait", "--threads", "1", "5"],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for h in hosts:
        h.stdout.readline()
    out = "/tmp/sptest-2pids-%d.json" % os.getpid()
    if os.path.exists(out):
        os.unlink(out)
    tracer = subprocess.Popen([SPTRACE, "-p", ",".join(str(h.pid) for h in hosts),
                               "-f", "json", "-o", out],
                              stderr=subprocess.PIPE, text=True)
    check("tracing" in tracer.stderr.readline(), "two pids: attached")
    for h in hosts:
        h.send_signal(signal.SIGUSR1)
        h.communicate()
    eq(tracer.wait(timeout=30), 0, "two pids: sptrace ends when both exit")
    with open(out) as f:
        r = rows(json.load(f))
    os.unlink(out)
    eq(r["inner"]["count"], 2 * 10, "two pids: inner of both processes")
    eq(r["lib_query"]["count"], 2 * 5, "two pids: shared library in both")


def test_sort():
    p = run([SPTRACE, "-f", "csv", "-s", "count", "--", GT, "--threads", "1", "3"])
    counts = [int(r["count"]) for r in csv.DictReader(io.StringIO(p.stdout[p.stdout.index("name,"):]))]
    eq(counts, sorted(counts, reverse=True), "--sort count orders rows by count")
    p = run([SPTRACE, "-f", "csv", "-s", "name", "--", GT, "--threads", "1", "3"])
    names = [r["name"] for r in csv.DictReader(io.StringIO(p.stdout[p.stdout.index("name,"):]))]
    eq(names, sorted(names), "--sort name orders rows by name")


def test_mid_run():
    """Attach while queries are in flight: counts cannot be known, but ENDs
    without BEGINs are counted, not misattributed, and rows stay sane."""
    host = subprocess.Popen([GT, "--threads", "2", "100000"],
                            stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    p, s = trace_json(["-p", str(host.pid), "-d", "1"])
    host.kill()
    host.wait()
    eq(p.returncode, 0, "mid-run: exit 0 after -d")
    if not check(s is not None, "mid-run: JSON summary written"):
        return
    r = rows(s)
    check(r.get("inner", {}).get("count", 0) > 0, "mid-run: inner seen")
    # at most one END without BEGIN per open frame per thread at attach time
    check(s["errors"]["end_without_begin"] <= 2 * 4,
          "mid-run: unmatched ENDs bounded (%d)" % s["errors"]["end_without_begin"])
    # No interval can be longer than the trace: a BEGIN from before the
    # attach paired with a later END would be (a 1 ms query preempted on a
    # loaded machine can take 50 ms, so a fixed bound is no test).
    if check("inner" in r, "mid-run: inner row"):
        check(r["inner"]["max_ns"] <= s["duration_ns"],
              "mid-run: no interval longer than the trace (max %d ns, "
              "trace %d ns)" % (r["inner"]["max_ns"], s["duration_ns"]))


def test_table_percent():
    """The % column against the host's own self times: each measured row's
    share of the host's sum of every self time (warm-up included); --wide,
    since the default table leaves that column out here."""
    p = run([SPTRACE, "--wide", "--", GT, "--threads", "1", "5"])
    truth = host_truth(p.stdout)
    got = {}
    for l in p.stdout.splitlines():
        c = [x.strip() for x in l.split("|")[1:-1]]
        if len(c) > 3 and c[0] not in ("Item", "Total"):
            got[c[0]] = float(c[2])
    for name, self_ns in sorted(truth["self_ns"].items()):
        want = 100.0 * self_ns / truth["total_self_ns"]
        close(got.get(name, -1.0), want,
              "table: %% of total time of %s against the host's" % name)


def test_table_fits():
    """By default the table fits 120 characters (docs/formats.md): with
    every optional column in use and names of at most 14 cells, % of total
    time and p50 are left out and named under the table; --wide prints them
    all. The counts are the host's either way."""
    p = run([SPTRACE, "--", GT, "--threads", "1", "5"])
    truth = host_truth(p.stdout)
    table = [l for l in p.stdout.splitlines() if l[:1] in "|+"]
    width = max(len(l) for l in table) if table else 0
    check(p.returncode == 0 and 100 <= width <= 120,
          "default table: fits 120 characters (%d)" % width)
    hdr = [c.strip() for c in table[1].split("|")[1:-1]] if table else []
    eq(hdr, ["Item", "Self time", "Time", "Item count", "Cache hits",
             "Blocked time", "Incr. load time", "p99", "Max"],
       "default table: its columns")
    check("2 columns left out to fit 120 characters: % of total time, p50 "
          "(--wide shows every column)" in p.stdout,
          "default table: a line names the columns left out")
    cnt = {c[0]: c[3] for c in ([x.strip() for x in l.split("|")[1:-1]]
                                for l in table[3:-1])}
    eq(cnt.get("outer"), str(truth["iterations"]),
       "default table: outer count (host)")
    p = run([SPTRACE, "--wide", "--", GT, "--threads", "1", "5"])
    table = [l for l in p.stdout.splitlines() if l[:1] in "|+"]
    check(table and len(table[0]) > 120 and "left out" not in p.stdout,
          "--wide: every column, wider than 120 (%d)" %
          (len(table[0]) if table else 0))


def test_table_and_csv():
    p = run([SPTRACE, "--wide", "--", GT, "--threads", "1", "5"])
    eq(p.returncode, 0, "table: exit 0")
    lines = [l for l in p.stdout.splitlines() if l.startswith("|")]
    check(len(lines) >= 3 and "Item" in lines[0], "table: header row")
    if len(lines) >= 2:
        check(lines[1].split("|")[1].strip() == "Total", "table: Total row first")
    hdr = [c.strip() for c in lines[0].split("|")[1:-1]] if lines else []
    for col in ("Item", "Self time", "% of total time", "Time", "Item count",
                "Cache hits", "Blocked time", "Incr. load time", "p50",
                "p99", "Max"):
        check(col in hdr, "table: column %r shown" % col)
    pct = [float(l.split("|")[3]) for l in lines[2:]]
    close(sum(pct), 100.0, "table: percentages add up to 100", rel=0.01)
    retry_timing(test_table_percent)

    p = run([SPTRACE, "--hist", "--", GT, "--threads", "1", "5"])
    lines = p.stdout.splitlines()
    head = [i for i, l in enumerate(lines) if l.startswith("inner  (count 10,")]
    total = 0
    if check(len(head) == 1, "--hist: inner's histogram printed"):
        for l in lines[head[0] + 1:]:
            if not l.startswith("  ["):
                break
            total += int(l.split(")", 1)[1].split("|")[0])
    eq(total, 10, "--hist: the bars hold every invocation")

    out = "/tmp/sptest-%d.csv" % os.getpid()
    if os.path.exists(out):
        os.unlink(out)
    p = run([SPTRACE, "-f", "csv", "-o", out, "--", GT, "--threads", "1",
             "5"])
    eq(p.returncode, 0, "csv: exit 0")
    with open(out) as f:
        rdr = list(csv.DictReader(f))
    os.unlink(out)
    names = {r["name"]: r for r in rdr}
    eq(int(names.get("inner", {}).get("count", -1)), 10, "csv: inner count")
    eq(int(names.get("inner", {}).get("cache_hits", -1)), 15,
       "csv: inner cache hits")


require_bpf()
retry_timing(test_launch)
retry_timing(test_pid)
test_two_pids()
test_sort()
test_mid_run()
test_table_fits()
test_table_and_csv()
finish()
