# SPDX-License-Identifier: MIT
"""Continuous mode (sptrace --interval): per-interval counts of a host with
known counts sum exactly to its total, across processes that come and go
with -b (their rows evicted from the kernel maps and counted); the
cumulative mode's last report equals the host's own counter exactly (also
when the maps are read key by key, as without batch lookups); the
table mode prints a header per tick; bad option combinations are refused."""
import json
import os
import signal
import subprocess
import time

from sptest import (SPTRACE, check, eq, finish, host_truth, require_bpf, run,
                    tmpfile)

HOST = os.environ["FLEET_HOST"]


def start_tracer(args, out, env=None):
    p = subprocess.Popen([SPTRACE] + args + ["-o", out],
                         stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **(env or {})))
    line = p.stderr.readline()      # "tracing N probe sites" once armed
    check("tracing" in line, "tracer armed: %r" % line.strip())
    return p


def stop(p):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return p.stderr.read()


def json_lines(path, what):
    out = []
    with open(path) as f:
        for n, line in enumerate(f):
            try:
                out.append(json.loads(line))
            except ValueError as e:
                check(False, "%s: line %d is JSON (%s): %r" %
                      (what, n + 1, e, line[:100]))
    return out


def test_per_interval_binary():
    out = tmpfile(".jsonl")
    tr = start_tracer(["--interval", "0.3", "-f", "json", "-b", HOST], out)
    truths = []
    try:
        for _ in range(2):          # two processes, one after the other
            p = run([HOST, "--names", "3", "--rounds", "60",
                     "--pause-ms", "10", "--spin-us", "100"])
            truths.append(host_truth(p.stdout))
        time.sleep(1.5)             # a few ticks after both exited
    finally:
        err = stop(tr)
    eq(tr.returncode, 0, "interval -b: exit status (stderr %r)" % err[-300:])
    ticks = json_lines(out, "interval -b")
    os.unlink(out)
    check(len(ticks) >= 4, "interval -b: several ticks (%d)" % len(ticks))
    if not ticks:
        return
    eq([t["tick"] for t in ticks], list(range(1, len(ticks) + 1)),
       "interval -b: ticks numbered in order")
    eq([t["final"] for t in ticks], [False] * (len(ticks) - 1) + [True],
       "interval -b: only the last tick is final")
    check(all(not t["cumulative"] for t in ticks),
          "interval -b: per-interval ticks")
    total = {}
    hits = {}
    hist = {}
    for t in ticks:
        for q in t["queries"]:
            total[q["name"]] = total.get(q["name"], 0) + q["count"]
            hits[q["name"]] = hits.get(q["name"], 0) + q["cache_hits"]
            hist[q["name"]] = hist.get(q["name"], 0) + \
                sum(b["count"] for b in q["hist"])
            if q["count"]:
                check(q["min_ns"] <= q["p50_ns"] <= q["p99_ns"] <= q["max_ns"],
                      "tick %d %s: min <= p50 <= p99 <= max" %
                      (t["tick"], q["name"]))
    want = sum(tr_["invocations_per_name"] for tr_ in truths)
    for name in ("q00000", "q00001", "q00002"):
        eq(total.get(name), want,
           "interval -b: %s intervals sum to the hosts' count" % name)
        eq(hits.get(name), want,
           "interval -b: %s cache hits sum to the hosts' count" % name)
        # A read is not atomic across the kernel's maps: an invocation
        # that ends during a read may be in one tick's histogram and the
        # next tick's count; the sums agree exactly.
        eq(hist.get(name), want,
           "interval -b: %s histogram counts sum to the hosts' count" % name)
    last = ticks[-1]
    eq(last["exited_processes"], 2, "interval -b: both processes seen exiting")
    eq(last["evicted_rows"], 6,
       "interval -b: their 2 x 3 rows evicted from the kernel maps")
    eq(last["targets_alive"], 0, "interval -b: no process left")
    eq(last["errors"]["map_full"], 0, "interval -b: no map full")


def test_cumulative_pid(env=None, label="cumulative"):
    host = subprocess.Popen([HOST, "--wait", "--names", "2", "--rounds", "80",
                             "--pause-ms", "10"], stdout=subprocess.PIPE,
                            text=True)
    line = host.stdout.readline()
    check(line.startswith("ready"), label + ": host ready")
    out = tmpfile(".jsonl")
    tr = start_tracer(["--interval", "0.25", "--cumulative", "-f", "json",
                       "-p", str(host.pid)], out, env)
    host.send_signal(signal.SIGUSR1)
    truth = host_truth(host.communicate(timeout=60)[0])
    try:
        tr.wait(timeout=30)         # ends with its target
    except subprocess.TimeoutExpired:
        stop(tr)
    eq(tr.returncode, 0, label + ": exit status")
    ticks = json_lines(out, label)
    os.unlink(out)
    if not check(len(ticks) >= 2, label + ": several ticks (%d)" %
                 len(ticks)):
        return
    check(all(t["cumulative"] for t in ticks), label + ": flagged")
    prev = 0
    mono = True
    for t in ticks:
        c = {q["name"]: q["count"] for q in t["queries"]}.get("q00000", 0)
        mono = mono and c >= prev
        prev = c
    check(mono, label + ": counts never go down")
    rows = {q["name"]: q for q in ticks[-1]["queries"]}
    for name in ("q00000", "q00001"):
        eq(rows.get(name, {}).get("count"), truth["invocations_per_name"],
           label + ": final %s equals the host's own count" % name)
        eq(rows.get(name, {}).get("cache_hits"), truth["cache_hits_per_name"],
           label + ": final %s cache hits" % name)


