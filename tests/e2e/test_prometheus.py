# SPDX-License-Identifier: MIT
"""A real Prometheus (Debian's /usr/bin/prometheus) scrapes `sptrace serve`
every second while a host runs a steady workload; PromQL over what it
stored must agree with what the host itself did, timed by its own clocks
(tests/hosts/fleet_host.c --times: clock readings on both sides of each
probe, so each query's latency as sptrace measures it lies between the
host's inner and outer latency, and its END between two realtime readings):
counters exactly; every histogram bucket between the host's counts at its
bound, through the kernel histogram's own buckets; histogram_quantile()
against Prometheus's interpolation applied to those bounds; every stored
sample of the counter against the host's count at the sample's timestamp;
rate() against the host's counts at the samples' times, through
Prometheus's extrapolation. A second
sptrace traces the same run and must agree with the host too. The process
labels: a join on sptrace_process_info (group_left) gives the host's
series the executable and title its own /proc has, and every PromQL
example of docs/fleet.md runs (its joins with the host's labels). Missing
prometheus: fails in CI, skips otherwise."""
import bisect
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from fleet_metrics import proc_facts, start_serve, stop_serve
from sptest import (SPTRACE, check, eq, finish, host_truth, require,
                    require_bpf, rows, tmpfile)

HOST = os.environ["FLEET_HOST"]
SRC = os.environ["SOURCE_ROOT"]
PROMETHEUS = "/usr/bin/prometheus"
# The fixed bounds of sptrace_query_latency_seconds (docs/fleet.md).
LADDER = [float("%de%d" % (m, e)) for e in range(-6, 1) for m in (1, 2, 5)] + [10.0]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def query(base, promql, at=None):
    args = {"query": promql}
    if at is not None:
        args["time"] = "%.3f" % at
    url = base + "/api/v1/query?" + urllib.parse.urlencode(args)
    with urllib.request.urlopen(url, timeout=30) as r:
        data = json.load(r)
    check(data.get("status") == "success", "PromQL %s: %s" % (promql,
                                                               data.get("status")))
    res = data.get("data", {}).get("result", [])
    return [float(x["value"][1]) for x in res]


def query_labeled(base, promql):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=30) as r:
        res = json.load(r).get("data", {}).get("result", [])
    return [(x["metric"], float(x["value"][1])) for x in res]


def one(base, promql, at=None):
    v = query(base, promql, at)
    check(len(v) == 1, "PromQL %s: one series (%d)" % (promql, len(v)))
    return v[0] if v else float("nan")


def series(base, promql, at):
    """The raw samples [(t seconds, value)] of a range selector."""
    url = base + "/api/v1/query?" + urllib.parse.urlencode(
        {"query": promql, "time": "%.3f" % at})
    with urllib.request.urlopen(url, timeout=30) as r:
        res = json.load(r).get("data", {}).get("result", [])
    check(len(res) == 1, "PromQL %s: one series (%d)" % (promql, len(res)))
    return [(float(t), float(v)) for t, v in res[0]["values"]] if res else []


def hist_top(ns):
    """The largest value of the kernel histogram bucket that holds `ns`
    (include/sptrace/hist.h: sp_hist_bucket_hi(sp_hist_bucket(ns)) - 1):
    exact below 32, then 32 sub-buckets per power of two."""
    if ns < 32:
        return ns
    shift = ns.bit_length() - 1 - 5
    return ((ns >> shift) << shift) + (1 << shift) - 1


def ladder_cum(tops, le):
    """How many observations userspace/out/openmetrics.c counts under `le`
    (seconds), given their kernel buckets' tops (sorted, ns): a kernel
    bucket is counted under the first bound its whole range is <= to."""
    return bisect.bisect_right(tops, round(le * 1e9))


def prom_quantile(q, cum):
    """histogram_quantile() as Prometheus 2.42 computes it (promql/
    quantile.go: bucketQuantile) from cumulative counts at LADDER + +Inf."""
    rank = q * cum[-1]
    b = next(i for i, c in enumerate(cum) if c >= rank)
    if b == len(LADDER):
        return LADDER[-1]
    start = 0.0 if b == 0 else LADDER[b - 1]
    below = 0 if b == 0 else cum[b - 1]
    return start + (LADDER[b] - start) * (rank - below) / (cum[b] - below)


