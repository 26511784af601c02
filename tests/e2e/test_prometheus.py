# SPDX-License-Identifier: MIT
"""A real Prometheus (Debian's /usr/bin/prometheus) scrapes `sptrace serve`
every second while a host runs a steady workload; PromQL over what it
stored must agree with what the host itself did, timed by its own clocks
(tests/hosts/fleet_host.c --times: each query's latency and the realtime
of its end): counters exactly; every histogram bucket against the host's
own latencies; histogram_quantile() against Prometheus's interpolation
applied to the host's buckets; every stored sample of the counter against
the host's count at the sample's timestamp; rate() against the host's
counts at the samples' times, through Prometheus's extrapolation. A second
sptrace traces the same run and must agree with the host too. Missing
prometheus: fails in CI, skips otherwise."""
import bisect
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from fleet_metrics import start_serve, stop_serve
from sptest import (SPTRACE, check, eq, finish, host_truth, require,
                    require_bpf, rows, tmpfile)

HOST = os.environ["FLEET_HOST"]
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


def host_cum(lat, le, slack=1.0):
    """How many of the host's latencies (sorted, seconds) are <= le/slack."""
    return bisect.bisect_right(lat, le / slack)


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
    taking each bucket's count at one of its two ends."""
    diff = [i for i in range(len(lo)) if lo[i] != hi[i]][:8]
    out = []
    for mask in range(1 << len(diff)):
        c = list(hi)
        for k, i in enumerate(diff):
            if mask >> k & 1:
                c[i] = lo[i]
        if all(a <= b for a, b in zip(c, c[1:])):
            out.append(c)
    return out


