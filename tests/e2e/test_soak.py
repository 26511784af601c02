# SPDX-License-Identifier: MIT
"""Soak: a 4-thread host making a paced stream of query events (250,000 a
second by default) is traced with -p for SOAK_SECONDS (20 here; bench/soak
runs 300); the host's own count over its own clock must reach 95% of that
rate. sptrace's RSS is sampled every second and must not grow after
warm-up; the table's counts must equal the host's own counters exactly,
with no unbalanced, map-full or lost event.

Edges: the host waits for SIGUSR1 until sptrace says it is attached, and
ends by itself (every interval it began is ended) before sptrace detaches
(sptrace stops when its -p target exits), so no query straddles the
arming or the disarming and the counts must be equal, not close.

RSS bound: the largest sample of the last window (a quarter of the run, at
most 60 s) may exceed the largest sample of the first window (the same
length, which includes warm-up) by at most 1 MiB. Live tracing aggregates
in the kernel, so anything that grows with events is a leak."""
import json
import os
import select
import signal
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, tmpfile

HOST = os.environ["SOAK_HOST"]
SECONDS = float(os.environ.get("SOAK_SECONDS", "20"))
RATE = int(os.environ.get("SOAK_RATE", "250000"))
THREADS = 4
RSS_SLACK_KIB = 1024


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def wait_stderr_line(proc, want, timeout=30.0):
    end = time.time() + timeout
    buf = ""
    while time.time() < end:
        r, _, _ = select.select([proc.stderr], [], [], max(0, end - time.time()))
        if not r:
            break
        line = proc.stderr.readline()
        if not line:
            break
        buf += line
        if want in line:
            return True, buf
    return False, buf


require_bpf()
truth_path = tmpfile(".truth.json")
out = tmpfile(".json")
host = subprocess.Popen([HOST, "--wait", "--threads", str(THREADS),
                         "--rate", str(RATE), "--seconds", str(SECONDS),
                         "--out", truth_path],
                        stdout=subprocess.PIPE, text=True)
tracer = None
try:
    check(host.stdout.readline().startswith("ready"), "host ready")
    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json",
                               "-o", out], stderr=subprocess.PIPE, text=True)
    ok, err_head = wait_stderr_line(tracer, "Ctrl-C to stop")
    check(ok, "sptrace attached (%r)" % err_head)
    host.send_signal(signal.SIGUSR1)
    t0 = time.time()
    samples = []            # (seconds since start, VmRSS KiB)
    while tracer.poll() is None:
        v = rss_kib(tracer.pid)
        if v is not None:
            samples.append((time.time() - t0, v))
        time.sleep(1.0)
        if time.time() - t0 > SECONDS + 120:
            check(False, "sptrace ended within 120 s of the host")
            tracer.kill()
            break
    err_tail = tracer.stderr.read()
    tracer.wait()
    host.wait(timeout=30)
    eq(tracer.returncode, 0, "sptrace exit status")
    check(err_head.count("\n") == 1 and not err_tail.strip(),
          "sptrace printed no warning (%r)" % (err_head + err_tail))

    with open(truth_path) as f:
        truth = json.load(f)
    with open(out) as f:
        s = json.load(f)
    r = rows(s)
    for name, n in sorted(truth["queries"].items()):
        eq(r.get(name, {}).get("count"), n, "%s: count equals the host's" % name)
    for name, n in truth["cache_hits"].items():
        eq(r.get(name, {}).get("cache_hits"), n,
           "%s: cache hits equal the host's" % name)
    eq(sum(q["count"] for q in s["queries"]),
       sum(truth["queries"].values()), "total count equals the host's")
    e = s["errors"]
    for k in ("unbalanced", "map_full", "lost", "name_read_failed"):
        eq(e.get(k), 0, "errors.%s" % k)

    traced_rate = truth["events"] / truth["seconds"]
    print("note: %d events in %.1f s on %d threads: %.0f events/s traced "
          "(asked %d/s)" % (truth["events"], truth["seconds"], THREADS,
                            traced_rate, RATE))
    check(truth["events"] > 0 and truth["seconds"] >= SECONDS * 0.99,
          "host ran for the whole soak")
    # The rate docs/reliability.md claims is the rate this run traced: the
    # host paces itself and catches up after a delay, so traced it must
    # reach the asked rate over the run (5% for a loaded machine).
    if RATE:
        check(traced_rate >= 0.95 * RATE, "traced at the asked rate: %.0f "
              "events/s >= 95%% of %d" % (traced_rate, RATE))

    # RSS: last window against the first.
    window = min(60.0, SECONDS / 4)
    first = [v for t, v in samples if t <= window]
    last = [v for t, v in samples if t >= truth["seconds"] - window]
    check(len(first) >= 2 and len(last) >= 2,
          "RSS sampled every second (%d samples)" % len(samples))
    if first and last:
        print("note: sptrace VmRSS KiB: first %.0f s max %d, last %.0f s max "
              "%d, overall min %d max %d" % (
                  window, max(first), window, max(last),
                  min(v for _, v in samples), max(v for _, v in samples)))
        check(max(last) <= max(first) + RSS_SLACK_KIB,
              "sptrace RSS does not grow: last-window max %d KiB <= "
              "first-window max %d KiB + %d KiB" % (max(last), max(first),
                                                    RSS_SLACK_KIB))
finally:
    for p in (tracer, host):
        if p and p.poll() is None:
            p.kill()
            p.wait()
    for path in (truth_path, out):
        if os.path.exists(path):
            os.unlink(path)
finish()