def cum_choices(lo, hi):
    """Every monotonic cumulative histogram with lo[i] <= c[i] <= hi[i],
    taking each bucket's count at one of its two ends (prom_quantile never
    grows with a cumulative count, so lo and hi themselves, both among
    these, give its extremes; the rest cost nothing with few bounds that
    differ)."""
    diff = [i for i in range(len(lo)) if lo[i] != hi[i]]
    if len(diff) > 10:
        return [list(lo), list(hi)]
    out = []
    for mask in range(1 << len(diff)):
        c = list(hi)
        for k, i in enumerate(diff):
            if mask >> k & 1:
                c[i] = lo[i]
        if all(a <= b for a, b in zip(c, c[1:])):
            out.append(c)
    return out


def prom_rate(samples, t_eval, rng, inc, first_v=None):
    """rate() as Prometheus 2.42 extrapolates it (promql/functions.go:
    extrapolatedRate) for a counter whose samples in (t_eval - rng, t_eval]
    are at `samples` times and which grew by `inc` between the first and
    the last of them, from `first_v` (default: the first sample's value)."""
    ts = [t for t, _ in samples if t_eval - rng <= t <= t_eval]
    if first_v is None:
        first_v = [v for t, v in samples if t == ts[0]][0]
    sampled = ts[-1] - ts[0]
    avg = sampled / (len(ts) - 1)
    to_start, to_end = ts[0] - (t_eval - rng), t_eval - ts[-1]
    if inc > 0 and first_v >= 0:
        to_start = min(to_start, sampled * (first_v / inc))
    interval = sampled
    interval += to_start if to_start < avg * 1.1 else avg / 2
    interval += to_end if to_end < avg * 1.1 else avg / 2
    return inc * (interval / sampled) / rng


def check_join(base, sel, pid, facts, n):
    eq(facts["binary"], os.path.realpath(HOST), "the host's /proc/PID/exe "
       "is its path")
    got = query_labeled(base, "sptrace_query_invocations_total%s" % sel)
    eq([sorted(k for k in m if k not in ("job", "instance", "__name__"))
        for m, v in got], [["comm", "pid", "query"]],
       "Prometheus: the series' labels are query, pid, comm")
    got = query_labeled(base, "sptrace_query_invocations_total%s * on(instance,"
                        " pid) group_left(binary, title) sptrace_process_info"
                        % sel)
    eq([(m.get("pid"), m.get("comm"), m.get("binary"), m.get("title"), v)
        for m, v in got],
       [(str(pid), facts["comm"], facts["binary"], facts["title"], float(n))],
       "Prometheus: group_left(binary, title) gives the host's series its "
       "executable and title (its /proc: %r)" % facts)
    got = query_labeled(base, 'sum by (binary) (sptrace_query_invocations_'
                        'total{job="sptrace",query="q00000"} * on(instance, '
                        'pid) group_left(binary) sptrace_process_info)')
    eq(got, [({"binary": facts["binary"]}, float(n))],
       "Prometheus: sum by (binary) through the join")


def doc_queries():
    """The PromQL examples of docs/fleet.md's ```promql blocks: one per
    run of lines between comments and blank lines."""
    with open(os.path.join(SRC, "docs", "fleet.md")) as f:
        text = f.read()
    out = []
    for block in re.findall(r"^ *```promql\n(.*?)^ *```", text, re.M | re.S):
        cur = []
        for line in block.split("\n") + [""]:
            if line.strip() and not line.lstrip().startswith("#"):
                cur.append(line.strip())
            elif cur:
                out.append(" ".join(cur))
                cur = []
    return out


