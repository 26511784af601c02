# SPDX-License-Identifier: MIT
"""sptrace latency: exact pair and unmatched counts and percentiles within 3%
of the host's known delays, for SP_MARK names (found as string literals in
the executable and in a library) and for third-party USDT probes, in launch
mode and with -p; the JSON fields, the table and its histogram; and one
clear error line for each bad endpoint."""
import json
import math
import os
import re
import signal
import subprocess

from sptest import (SPTRACE, check, close, eq, finish, host_truth,
                    require_bpf, retry_timing, run, tmpfile, trace_json)

HOST = os.environ["LATENCY_HOST"]
MARKS = ["--from", "lat_enqueue", "--to", "lat_dequeue"]
USDT = ["--from", "lathost:enqueue,key=arg0",
        "--to", "lathost:dequeue,key=arg1"]
FIELDS = {"from", "to", "count", "min_ns", "max_ns", "p50_ns", "p90_ns",
          "p99_ns", "unmatched_from", "unmatched_to", "hist"}


def latency_json(args, extra=()):
    """sptrace latency -f json -o FILE EXTRA ARGS; (process, result)."""
    return trace_json(list(extra) + args, cmd="latency", timeout=120)


def bucket(v):
    """sp_hist_bucket() of include/sptrace/hist.h."""
    if v < 32:
        return v
    shift = v.bit_length() - 1 - 5
    return (shift + 1) * 32 + ((v >> shift) & 31)


def rank(values, q):
    """Nearest-rank percentile, the rank sp_hist_percentile() reads."""
    v = sorted(values)
    return v[max(1, min(len(v), math.ceil(q * len(v) - 1e-9))) - 1]


def holds(got, lo, hi, key):
    """Whether every bin (key(v) -> count in got) holds between the pairs
    surely in it (both bounds there) and the pairs possibly in it."""
    bad = []
    for b in set(got) | {key(v) for v in lo + hi}:
        sure = sum(1 for l, h in zip(lo, hi) if key(l) == key(h) == b)
        maybe = sum(1 for l, h in zip(lo, hi) if key(l) <= b <= key(h))
        if not sure <= got.get(b, 0) <= maybe:
            bad.append((b, got.get(b, 0), sure, maybe))
    return bad


def check_result(d, truth, label, frm, to):
    check(FIELDS <= set(d), label + ": JSON has %s" % sorted(FIELDS))
    eq(d["from"], frm, label + ": from")
    eq(d["to"], to, label + ": to")
    eq(d["count"], truth["pairs"], label + ": pairs counted")
    eq(d["unmatched_from"], truth["unmatched_from"],
       label + ": unmatched starts (left pending + overwritten)")
    eq(d["unmatched_to"], truth["unmatched_to"], label + ": unmatched ends")
    for k, v in d["errors"].items():
        eq(v, 0, label + ": errors.%s" % k)
    hist = d["hist"]
    eq(sum(b["count"] for b in hist), truth["pairs"],
       label + ": histogram holds every pair")
    check(all(b["lo_ns"] < b["hi_ns"] for b in hist) and
          all(a["hi_ns"] <= b["lo_ns"] for a, b in zip(hist, hist[1:])),
          label + ": histogram buckets ordered, disjoint")
    # The host measured each pair's latency within [lo, hi]: every figure
    # must lie within the same bounds, every bucket hold between the pairs
    # surely in it and the pairs possibly in it.
    lo, hi = truth["lo_ns"], truth["hi_ns"]
    check(min(lo) <= d["min_ns"] <= min(hi),
          label + ": min %d in [%d, %d]" % (d["min_ns"], min(lo), min(hi)))
    check(max(lo) <= d["max_ns"] <= max(hi),
          label + ": max %d in [%d, %d]" % (d["max_ns"], max(lo), max(hi)))
    check(sum(lo) <= d["total_ns"] <= sum(hi),
          label + ": total %d in [%d, %d]" % (d["total_ns"], sum(lo), sum(hi)))
    bad = holds({bucket(b["lo_ns"]): b["count"] for b in hist}, lo, hi,
                bucket)
    check(not bad, label + ": every bucket holds the pairs the host timed "
          "in it (bucket, count, sure, possible: %s)" % bad)
    # Percentiles: the ranked pair lies within the host's bounds, and the
    # estimate within its bucket, at most 1/32 of its value wide.
    for q, key in ((0.5, "p50_ns"), (0.9, "p90_ns"), (0.99, "p99_ns")):
        a, b = rank(lo, q) * 32 / 33, rank(hi, q) * 33 / 32
        check(a <= d[key] <= b, label + ": %s %d in [%d, %d] (host's bounds "
              "and a bucket)" % (key, d[key], a, b))
    # And the median of the known delay, when the host could keep it (a
    # loaded machine preempts busy-waits; the check above still holds).
    if abs(rank(lo, 0.5) - truth["fast_ns"]) <= 0.03 * truth["fast_ns"]:
        close(d["p50_ns"], truth["fast_ns"], label + ": p50 vs the fast delay")
    else:
        print("note: %s: the host's median was %d ns, not %d (load %s)" % (
            label, rank(lo, 0.5), truth["fast_ns"],
            open("/proc/loadavg").read().split()[:3]))
    check(d["min_ns"] <= d["p50_ns"] <= d["p90_ns"] <= d["p99_ns"] <=
          d["max_ns"], label + ": min <= p50 <= p90 <= p99 <= max")
    check(d["duration_ns"] > 0, label + ": duration_ns set")


