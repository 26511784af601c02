# SPDX-License-Identifier: MIT
"""sptrace's estimate of its own cost (issue 27; docs/numbers.md,
"Overhead") against the cost a host measures.

tests/hosts/rate_host runs work items of ITERS rounds of arithmetic, one
query pair each, and prints its items per second of its own CPU time.
Untraced and traced runs alternate (OVERHEAD_ROUNDS pairs, default 3) at
three event rates, batched and per-event (SPTRACE_PER_EVENT=1). The host's
loss, 1 - traced/untraced throughput, is the share of its CPU the probes
took; sptrace's JSON "overhead.share" must be within a factor of
OVERHEAD_FACTOR of it where the loss is large enough to measure (>= 5%),
within 3 percentage points (the noise of a throughput here) where it is
not. The issue's target is 1.5x, which bench/run_overhead_bench.sh checks
over 5 rounds; this test's default, 2x, leaves room for a loaded machine
(per-event runs have measured 1.01-1.41x here) and still fails an
estimate that prices a kind of hit wrong (a --func entry priced as
emulated where the kernel single-steps it was 4x under). The hits must be the host's own count of events
(exact), the CPU window its own CPU time (within the 10 ms of a clock
tick, plus start-up), and -p's window only the traced part of a process
that ran before. With --max-overhead 2 at high rates the host's loss, once
settled, stays within OVERHEAD_BUDGET_MARGIN points of the budget (the
issue's 2 in the bench; 5 by default, for a shared machine), and the scaled counts are
within their stated bound of the host's; under budget nothing is sampled
and counts are exact. bench/run_overhead_bench.sh runs this with more
rounds and prints the same table."""
import os
import re
import statistics
import subprocess
import time

from sptest import (SPTRACE, check, eq, finish, require_bpf, run,
                    trace_json)

HOST = os.environ["RATE_HOST"]
ROUNDS = int(os.environ.get("OVERHEAD_ROUNDS", "3"))
SECONDS = os.environ.get("OVERHEAD_SECONDS", "1.5")
FACTOR = float(os.environ.get("OVERHEAD_FACTOR", "2"))
# Points of settled loss allowed over a --max-overhead budget. The issue's
# target is 2 (bench/run_overhead_bench.sh); one traced run against two
# untraced ones moves by more when other work shares the machine (a
# neighbour test gave 4.72% at a 2% budget, the 1-in-64 sampling
# unchanged), and a budget not kept loses 8-89% here, so 5 still fails it.
BUDGET_MARGIN = float(os.environ.get("OVERHEAD_BUDGET_MARGIN", "5"))
# Work rounds per item: ~0.2, 2 and 20 us of work per query pair.
RATES = [("high", 200), ("medium", 2000), ("low", 20000)]


def host_done(out):
    m = re.search(r"^done items=(\d+) cpu_ns=(\d+) wall_ns=(\d+) "
                  r"per_cpu_s=([0-9.]+)$", out, re.M)
    check(m is not None, "rate_host printed its result: %r" % out[-200:])
    return {"items": int(m.group(1)), "cpu_ns": int(m.group(2)),
            "rate": float(m.group(4))} if m else None


def untraced(iters):
    p = run([HOST, str(iters), SECONDS])
    eq(p.returncode, 0, "untraced rate_host %d exits 0" % iters)
    return host_done(p.stdout)


def per_event_mode(on):
    """SPTRACE_PER_EVENT for the sptrace runs that follow."""
    os.environ.pop("SPTRACE_PER_EVENT", None)
    if on:
        os.environ["SPTRACE_PER_EVENT"] = "1"


def traced(iters, per_event):
    per_event_mode(per_event)
    p, data = trace_json(["--", HOST, str(iters), SECONDS])
    eq(p.returncode, 0, "sptrace -- rate_host %d exits 0 (%s)" %
       (iters, p.stderr[-300:]))
    return host_done(p.stdout), data


