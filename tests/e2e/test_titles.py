# SPDX-License-Identifier: MIT
"""Process titles (/proc/PID/cmdline, rewritten by the process as
PostgreSQL's backends do): the exact title of each process in --per-pid
JSON, CSV and table, the last one a process had alive, cut at 127 bytes
with "...", also for processes that live less than the 200 ms between two
title reads (taken as they exit, launched and -b); in serve, the `title` label of sptrace_process_info: the first
title the process set (not its parent's, seen between its fork and its
own title), which does not change when the process retitles itself; in a
recording, the title at the process's first event, which export --chrome
makes its process_name.
Truth: the titles the host processes wrote and printed."""
import csv
import io
import json
import os
import subprocess
import time

from fleet_metrics import parse, scrape, start_serve, stop_serve
from sptest import (SPTRACE, check, cleanup, eq, finish, require_bpf, run,
                    tmpfile, wait_tracing)

HOST = os.environ["TITLE_HOST"]
K = 5
PAD = "p" * 300          # room in the argv area for a 200-byte title

require_bpf()


def kept(title):
    """What sptrace keeps of a title: 127 bytes, the last 3 "..."."""
    return title if len(title) <= 127 else title[:124] + "..."


def truths(stdout):
    return {t["pid"]: t for t in (json.loads(l) for l in stdout.splitlines()
                                  if l.startswith("{"))}


def launched(cmd, what):
    """sptrace --per-pid --follow -- cmd: the children's printed truths,
    and their t_work rows as {pid: (title, count)} got and wanted (the
    last title each had, as sptrace keeps it)."""
    out = tmpfile(".json")
    p = run([SPTRACE, "--per-pid", "--follow", "-f", "json", "--force",
             "-o", out, "--"] + cmd, timeout=120)
    eq(p.returncode, 0, "%s: exit 0 (%s)" % (what, p.stderr[-300:]))
    truth = truths(p.stdout)
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    got = {q["pid"]: (q["title"], q["count"]) for q in data["queries"]
           if q["name"] == "t_work"}
    want = {pid: (kept(t["t2"]), t["count"]) for pid, t in truth.items()}
    return truth, got, want


def test_per_pid():
    cmd = [HOST, str(K), "300", "1000", PAD]
    truth, got, want = launched(cmd, "trace --per-pid")
    eq(len(truth), 2, "two children printed their titles")
    eq(got, want, "--per-pid JSON: each child's last title alive, exact "
       "(child 1's 200 bytes cut to 127 with ...), and its count")
    w0 = [t for t in truth.values() if "worker 0" in t["t2"]]
    if check(len(w0) == 1, "child 0 found"):
        eq(w0[0]["t2"], "title_host: worker 0 idle", "child 0's own title")

    # CSV: a title column after pid.
    p = run([SPTRACE, "--per-pid", "--follow", "-f", "csv", "--"] + cmd,
            timeout=120)
    truth = truths("\n".join(l for l in p.stdout.splitlines()
                             if l.startswith("{")))
    rows = list(csv.DictReader(io.StringIO(
        "\n".join(l for l in p.stdout.splitlines()
                  if not l.startswith("{")))))
    eq({int(r["pid"]): r["title"] for r in rows if r["name"] == "t_work"},
       {pid: kept(t["t2"]) for pid, t in truth.items()},
       "--per-pid CSV: title column exact")

    # Table: the title goes with the pid in the Item column. The default
    # table fits 120 columns (names, titles with them, are cut to fit);
    # --wide shows the Item column up to its 60 cells.
    p = run([SPTRACE, "--per-pid", "--follow", "--"] + cmd, timeout=120)
    truth = truths(p.stdout)
    lines = [l for l in p.stdout.splitlines() if l.startswith(("|", "+"))]
    check(lines and max(len(l) for l in lines) <= 120,
          "--per-pid table within 120 columns")
    for pid in truth:
        check("| t_work [pid %d: " % pid in p.stdout,
              "--per-pid table: pid %d with a title" % pid)
    p = run([SPTRACE, "--per-pid", "--wide", "--follow", "--"] + cmd,
            timeout=120)
    truth = truths(p.stdout)
    for pid, t in truth.items():
        want = "| t_work [pid %d: %s" % (pid, kept(t["t2"])[:30])
        check(want in p.stdout, "--per-pid --wide table: %r" % want)
    items = [l.split("|")[1] for l in p.stdout.splitlines()
             if l.startswith("| t_work")]
    check(items and max(len(i.strip()) for i in items) <= 60,
          "--per-pid --wide table: Item within its 60 cells (%s)" % items)