def prom_rate(samples, t_eval, rng, inc):
    """rate() as Prometheus 2.42 extrapolates it (promql/functions.go:
    extrapolatedRate) for a counter whose samples in (t_eval - rng, t_eval]
    are at `samples` times and which grew by `inc` between the first and
    the last of them."""
    ts = [t for t, _ in samples if t_eval - rng <= t <= t_eval]
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
        time.sleep(10)
        host.send_signal(signal.SIGTERM)
        truth = host_truth(host.communicate(timeout=30)[0])
        t1 = time.time()
        time.sleep(6)       # the last values scraped, several times
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
        with open(summary) as f:
            own = rows(json.load(f))["q00000"]
        os.unlink(summary)
        with open(times) as f:
            recs = [tuple(int(x) for x in line.split()) for line in f]
        ends = [e / 1e9 for e, _ in recs]           # sorted: one thread
        lat = sorted(d / 1e9 for _, d in recs)
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
        # encloses the host's clock readings, so it never counts a query
        # under a lower bound than the host's latency: at each bound its
        # count is at most the host's. It may be lower by the queries the
        # host timed just below the bound: a kernel bucket (3%) straddling
        # a bound is counted under the bound above, and a preemption
        # between a probe and the host's clock read lengthens sptrace's
        # interval. Undisturbed queries (300 us, 3 ms) are 37% or more from
        # every bound; the few within 25% below one were disturbed.
        got = {}
        for labels, v in query_labeled(
                base, "sptrace_query_latency_seconds_bucket" + sel):
            got[float(labels["le"])] = v
        eq(sorted(got), sorted(LADDER + [float("inf")]),
           "Prometheus: every ladder bucket stored")
        cum_hi = [host_cum(lat, le) for le in LADDER] + [n]
        cum_lo = [host_cum(lat, le, 1.25) for le in LADDER] + [n]
        bad = [(le, got.get(le), lo, hi) for le, lo, hi in
               zip(LADDER + [float("inf")], cum_lo, cum_hi)
               if not lo <= got.get(le, -1) <= hi]
        check(not bad, "Prometheus: each of the %d buckets within the host's "
              "count at its bound (misses: %r; host %r)" % (
                  len(got), bad, list(zip(LADDER, cum_hi))[6:13]))
        # Quantiles: Prometheus's interpolation applied to the host's own
        # buckets gives the answer, to float precision (a range, over the
        # counts each bucket may have, when a disturbed query sat near a
        # bound).
        for q in (0.99, 0.5):
            v = one(base, "histogram_quantile(%s, sptrace_query_latency_"
                          "seconds_bucket%s)" % (q, sel))
            est = [prom_quantile(q, c) for c in cum_choices(cum_lo, cum_hi)]
            a, b = min(est), max(est)
            check(a - 1e-12 <= v <= b + 1e-12, "histogram_quantile(%s) = "
                  "%.6gs, from the host's buckets [%.6g, %.6g]" % (q, v, a, b))
        # The usual form, over a rate: a window's p99 is a slow query, in
        # the ladder bucket of the host's own p99 of that window.
        mid = (t0 + t1) / 2 + 2
        win = sorted(d / 1e9 for e, d in recs if mid - 4 < e / 1e9 <= mid)
        x = win[int(0.99 * len(win))] if win else 0.0
        i = bisect.bisect_left(LADDER, x)
        v = one(base, "histogram_quantile(0.99, rate(sptrace_query_latency_"
                      "seconds_bucket%s[4s]))" % sel, at=mid)
        check(win and LADDER[i - 1] < v <= LADDER[i],
              "histogram_quantile(0.99, rate(..[4s])) mid-run = %.6gs in the "
              "bucket of the host's p99 %.6gs" % (v, x))
        # Every stored sample of the counter against the host's count at
        # the sample's timestamp. Prometheus stamps a sample as it starts
        # the scrape; serve then reads its maps (its 0.5 s render cache is
        # stale at a 1 s scrape interval): the count is the host's between
        # the timestamp and 150 ms later (the request's latency on a loaded
        # machine), less 10 ms for the host's clock read after END.
        def host_count(t):
            return bisect.bisect_right(ends, t)
        samples = series(base, "sptrace_query_invocations_total%s[60s]" % sel,
                         t1 + 5)
        off = [(t, v, host_count(t - 0.01), host_count(t + 0.15))
               for t, v in samples
               if not host_count(t - 0.01) <= v <= host_count(t + 0.15)]
        lags = [next((x / 1000.0 for x in range(-10, 1000)
                      if host_count(t + x / 1000.0) >= v), None)
                for t, v in samples]
        print("note: each sample's count reached by the host within %r s of "
              "its timestamp" % sorted(set(lags)))
        check(len(samples) >= 10 and not off, "Prometheus: each of %d "
              "samples is the host's count at its timestamp (off: %r)" %
              (len(samples), off[:5]))
        # rate() mid-run: Prometheus's extrapolation of the counter's growth
        # between the window's first and last samples; that growth lies
        # between the host's counts at those times (same bounds as above).
        r = one(base, "rate(sptrace_query_invocations_total%s[4s])" % sel,
                at=mid)
        ts = [t for t, _ in samples if mid - 4 <= t <= mid]
        if check(len(ts) >= 2, "rate(): %d samples in the window" % len(ts)):
            inc_lo = host_count(ts[-1] - 0.01) - host_count(ts[0] + 0.15)
            inc_hi = host_count(ts[-1] + 0.15) - host_count(ts[0] - 0.01)
            lo = prom_rate(samples, mid, 4.0, max(inc_lo, 0))
            hi = prom_rate(samples, mid, 4.0, inc_hi)
            check(lo - 1e-9 <= r <= hi + 1e-9, "rate() mid-run %.2f/s from "
                  "the host's counts: [%.2f, %.2f] (%.1f%% wide)" %
                  (r, lo, hi, 100.0 * (hi - lo) / r if r else 0))
        # After the run the counter is flat: rate 0.
        eq(one(base, "rate(sptrace_query_invocations_total%s[4s])" % sel), 0.0,
           "rate() after the run is 0")
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