def check_doc_examples(base, facts):
    """Each example as written (the placeholder executable is the host's):
    Prometheus runs it, with a result unless it is an alert (`> 0`); one
    that names binary or title takes them from sptrace_process_info (the
    series have neither), and gets the host's values."""
    qs = doc_queries()
    check(len(qs) >= 11, "docs/fleet.md: the PromQL examples found (%d)"
          % len(qs))
    for q in qs:
        q = q.replace("/usr/bin/myserver", facts["binary"])
        url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                data = json.load(r)
        except urllib.error.HTTPError as e:
            data = {"status": "error", "error": e.read().decode()[:300]}
        if not eq(data.get("status"), "success",
                  "docs example runs: %s (%s)" % (q, data.get("error"))):
            continue
        # A join finds the host (a selector on its binary too), and a
        # label it keeps is the host's.
        res = data["data"]["result"]
        check(res or "> 0" in q, "docs example %s: a result" % q)
        check("group_left" in q or not re.search(r"\b(binary|title)\b", q),
              "docs example %s: binary and title through the join" % q)
        for lab in re.findall(r"group_left\((\w+)\)", q):
            check(res and all(x["metric"].get(lab, facts[lab]) == facts[lab]
                              for x in res),
                  "docs example %s: found, %s the host's %r (%r)" %
                  (q, lab, facts[lab], [x["metric"] for x in res][:3]))