def test_table():
    out = tmpfile(".txt")
    p = run([SPTRACE, "--interval", "0.3", "-o", out, "--", HOST,
             "--names", "2", "--rounds", "60", "--pause-ms", "10"])
    eq(p.returncode, 0, "table: exit status is the command's")
    truth = host_truth(p.stdout)
    with open(out) as f:
        text = f.read()
    os.unlink(out)
    heads = [l for l in text.splitlines() if l.startswith("sptrace: ") and
             " tick " in l]
    check(len(heads) >= 2, "table: a header line per tick (%d)" % len(heads))
    check(heads and "(final)" in heads[-1] and "per interval" in heads[-1],
          "table: last header says final: %r" % (heads[-1:],))
    # Sum the Item count column of the q00000 rows of every table.
    total = 0
    cols = None
    for line in text.splitlines():
        if line.startswith("| Item"):
            cols = [c.strip() for c in line.strip("|").split("|")]
        elif line.startswith("| q00000") and cols:
            cells = [c.strip() for c in line.strip("|").split("|")]
            total += int(cells[cols.index("Item count")])
    eq(total, truth["invocations_per_name"],
       "table: q00000 counts of every tick sum to the host's count")


def test_bad_options():
    p = run([SPTRACE, "--cumulative", "-p", "1"])
    check(p.returncode == 1 and "--interval" in p.stderr,
          "--cumulative alone refused: %r" % p.stderr.strip())
    p = run([SPTRACE, "--interval", "1", "-f", "csv", "-p", "1"])
    check(p.returncode == 1 and "csv" in p.stderr,
          "--interval -f csv refused: %r" % p.stderr.strip())
    p = run([SPTRACE, "--interval", "0", "-p", "1"])
    check(p.returncode == 1 and "--interval" in p.stderr,
          "--interval 0 refused: %r" % p.stderr.strip())


GT = os.environ["GT_HOST"]


def test_final_tick():
    """A launched command that ends between two ticks: its leftover is the
    final tick's, never a late regular tick followed by an empty final one
    (sptrace drains the kernel once more after it stopped; that read must
    not count as a tick of the grid). The host works without a pause, so
    every regular tick has its queries; the counts add up to the host's."""
    bad = []
    # Without a pause to its exit, too: LeakSanitizer's scan at an
    # ASan-built host's exit took over 50 ms on a loaded machine (an ASan
    # run: a regular tick of 56 ms, empty, between the last query and the
    # exit), so the host runs without it.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(
        [o for o in env.get("ASAN_OPTIONS", "").split(":") if o] +
        ["detect_leaks=0"])
    for attempt in range(5):
        out = tmpfile(".jsonl")
        p = run([SPTRACE, "--interval", "0.05", "-f", "json", "-o", out,
                 "--", GT, "--threads", "1", "20"], env=env)
        truth = host_truth(p.stdout)
        ticks = json_lines(out, "final tick run %d" % attempt)
        os.unlink(out)
        eq([t["final"] for t in ticks], [False] * (len(ticks) - 1) + [True],
           "run %d: only the last of %d ticks is final" % (attempt, len(ticks)))
        # Ticks before the host's first query are its start-up (exec, the
        # loader, the libraries): counting is armed before the command
        # runs. From its first query on, it works without a pause.
        first = next((i for i, t in enumerate(ticks) if t["queries"]),
                     len(ticks))
        bad += [(attempt, t["tick"], t["interval_ns"])
                for t in ticks[first:-1] if not t["queries"]]
        n = sum(q["count"] for t in ticks for q in t["queries"]
                if q["name"] == "outer")
        eq(n, truth["iterations"] * truth["threads"],
           "run %d: outer counted once over the ticks" % attempt)
    eq(bad, [], "no regular tick after the command ended (empty, off the "
       "grid)")


require_bpf()
test_final_tick()
test_per_interval_binary()
test_cumulative_pid()
# The same through the key-by-key fallback of kernels without batch lookups.
test_cumulative_pid({"SPTRACE_NO_MAP_BATCH": "1"}, "cumulative, no batch")
test_table()
test_bad_options()
finish()