def check_run(label, per_event, h, data):
    """The figures of one traced run against the host's own."""
    o = data.get("overhead") if data else None
    check(o is not None, "%s: JSON has \"overhead\"" % label)
    if not o or not h:
        return None
    eq(len(o["processes"]), 1, "%s: one process costed" % label)
    pr = o["processes"][0]
    hits = pr["hits"]
    pairs = 2 * h["items"]
    if per_event:
        eq(hits["event"], pairs, "%s: per-event hits = the host's events"
           % label)
        eq(hits["record"] + hits["flush"], 0, "%s: no batched hits" % label)
    else:
        eq(hits["event"], 0, "%s: no per-event hits" % label)
        # Every record is an event, or the PAUSE record of a flush.
        check(pairs + hits["flush"] - 1 <= hits["record"] <=
              pairs + hits["flush"],
              "%s: records %d = events %d + a PAUSE per flush (%d)" %
              (label, hits["record"], pairs, hits["flush"]))
        check(hits["flush"] >= pairs // 256,
              "%s: %d flushes for %d events (a ring holds 256)" %
              (label, hits["flush"], pairs))
    # The launched command's window is its whole life, by wait4().
    cpu = pr["window_cpu_ns"]
    check(h["cpu_ns"] <= cpu <= h["cpu_ns"] + 60e6,
          "%s: CPU window %.1f ms, the host's own loop %.1f ms" %
          (label, cpu / 1e6, h["cpu_ns"] / 1e6))
    check(0 < o["share"] <= 1, "%s: share %.4f in (0, 1]" %
          (label, o["share"]))
    for k in ("event", "flush", "record", "spec", "func"):
        check(o["unit_ns"][k] > 0, "%s: unit_ns.%s %.1f > 0" %
              (label, k, o["unit_ns"][k]))
    check(o["bpf_timed"], "%s: the kernel's BPF run times were read" % label)
    return o["share"]


def rate_case(mode, name, iters):
    per_event = mode == "per-event"
    base, rates, shares = [], [], []
    for i in range(ROUNDS):
        u = untraced(iters)
        h, data = traced(iters, per_event)
        if u:
            base.append(u["rate"])
        if h:
            rates.append(h["rate"])
        s = check_run("%s %s round %d" % (mode, name, i + 1), per_event, h,
                      data)
        if s is not None:
            shares.append(s)
    if not (base and rates and shares):
        return
    loss = 1 - statistics.median(rates) / statistics.median(base)
    est = statistics.median(shares)
    ratio = est / loss if loss > 0 else float("inf")
    print("RESULT %-9s %-6s items/cpu-s untraced %10.0f traced %10.0f "
          "loss %6.2f%% estimate %6.2f%% ratio %.2f" %
          (mode, name, statistics.median(base), statistics.median(rates),
           100 * loss, 100 * est, ratio))
    if loss >= 0.05:
        check(1 / FACTOR <= ratio <= FACTOR,
              "%s %s: estimate %.2f%% within %.2gx of the host's loss %.2f%%"
              % (mode, name, 100 * est, FACTOR, 100 * loss))
    else:
        # Run-to-run noise of a throughput here is 1-3%.
        check(abs(est - loss) <= 0.03,
              "%s %s: estimate %.2f%% within 3 points of the host's loss "
              "%.2f%%" % (mode, name, 100 * est, 100 * loss))


def func_case():
    """--func on rate_func, whose first instruction (lea) the kernel
    single-steps: its entries count as func_step hits, its returns as func
    hits, one each a call, and the estimate, at the dearer price, is within
    FACTOR of the host's loss (priced as an emulated entry, it was 4x
    under)."""
    per_event_mode(False)
    base, rates, shares = [], [], []
    for i in range(ROUNDS):
        u = run([HOST, "20000", SECONDS, "func"])
        u = host_done(u.stdout)
        p, data = trace_json(["--func", "rate_func", "--", HOST, "20000",
                              SECONDS, "func"])
        eq(p.returncode, 0, "--func round %d exits 0 (%s)" % (
            i + 1, p.stderr[-300:]))
        h = host_done(p.stdout)
        o = data.get("overhead") if data else None
        if not (u and h and o):
            check(False, "--func round %d: host results and overhead" % (i + 1))
            continue
        hits = o["processes"][0]["hits"]
        eq((hits["func_step"], hits["func"]), (h["items"], h["items"]),
           "--func round %d: an entry single-stepped and a return a call"
           % (i + 1))
        base.append(u["rate"])
        rates.append(h["rate"])
        shares.append(o["share"])
    if not (base and rates and shares):
        return
    loss = 1 - statistics.median(rates) / statistics.median(base)
    est = statistics.median(shares)
    print("RESULT --func    lea    items/cpu-s untraced %10.0f traced %10.0f "
          "loss %6.2f%% estimate %6.2f%% ratio %.2f" %
          (statistics.median(base), statistics.median(rates), 100 * loss,
           100 * est, est / loss if loss > 0 else float("inf")))
    check(loss >= 0.05 and 1 / FACTOR <= est / loss <= FACTOR,
          "--func: estimate %.2f%% within %.2gx of the host's loss %.2f%%"
          % (100 * est, FACTOR, 100 * loss))