def run_test(tmp):
    serve, url = start_serve(["-b", HOST])
    if not url:
        stop_serve(serve)
        return
    summary = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-f", "json", "-o", summary, "-b",
                               HOST], stderr=subprocess.PIPE, text=True)
    check("tracing" in tracer.stderr.readline(), "second sptrace armed")
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: sptrace\n"
                "    static_configs:\n      - targets: ['%s']\n" %
                url.split("//")[1])
    prom = subprocess.Popen([PROMETHEUS, "--config.file=" + cfg,
                             "--storage.tsdb.path=" + os.path.join(tmp, "db"),
                             "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "prom.log"), "w"))
    host = None
    try:
        # Prometheus up and scraping sptrace.
        end = time.time() + 60
        up = []
        while time.time() < end:
            try:
                up = query(base, 'up{job="sptrace"}')
                if up == [1.0]:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        if not eq(up, [1.0], "prometheus scrapes sptrace serve"):
            print(open(os.path.join(tmp, "prom.log")).read()[-2000:])
            return
        # The workload: q00000 takes 300 us, and 3 ms every 20th round
        # (5%: its p99 is a slow one, its p50 a fast one); both well inside
        # a ladder bucket, (2e-4, 5e-4] and (2e-3, 5e-3].
        times = os.path.join(tmp, "times")
        t0 = time.time()
        host = subprocess.Popen([HOST, "--names", "2", "--pause-ms", "5",
                                 "--spin-us", "300", "--slow-every", "20",
                                 "--slow-us", "3000", "--times", times],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(1)
        facts = proc_facts(host.pid)    # its own labels, while it runs
        time.sleep(9)
        host.send_signal(signal.SIGTERM)
        truth = host_truth(host.communicate(timeout=30)[0])
        t1 = time.time()
        time.sleep(6)       # the last values scraped, several times
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
        with open(summary) as f:
            own = rows(json.load(f))["q00000"]
        os.unlink(summary)
        # Each query: its latency inside the probes and outside them (ns),
        # and the realtime (s) just before and just after its END probe.
        with open(times) as f:
            recs = [(int(a), int(b), int(c) / 1e9, int(d) / 1e9)
                    for a, b, c, d in (line.split() for line in f)]
        pre_end = [r[2] for r in recs]              # sorted: one thread
        post_end = [r[3] for r in recs]
        # sptrace's BEGIN-to-END time is in [inner, outer]; the kernel
        # bucket's top is monotonic in it.
        top_in = sorted(hist_top(r[0]) for r in recs)
        top_out = sorted(hist_top(r[1]) for r in recs)
        print("note: outer - inner latency: max %.1f us, %d of %d over 10 us"
              % (max((r[1] - r[0] for r in recs), default=0) / 1e3,
                 sum(r[1] - r[0] > 10000 for r in recs), len(recs)))
        n = truth["invocations_per_name"]
        eq(len(recs), n, "the host timed each of its %d queries" % n)
        eq(own["count"], n, "second sptrace's JSON: count is the host's")

        sel = '{job="sptrace",query="q00000",pid="%d"}' % host.pid
        eq(one(base, "sptrace_query_invocations_total" + sel), float(n),
           "Prometheus: invocations counter == the host's count")
        eq(one(base, "sptrace_query_cache_hits_total" + sel), float(n),
           "Prometheus: cache hits counter == the host's")
        eq(one(base, "sptrace_query_latency_seconds_count" + sel), float(n),
           "Prometheus: histogram _count == the host's count")
        # Every bucket against the host's own latencies. sptrace's interval
        # lies between the host's inner and outer readings, and a query is
        # counted under a bound when its kernel bucket's top is <= the
        # bound: at each bound the count is at least the host's count of
        # outer latencies so counted, at most that of inner ones.
        got = {}
        for labels, v in query_labeled(
                base, "sptrace_query_latency_seconds_bucket" + sel):
            got[float(labels["le"])] = v
        eq(sorted(got), sorted(LADDER + [float("inf")]),
           "Prometheus: every ladder bucket stored")
        cum_hi = [ladder_cum(top_in, le) for le in LADDER] + [n]
        cum_lo = [ladder_cum(top_out, le) for le in LADDER] + [n]
        bad = [(le, got.get(le), lo, hi) for le, lo, hi in
               zip(LADDER + [float("inf")], cum_lo, cum_hi)
               if not lo <= got.get(le, -1) <= hi]
        check(not bad, "Prometheus: each of the %d buckets within the host's "
              "count at its bound (misses: %r; host %r)" % (
                  len(got), bad, list(zip(LADDER, cum_hi))[6:13]))
        # Quantiles: Prometheus's interpolation applied to the host's own
        # buckets gives the answer, to float precision (a range, over the
        # counts each bucket may have, when a query's inner and outer
        # latencies fall under different bounds).
        for q in (0.99, 0.5):
            v = one(base, "histogram_quantile(%s, sptrace_query_latency_"
                          "seconds_bucket%s)" % (q, sel))
            est = [prom_quantile(q, c) for c in cum_choices(cum_lo, cum_hi)]
            a, b = min(est), max(est)
            check(a - 1e-12 <= v <= b + 1e-12, "histogram_quantile(%s) = "
                  "%.6gs, from the host's buckets [%.6g, %.6g]" % (q, v, a, b))
        # Every stored sample of the counter against the host's count at
        # the sample's timestamp. Prometheus stamps a sample as it starts
        # the scrape; serve then reads its maps (its 0.5 s render cache is
        # stale at a 1 s scrape interval) between the timestamp and 150 ms
        # later (the request's latency on a loaded machine): the count is
        # at least the queries whose END the host saw done by the
        # timestamp, at most those it was about to END by 150 ms later.
        def count_lo(t):
            return bisect.bisect_right(post_end, t)

        def count_hi(t):
            return bisect.bisect_right(pre_end, t + 0.15)
        samples = series(base, "sptrace_query_invocations_total%s[60s]" % sel,
                         t1 + 5)
        off = [(t, v, count_lo(t), count_hi(t)) for t, v in samples
               if not count_lo(t) <= v <= count_hi(t)]
        lags = [next((x / 1000.0 for x in range(-10, 1000)
                      if bisect.bisect_right(pre_end, t + x / 1000.0) >= v),
                     None)
                for t, v in samples]
        print("note: each sample's count reached by the host within %r s of "
              "its timestamp" % sorted(set(lags)))
        check(len(samples) >= 10 and not off, "Prometheus: each of %d "
              "samples is the host's count at its timestamp (off: %r)" %
              (len(samples), off[:5]))
        # rate() mid-run: Prometheus's extrapolation of the counter's growth
        # between the window's first and last samples; that growth lies
        # between the host's counts at those times (same bounds as above).
        mid = (t0 + t1) / 2 + 2
        r = one(base, "rate(sptrace_query_invocations_total%s[4s])" % sel,
                at=mid)
        ts = [t for t, _ in samples if mid - 4 <= t <= mid]
        if check(len(ts) >= 2, "rate(): %d samples in the window" % len(ts)):
            inc_lo = count_lo(ts[-1]) - count_hi(ts[0])
            inc_hi = count_hi(ts[-1]) - count_lo(ts[0])
            lo = prom_rate(samples, mid, 4.0, max(inc_lo, 0))
            hi = prom_rate(samples, mid, 4.0, inc_hi)
            check(lo - 1e-9 <= r <= hi + 1e-9, "rate() mid-run %.2f/s from "
                  "the host's counts: [%.2f, %.2f] (%.1f%% wide)" %
                  (r, lo, hi, 100.0 * (hi - lo) / r if r else 0))
        # The usual form, over a rate: histogram_quantile(0.99) of each
        # bucket's rate() over the window. All bucket series share their
        # sample times, so rate() scales each one's growth between the
        # window's first and last samples by the same factor, unless its
        # extrapolation toward the start is cut short where the series
        # would reach zero; it cannot be, below, for any bucket that has
        # enough before the window (checked, from the host's counts). The
        # 0.99 rank then falls in the first bucket whose growth is at
        # least 99 times the growth of the queries above it. At each
        # sample, each of serve's kernel buckets is read between the
        # timestamp and 150 ms later: the queries under a bound are at
        # least those the host saw END by then with outer latency under
        # it, at most those it was about to END with inner latency under
        # it; the queries above it likewise, swapping inner and outer.
        ts = [t for t, _ in samples if mid - 4 <= t <= mid]
        v = one(base, "histogram_quantile(0.99, rate(sptrace_query_latency_"
                      "seconds_bucket%s[4s]))" % sel, at=mid)
        if len(ts) >= 2:
            def counted(t, b, under):
                """Queries under (or above) bound b at a sample at t."""
                sure, maybe = (1, 0) if under else (0, 1)
                return (sum(1 for r in recs if r[3] <= t and
                            (hist_top(r[sure]) <= b) == under),
                        sum(1 for r in recs if r[2] <= t + 0.15 and
                            (hist_top(r[maybe]) <= b) == under))
            to_start, sampled = ts[0] - (mid - 4), ts[-1] - ts[0]
            can, must, cut = [], [], []
            for le in LADDER:
                b = round(le * 1e9)
                (blo0, bhi0), (blo1, bhi1) = [counted(t, b, True)
                                              for t in (ts[0], ts[-1])]
                (alo0, ahi0), (alo1, ahi1) = [counted(t, b, False)
                                              for t in (ts[0], ts[-1])]
                grow_lo, grow_hi = max(blo1 - bhi0, 0), bhi1 - blo0
                above_lo, above_hi = max(alo1 - ahi0, 0), ahi1 - alo0
                if grow_hi > 0 and blo0 * sampled < to_start * grow_hi:
                    cut.append(le)
                can.append(grow_hi >= 99 * above_lo)
                must.append(grow_lo > 99 * above_hi)
            # +Inf: its growth is that of every query.
            if count_lo(ts[0]) * sampled < to_start * (
                    count_hi(ts[-1]) - count_lo(ts[0])):
                cut.append(float("inf"))
            first = next((i for i, c in enumerate(can) if c), len(LADDER) - 1)
            last = next((i for i, m in enumerate(must) if m), len(LADDER) - 1)
            low = LADDER[first - 1] if first else 0.0
            check(not cut, "rate() window: no bucket's extrapolation cut at "
                  "zero (%r)" % cut)
            check(low < v <= LADDER[last], "histogram_quantile(0.99, "
                  "rate(..[4s])) mid-run = %.6gs, in the host's ladder "
                  "buckets (%g, %g]" % (v, low, LADDER[last]))
        # After the run the counter is flat: rate 0.
        eq(one(base, "rate(sptrace_query_invocations_total%s[4s])" % sel), 0.0,
           "rate() after the run is 0")
        # The process labels: binary and title from sptrace_process_info,
        # joined on the pid, are the host's own; the series alone carry
        # query, pid and comm.
        check_join(base, sel, host.pid, facts, n)
        check_doc_examples(base, facts)
        # Health metrics made it too.
        eq(query(base, 'sptrace_lost_events_total{job="sptrace"}'), [0.0],
           "Prometheus: lost events 0")
        eq(query(base, 'sptrace_map_full_total{job="sptrace"}'), [0.0],
           "Prometheus: map full 0")
    finally:
        if host and host.poll() is None:
            host.kill()
            host.wait()
        if tracer.poll() is None:
            tracer.kill()
            tracer.wait()
        prom.send_signal(signal.SIGTERM)
        try:
            prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        eq(stop_serve(serve), 0, "serve exits 0")


require_bpf()
require(os.access(PROMETHEUS, os.X_OK),
        "%s (apt-get install prometheus)" % PROMETHEUS)
tmp = tempfile.mkdtemp(prefix="sptest-prom-")
try:
    run_test(tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