def launch(mode, args, frm, to):
    def attempt():
        p, d = latency_json(args + ["--", HOST, mode])
        eq(p.returncode, 0, mode + ": exit status is the command's")
        if not check(d is not None, mode + ": JSON written"):
            print(p.stderr)
            return
        check_result(d, host_truth(p.stdout), mode + " launch", frm, to)
    retry_timing(attempt)


def with_pid(mode, args, frm, to):
    def attempt():
        host = subprocess.Popen([HOST, "--wait", mode],
                                stdout=subprocess.PIPE, text=True)
        line = host.stdout.readline()
        check(line.startswith("ready"), mode + " -p: host ready")
        out = tmpfile(".json")
        tracer = subprocess.Popen([SPTRACE, "latency", "-p", str(host.pid),
                                   "-f", "json", "-o", out] + args,
                                  stderr=subprocess.PIPE, text=True)
        err_line = tracer.stderr.readline()
        check("tracing" in err_line,
              mode + " -p: attached (%r)" % err_line.strip())
        host.send_signal(signal.SIGUSR1)
        truth = host_truth(host.stdout.read())
        host.wait()
        try:
            rc = tracer.wait(timeout=30)
        except subprocess.TimeoutExpired:
            tracer.kill()
            rc = None
        eq(rc, 0, mode + " -p: sptrace stops when the target exits")
        if not check(os.path.exists(out), mode + " -p: JSON written"):
            return
        with open(out) as f:
            d = json.load(f)
        os.unlink(out)
        check_result(d, truth, mode + " -p", frm, to)
    retry_timing(attempt)


def test_wrong_key():
    """The key really is the argument named: with the decoy argument of the
    start no pair matches, and every start and end is unmatched."""
    p, d = latency_json(["--from", "lathost:enqueue,key=arg1",
                         "--to", "lathost:dequeue,key=arg1",
                         "--", HOST, "usdt"])
    eq(p.returncode, 0, "wrong key: exit 0")
    if d is None:
        return
    truth = host_truth(p.stdout)
    eq(d["count"], 0, "wrong key: no pair")
    eq(d["hist"], [], "wrong key: empty histogram")
    eq(d["min_ns"] + d["max_ns"] + d["p50_ns"] + d["p99_ns"], 0,
       "wrong key: no figures")
    eq(d["unmatched_from"], truth["starts"], "wrong key: every start unmatched")
    eq(d["unmatched_to"], truth["ends"], "wrong key: every end unmatched")


def test_binary():
    """-b with USDT endpoints: every process of the executable, started
    after sptrace; only the executable's own sites count (not its
    library's), which fixes the expected figures."""
    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "latency", "-b", HOST, "-f", "json",
                               "-o", out] + USDT, stderr=subprocess.PIPE,
                              text=True)
    err_line = tracer.stderr.readline()
    check("tracing" in err_line, "-b: attached (%r)" % err_line.strip())
    p = run([HOST, "usdt"])
    tracer.send_signal(signal.SIGINT)
    try:
        rc = tracer.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tracer.kill()
        rc = None
    eq(rc, 0, "-b: exit 0 after SIGINT")
    if not check(os.path.exists(out), "-b: JSON written"):
        return
    with open(out) as f:
        d = json.load(f)
    os.unlink(out)
    truth = host_truth(p.stdout)
    # Pair i starts in the library if i % 5 == 1, ends there if i % 3 == 2.
    n = truth["pairs"]
    exe_start = [i for i in range(n) if i % 5 != 1]
    exe_end = [i for i in range(n) if i % 3 != 2]
    both = set(exe_start) & set(exe_end)
    eq(d["count"], len(both), "-b: pairs with both events in the executable")
    # + 3 never ended, + 2 of key 900010 (one start of three in the library)
    eq(d["unmatched_from"], len(exe_start) - len(both) + 3 + 2,
       "-b: unmatched starts")
    # + 3 never started (one of four in the library), + the second end
    eq(d["unmatched_to"], len(exe_end) - len(both) + 3 + 1,
       "-b: unmatched ends")
    one_clear_line(run([SPTRACE, "latency", "-b", HOST] + MARKS),
                   "-b", "USDT endpoints only")