def test_short_lived():
    """Children that live about 40 ms, less than the 200 ms between two
    title scans, set their title after the fork and again just before they
    exit (a PostgreSQL backend of a short connection): each row has the
    last one, taken as the process exited. Without that, such a child is
    never seen alive with its own title (an empty title)."""
    cmd = [HOST, str(K), "20", "0", PAD]
    for r in range(3):
        _, got, want = launched(cmd, "short-lived %d" % r)
        eq(got, want, "short-lived %d, launched: each child's title as it "
           "exited, and its count" % r)
    # -b: processes of the file, started after sptrace.
    out = tmpfile(".json")
    tracer = None
    try:
        tracer = subprocess.Popen([SPTRACE, "-b", HOST, "--per-pid", "-f",
                                   "json", "--force", "-o", out],
                                  stderr=subprocess.PIPE, text=True)
        wait_tracing(tracer)
        truth = {}
        for r in range(2):
            truth.update(truths(run(cmd).stdout))
        tracer.send_signal(2)
        _, err = tracer.communicate(timeout=60)
        eq(tracer.returncode, 0, "short-lived -b: exit 0 (%s)" % err[-300:])
        with open(out) as f:
            data = json.load(f)
        got = {q["pid"]: q["title"] for q in data["queries"]
               if q["name"] == "t_work"}
        eq(got, {pid: kept(t["t2"]) for pid, t in truth.items()},
           "short-lived -b: each child's title as it exited")
    finally:
        cleanup(tracer, out)


def test_serve(late_ms=0):
    what = "serve" if not late_ms else "serve, titled %d ms after fork" % late_ms
    serve, url = start_serve(["-b", HOST])
    try:
        # Children keep title 1 for 1.5 s (serve's scan of -b processes
        # runs every 200 ms), then retitle and stay 3 s. With late_ms,
        # they show their parent's title that long first: serve sees it
        # and must take title 1 once it is set.
        env = dict(os.environ)
        if late_ms:
            env["TITLE_HOST_LATE_MS"] = str(late_ms)
        h = subprocess.Popen([HOST, str(K), "1500", "3000", PAD],
                             stdout=subprocess.PIPE, text=True, env=env)
        truth = {}
        for _ in range(2):
            t = json.loads(h.stdout.readline())
            truth[t["pid"]] = t
        labels = []
        for i in range(2):
            s = parse(scrape(url)[2])
            # The title is a label of sptrace_process_info, one per
            # process with series (docs/fleet.md).
            pids = {l["pid"] for n, l, v in s
                    if n == "sptrace_query_invocations_total" and
                    l.get("query") == "t_work"}
            labels.append({int(l["pid"]): l.get("title") for n, l, v in s
                           if n == "sptrace_process_info" and
                           l["pid"] in pids})
            time.sleep(0.5)
        want = {pid: kept(t["t1"]) for pid, t in truth.items()}
        eq(labels[0], want, "%s: title label = the first title the "
           "process set" % what)
        eq(labels[1], want, "%s: the label does not change when the "
           "process retitles itself (no new series)" % what)
        h.wait(timeout=30)
        eq(h.returncode, 0, "title host exit 0")
    finally:
        stop_serve(serve)


def test_chrome():
    spt, js = tmpfile(".spt"), tmpfile(".json")
    try:
        p = run([SPTRACE, "record", "--follow", "-o", spt, "--", HOST, str(K),
                 "500", "300", PAD], timeout=120)
        eq(p.returncode, 0, "record: exit 0 (%s)" % p.stderr[-300:])
        truth = truths(p.stdout)
        p = run([SPTRACE, "export", "--chrome", "-o", js, spt])
        eq(p.returncode, 0, "export --chrome: exit 0 (%s)" % p.stderr[-300:])
        with open(js) as f:
            ev = json.load(f)["traceEvents"]
        names = {e["pid"]: e["args"]["name"] for e in ev
                 if e.get("ph") == "M" and e["name"] == "process_name"}
        eq(names, {pid: kept(t["t1"]) for pid, t in truth.items()},
           "export --chrome: process_name of each child = its title at "
           "its first event")
    finally:
        for f in (spt, js):
            if os.path.exists(f):
                os.unlink(f)


test_per_pid()
test_short_lived()
test_serve()
test_serve(late_ms=800)
test_chrome()
finish()