def pid_window():
    """-p: a process that ran untraced first; its window is the traced
    part only, its share over that part."""
    host = subprocess.Popen([HOST, "2000", "6"], stdout=subprocess.PIPE,
                            text=True)
    try:
        time.sleep(1.0)
        per_event_mode(False)
        p, data = trace_json(["-p", str(host.pid), "-d", "1.5"])
        eq(p.returncode, 0, "-p: sptrace exits 0 (%s)" % p.stderr[-300:])
        o = data.get("overhead") if data else None
        check(o is not None, "-p: JSON has \"overhead\"")
        if o:
            pr = o["processes"][0]
            eq(pr["pid"], host.pid, "-p: the process costed is the target")
            # At most the traced time (one CPU), not the second before.
            check(0.3e9 < pr["window_cpu_ns"] <=
                  data["duration_ns"] + 0.6e9,
                  "-p: CPU window %.0f ms, traced for %.0f ms" %
                  (pr["window_cpu_ns"] / 1e6, data["duration_ns"] / 1e6))
            check(0 < pr["share"] < 0.5, "-p: share %.4f" % pr["share"])
    finally:
        host.kill()
        host.communicate()


def steady_rate(out, after=2.0):
    """Items per CPU second from the host's ticks after `after` seconds
    (each tick: 100 ms), when --max-overhead has settled."""
    ticks = [tuple(map(int, l.split()[1:3])) for l in out.splitlines()
             if l.startswith("tick ")]
    first = int(after * 10)
    if len(ticks) <= first + 5:
        return None
    (i0, c0), (i1, c1) = ticks[first], ticks[-1]
    return (i1 - i0) * 1e9 / (c1 - c0) if c1 > c0 else None


def budget_case(mode, iters, budget):
    """--max-overhead: the host's loss once settled stays within
    BUDGET_MARGIN points of the budget; the sampled counts, scaled, are within their stated
    bound of the host's; every sampled figure is marked."""
    per_event_mode(mode == "per-event")
    label = "%s --max-overhead %g" % (mode, budget)
    before = steady_rate(run([HOST, str(iters), "6"]).stdout)
    p, data = trace_json(["--max-overhead", str(budget), "--", HOST,
                          str(iters), "6"])
    after = steady_rate(run([HOST, str(iters), "6"]).stdout)
    eq(p.returncode, 0, "%s: exits 0 (%s)" % (label, p.stderr[-300:]))
    h = host_done(p.stdout)
    # Untraced: the mean of a run before and one after (the noise of one
    # throughput here is 1-3%).
    u = (before + after) / 2 if before and after else None
    t = steady_rate(p.stdout)
    if not (h and data and u and t):
        check(False, "%s: host ticks and JSON" % label)
        return
    loss = 1 - t / u
    print("RESULT %-9s budget %g%%: settled loss %.2f%% (items/cpu-s %.0f "
          "vs %.0f untraced)" % (mode, budget, 100 * loss, t, u))
    check(loss <= (budget + BUDGET_MARGIN) / 100,
          "%s: settled loss %.2f%% within %g points of the budget"
          % (label, 100 * loss, BUDGET_MARGIN))
    smp = data.get("sampling")
    check(smp is not None and smp["processes"][0]["every"] > 1,
          "%s: the process was sampled: %r" % (label, smp))
    q = data["queries"][0]
    check(q.get("estimate") is True, "%s: its row is marked an estimate"
          % label)
    err = q.get("error", 0)
    off = abs(q["count"] - h["items"]) / h["items"]
    print("RESULT %-9s budget %g%%: count %d, host %d: off %.1f%%, stated "
          "bound %.1f%%" % (mode, budget, q["count"], h["items"], 100 * off,
                            100 * err))
    check(off <= err, "%s: scaled count %d within its bound %.1f%% of the "
          "host's %d (off %.1f%%)" % (label, q["count"], 100 * err,
                                      h["items"], 100 * off))
    eq(data["errors"]["unbalanced"], 0,
       "%s: window edges are cuts, not unbalanced pairs" % label)


def budget_unused():
    """A budget the process stays under: no sampling, exact counts."""
    per_event_mode(False)
    p, data = trace_json(["--max-overhead", "20", "--", HOST, "20000", "2"])
    h = host_done(p.stdout)
    if not (h and data):
        return
    check("sampling" not in data, "under budget: not sampled")
    q = data["queries"][0]
    eq(q["count"], h["items"], "under budget: the count is exact")
    check("estimate" not in q, "under budget: no estimate mark")


