# SPDX-License-Identifier: MIT
"""A real Prometheus (Debian's /usr/bin/prometheus) scrapes `sptrace serve`
every second while a host runs a steady workload; PromQL over what it
stored (counters, rate, histogram_quantile) must agree with sptrace's own
JSON summary of the same run, traced at the same time by a second sptrace:
counters exactly, quantiles within the bucket error, the rate within the
run's own variation. Missing prometheus: fails in CI, skips otherwise."""
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
LADDER = [m * 10.0 ** e for e in range(-6, 1) for m in (1, 2, 5)] + [10.0]


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


def one(base, promql, at=None):
    v = query(base, promql, at)
    check(len(v) == 1, "PromQL %s: one series (%d)" % (promql, len(v)))
    return v[0] if v else float("nan")


def bucket_range(v):
    """Where Prometheus's estimate of a quantile sptrace puts at v (ns)
    may lie. Prometheus interpolates linearly inside the ladder bucket
    (le[i-1], le[i]] that holds the rank; sptrace interpolates inside its
    own 3% kernel bucket, and a kernel bucket that straddles a ladder bound
    is counted under the upper bound. So the estimate lies in the ladder
    bucket of v, or of v moved by one kernel bucket (3%) either way."""
    s = v / 1e9

    def idx(x):
        for i, le in enumerate(LADDER):
            if x <= le:
                return i
        return len(LADDER)
    lo_i, hi_i = idx(s / 1.03), idx(s * 1.03)
    lo = LADDER[lo_i - 1] if lo_i > 0 else 0.0
    hi = LADDER[hi_i] if hi_i < len(LADDER) else float("inf")
    return lo, hi


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
        # The workload: q00000 takes 200 us, and 3 ms every 20th round
        # (5%: its p99 is a slow one, its p50 a fast one).
        t0 = time.time()
        host = subprocess.Popen([HOST, "--names", "2", "--pause-ms", "5",
                                 "--spin-us", "200", "--slow-every", "20",
                                 "--slow-us", "3000"],
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
        n = truth["invocations_per_name"]
        eq(own["count"], n, "sptrace's own JSON: count is the host's")

        sel = '{job="sptrace",query="q00000",pid="%d"}' % host.pid
        eq(one(base, "sptrace_query_invocations_total" + sel), float(n),
           "Prometheus: invocations counter == sptrace's count")
        eq(one(base, "sptrace_query_cache_hits_total" + sel), float(n),
           "Prometheus: cache hits counter == sptrace's")
        eq(one(base, "sptrace_query_latency_seconds_count" + sel), float(n),
           "Prometheus: histogram _count == sptrace's count")
        eq(one(base, 'sptrace_query_latency_seconds_bucket{job="sptrace",'
                     'query="q00000",pid="%d",le="+Inf"}' % host.pid),
           float(n), "Prometheus: +Inf bucket == count")
        # Quantiles of the whole run, from the cumulative buckets.
        for q, key in ((0.99, "p99_ns"), (0.5, "p50_ns")):
            v = one(base, "histogram_quantile(%s, sptrace_query_latency_"
                          "seconds_bucket%s)" % (q, sel))
            lo, hi = bucket_range(own[key])
            check(lo <= v <= hi, "histogram_quantile(%s) = %.6gs within the "
                  "bucket of sptrace's %s %.6gs: [%g, %g]" %
                  (q, v, key, own[key] / 1e9, lo, hi))
        # The usual form: over a rate. 5% of every window is slow, so a
        # window's p99 is in the same bucket as the run's.
        mid = (t0 + t1) / 2 + 2
        v = one(base, "histogram_quantile(0.99, rate(sptrace_query_latency_"
                      "seconds_bucket%s[4s]))" % sel, at=mid)
        lo, hi = bucket_range(own["p99_ns"])
        check(lo <= v <= hi, "histogram_quantile(0.99, rate(..[4s])) mid-run "
              "= %.6gs within [%g, %g]" % (v, lo, hi))
        # rate() mid-run against the run's average rate (sptrace's count
        # over the host's own time): a steady loop, but a 4 s window of a
        # shared, loaded 2-CPU machine varies, and Prometheus extrapolates
        # to the window's ends; 40%. (Wrong units or a wrong series would
        # be off by far more.)
        r = one(base, "rate(sptrace_query_invocations_total%s[4s])" % sel,
                at=mid)
        avg = n / (truth["elapsed_ns"] / 1e9)
        check(abs(r - avg) <= 0.4 * avg, "rate() mid-run %.1f/s within 40%% "
              "of sptrace's average %.1f/s" % (r, avg))
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