def test_pending_full():
    """A full map of pending starts: the starts it cannot keep are counted
    as pending_full, those it keeps as unmatched starts."""
    p, d = latency_json(MARKS + ["--", HOST, "flood", "100"],
                        extra=["--max-pending", "16"])
    eq(p.returncode, 0, "pending full: exit 0")
    if d is None:
        return
    eq(d["errors"]["pending_full"], 100 - 16, "pending full: starts lost")
    eq(d["unmatched_from"], 16, "pending full: starts kept, never ended")
    eq(d["count"], 0, "pending full: no pair")
    check("84 pending_full events" in p.stderr and "--max-pending" in
          p.stderr, "pending full: warned (%r)" % p.stderr.strip())


def fmt_ns(text):
    """Parses text__fmt_ns() output ("1.01ms") back to ns."""
    m = re.fullmatch(r"([0-9.]+)(ns|us|ms|s)", text)
    if not m:
        return -1
    return float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6,
                                "s": 1e9}[m.group(2)]


def test_table():
    def attempt():
        p = run([SPTRACE, "latency"] + MARKS + ["--", HOST, "marks"])
        eq(p.returncode, 0, "table: exit 0")
        truth = host_truth(p.stdout)
        lines = p.stdout.splitlines()
        check(any(l.startswith("sptrace latency: lat_enqueue -> lat_dequeue, duration ")
                  for l in lines), "table: title names both events")
        rows = [[c.strip() for c in l.split("|")[1:-1]]
                for l in lines if l.startswith("|")]
        if not check(len(rows) == 2, "table: header and one row"):
            print(p.stdout)
            return
        cell = dict(zip(rows[0], rows[1]))
        eq(cell.get("Count"), str(truth["pairs"]), "table: Count")
        eq(cell.get("Unmatched from"), str(truth["unmatched_from"]),
           "table: Unmatched from")
        eq(cell.get("Unmatched to"), str(truth["unmatched_to"]),
           "table: Unmatched to")
        lo, hi = truth["lo_ns"], truth["hi_ns"]
        # Bounds as in check_result(), and 3 printed digits (0.5%).
        bounds = {
            "Min": (min(lo), min(hi)), "Max": (max(lo), max(hi)),
            "p50": (rank(lo, 0.5) * 32 / 33, rank(hi, 0.5) * 33 / 32),
            "p90": (rank(lo, 0.9) * 32 / 33, rank(hi, 0.9) * 33 / 32),
            "p99": (rank(lo, 0.99) * 32 / 33, rank(hi, 0.99) * 33 / 32),
        }

        def printed(text, col, what):
            a, b = bounds[col]
            v = fmt_ns(text)
            check(a * 0.995 <= v <= b * 1.005,
                  "table: %s %r in [%d, %d]" % (what, text, a, b))

        for col in ("Min", "p50", "p90", "p99", "Max"):
            printed(cell.get(col, ""), col, col)
        # The histogram of --hist: a title line and bars.
        head = [i for i, l in enumerate(lines)
                if l.startswith("lat_enqueue -> lat_dequeue  (count %d, " %
                                truth["pairs"])]
        bars = {}
        if check(len(head) == 1, "table: histogram printed"):
            for l in lines[head[0] + 1:]:
                if not l.startswith("  ["):
                    break
                label, rest = l.strip().split(")", 1)
                bars[label + ")"] = int(rest.split("|")[0])
            m = re.search(r"p50 (\S+), p90 (\S+), p99 (\S+), max (\S+)\)",
                          lines[head[0]])
            if check(m is not None, "table: histogram title figures"):
                for text, col in zip(m.groups(),
                                     ("p50", "p90", "p99", "Max")):
                    printed(text, col, "histogram title " + col)
        eq(sum(bars.values()), truth["pairs"], "table: bars hold every pair")
        # A bar per power of two: [2^(g-1), 2^g) is group g.
        labels = {}
        for l in lines:
            if l.startswith("  ["):
                label = l.strip().split(")", 1)[0] + ")"
                lo_text = label[1:].split(",")[0]
                labels[label] = fmt_ns(lo_text)
        # Labels are rounded ("524us" for 2^19 ns): the nearest power.
        got = {round(math.log2(labels[k])) + 1: v for k, v in bars.items()
               if labels.get(k, -1) > 0}
        bad = holds(got, truth["lo_ns"], truth["hi_ns"],
                    lambda v: v.bit_length())
        check(not bad and len(got) == len(bars),
              "table: every bar holds the pairs the host timed in it (%s)"
              % bad)
    retry_timing(attempt)