def budget_funcs():
    """THE ORDER (userspace/live/sampler.c): --func probes are shed first.
    rate_host calls rate_func once per item; at 60,000 rounds an item its
    --func probes cost 16-20% here, its batched sp pair 0.4-0.9% (in 250 ms
    readings; 4 of about 85 runs read 1.7% once): with a budget of 4%
    (sampling above 3.2%) the --func links are detached (and tried again
    after 2 s, and shed again), the sp probes are never sampled. At 2%
    (sampling above 1.6%) such a reading had them sampled for 250 ms. The item row stays
    exact; the rate_func row is scaled by the share of work traced with
    the --func probes on, marked, and within its stated bound of the
    host's count."""
    per_event_mode(False)
    label = "--func --max-overhead 4"
    p, data = trace_json(["--max-overhead", "4", "--func", "rate_func", "-v",
                          "--", HOST, "60000", "6", "func"])
    eq(p.returncode, 0, "%s: exits 0 (%s)" % (label, p.stderr[-300:]))
    h = host_done(p.stdout)
    if not (h and data):
        check(False, "%s: host result and JSON" % label)
        return
    check("--func probes shed first" in p.stderr and
          "--func probes detached" in p.stderr,
          "%s: -v says the --func probes were shed, and why" % label)
    check("--func probes attached again" in p.stderr,
          "%s: tried again after their wait" % label)
    procs = (data.get("sampling") or {}).get("processes") or [{}]
    ft = procs[0].get("func_traced", 1)
    check(0 < ft < 1 and procs[0].get("traced") == 1,
          "%s: --func traced for part of the work, sp probes in full: %r"
          % (label, procs))
    rows = {q["name"]: q for q in data["queries"]}
    item, fn = rows.get("item"), rows.get("rate_func")
    if not (item and fn):
        check(False, "%s: item and rate_func rows: %r" % (label, list(rows)))
        return
    eq(item["count"], h["items"], "%s: the sp row is exact" % label)
    check("estimate" not in item, "%s: the sp row is not marked" % label)
    check(fn.get("estimate") is True, "%s: the --func row is marked an "
          "estimate" % label)
    err = fn.get("error", 0)
    off = abs(fn["count"] - h["items"]) / h["items"]
    print("RESULT --func budget 4%%: traced %.1f%% of the work with --func "
          "on; count %d, host %d: off %.1f%%, stated bound %.1f%%" % (
              100 * ft, fn["count"], h["items"], 100 * off, 100 * err))
    check(off <= err, "%s: scaled --func count %d within its bound %.1f%% "
          "of the host's %d (off %.1f%%)" % (label, fn["count"], 100 * err,
                                             h["items"], 100 * off))


def budget_table():
    """The table marks the scaled sums with "~" and says why."""
    per_event_mode(False)
    p = run([SPTRACE, "--max-overhead", "2", "--", HOST, "200", "3"])
    eq(p.returncode, 0, "--max-overhead table exits 0")
    row = [l for l in p.stdout.splitlines() if l.startswith("| item ")]
    check(row and "| ~" in row[0], "scaled sums marked '~': %r" % row)
    check(re.search(r"^~ estimates: --max-overhead traced 1 process in "
                    r"sampled windows", p.stdout, re.M) is not None,
          "the footer says which figures are estimates")
    bad = run([SPTRACE, "--max-overhead", "0", "--", HOST, "200", "1"])
    check(bad.returncode != 0 and "invalid --max-overhead" in bad.stderr,
          "--max-overhead 0 refused: %r" % bad.stderr[-200:])
    bad = run([SPTRACE, "record", "--max-overhead", "2", "-o",
               "/tmp/never.spt", "--", HOST, "200", "1"])
    check(bad.returncode != 0 and "not with record" in bad.stderr,
          "record --max-overhead refused: %r" % bad.stderr[-200:])


def table_footer():
    p = run([SPTRACE, "--", HOST, "2000", "0.5"])
    eq(p.returncode, 0, "table run exits 0")
    check(re.search(r"^sptrace's probes: est\. [0-9.]+% of the traced "
                    r"process's CPU time \(pid \d+: ", p.stdout, re.M)
          is not None, "the table's footer says the cost: %r" %
          p.stdout[-400:])


def main():
    require_bpf()
    table_footer()
    pid_window()
    for mode in ("batched", "per-event"):
        for name, iters in RATES:
            rate_case(mode, name, iters)
    func_case()
    budget_unused()
    budget_funcs()
    budget_table()
    for mode in ("batched", "per-event"):
        budget_case(mode, 200, 2)
        budget_case(mode, 2000, 2)
    finish()


main()