def test_output_file():
    out = tmpfile(".json")
    with open(out, "w") as f:
        f.write("keep")
    try:
        p = run([SPTRACE, "latency", "-f", "json", "-o", out] + MARKS +
                ["--", HOST, "marks"])
        check(p.returncode != 0 and "file exists" in p.stderr,
              "-o: refuses an existing file (%r)" % p.stderr.strip())
        eq(open(out).read(), "keep", "-o: existing file untouched")
        p = run([SPTRACE, "latency", "-f", "json", "-o", out, "--force"] +
                MARKS + ["--", HOST, "marks"])
        eq(p.returncode, 0, "--force: exit 0")
        with open(out) as f:
            eq(json.load(f)["count"], 100, "--force: file rewritten")
    finally:
        os.unlink(out)


def one_clear_line(p, *words):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    ok = (p.returncode != 0 and len(lines) == 1 and
          lines[0].startswith("sptrace: ") and
          all(w in lines[0] for w in words))
    return check(ok, "exit %d, one line naming %s: %r" % (
        p.returncode, words, p.stderr.strip()))


def run_pid(mode, args):
    """sptrace latency -p on a waiting host that is killed afterwards."""
    host = subprocess.Popen([HOST, "--wait", mode], stdout=subprocess.PIPE,
                            text=True)
    try:
        host.stdout.readline()
        return run([SPTRACE, "latency", "-p", str(host.pid), "-d", "5"] +
                   args, timeout=60)
    finally:
        host.kill()
        host.wait()


def test_errors():
    lat = [SPTRACE, "latency"]
    one_clear_line(run(lat + ["--from", "lathost:nosuch,key=arg0",
                              "--to", "lathost:dequeue,key=arg1",
                              "--", HOST, "usdt"]),
                   "lathost:nosuch", "--from")
    one_clear_line(run_pid("usdt", ["--from", "lathost:enqueue",
                                    "--to", "lathost:nosuch,key=arg1"]),
                   "lathost:nosuch", "--to", "pid ")
    for bad in ("key=argX", "key=arg12", "key=arg", "foo=arg0", "key=arg-1"):
        one_clear_line(run(lat + ["--from", "lathost:enqueue," + bad,
                                  "--to", "lat_dequeue", "-p", "1"]),
                       "--from", "bad key", bad)
    one_clear_line(run(lat + ["--from", "lathost:enqueue,key=arg5",
                              "--to", "lathost:dequeue,key=arg1",
                              "--", HOST, "usdt"]),
                   "lathost:enqueue", "key=arg5", "2 arguments")
    one_clear_line(run(lat + ["--from", "no_such_mark", "--to", "lat_dequeue",
                              "--", HOST, "marks"]),
                   "'no_such_mark'", "--from", "not found")
    one_clear_line(run_pid("marks", ["--from", "lat_enqueue",
                                     "--to", "lat_dequeue_x"]),
                   "'lat_dequeue_x'", "--to", "not found", "pid ")
    one_clear_line(run(lat + ["--from", "a", "--to", "a", "-p", "1"]),
                   "same event", "'a'")
    one_clear_line(run(lat + ["--from", "a", "-p", "1"]), "--to")
    one_clear_line(run(lat + ["--from", "", "--to", "b", "-p", "1"]),
                   "--from", "empty")
    one_clear_line(run(lat + MARKS + ["-f", "csv", "-p", "1"]),
                   "unknown format", "csv")
    one_clear_line(run(lat + MARKS), "nothing to trace")


require_bpf()
launch("marks", MARKS, "lat_enqueue", "lat_dequeue")
launch("usdt", USDT, "lathost:enqueue,key=arg0", "lathost:dequeue,key=arg1")
with_pid("marks", MARKS, "lat_enqueue", "lat_dequeue")
with_pid("usdt", USDT, "lathost:enqueue,key=arg0", "lathost:dequeue,key=arg1")
test_wrong_key()
test_binary()
test_pending_full()
test_table()
test_output_file()
test_errors()
finish()
