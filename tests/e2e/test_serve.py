# SPDX-License-Identifier: MIT
"""sptrace serve: /metrics against a host with known counts (counters
exact, histograms consistent), processes that come and go with -b (their
series appear, keep their final values, then leave after --keep-exited),
a scrape streamed from the exposition as it was when it began (a slow
reader gets the bytes of a fast one while serve renders again, as many as
Content-Length says), and a server that keeps serving and tracing under 100
concurrent scrapes, a stalled client, malformed requests and clients that
hang up mid-response. The process labels: per-query series carry query,
pid and comm; sptrace_process_info, one per pid that has series (pid 0
too), carries binary and title as the process's own /proc says them;
--process-labels series puts them back on every series. Also the listen
policy."""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

from fleet_metrics import (info_of, info_pids, parse, proc_facts,
                           query_label_keys, query_pids, scrape, start_serve,
                           stop_serve, value)
from sptest import (SPTRACE, check, eq, finish, host_truth, optional,
                    require_bpf, run)

HOST = os.environ["FLEET_HOST"]
HOST_REAL = os.path.realpath(HOST)
MEM_TYPED = os.environ["MEM_TYPED_HOST"]
BATCH_HOST = os.environ["BATCH_HOST"]
GT_HOST = os.environ["GT_HOST"]
KEEP = 5


def wait_for(fn, what, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        r = fn()
        if r:
            return r
        time.sleep(0.2)
    check(False, "timed out waiting for " + what)
    return None


def samples(url, om=False):
    status, ctype, text = scrape(url, om)
    return parse(text)


def check_histograms(s, pid, label):
    """Cumulative buckets, +Inf == _count == invocations."""
    for q in ("q00000", "q00001", "q00002"):
        b = [(float(l["le"]), v) for n, l, v in s
             if n == "sptrace_query_latency_seconds_bucket" and
             l["query"] == q and l["pid"] == str(pid)]
        b.sort()
        check(len(b) == 23 and b[-1][0] == float("inf"),
              "%s %s: 22 bounds and +Inf" % (label, q))
        check(all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)),
              "%s %s: buckets cumulative" % (label, q))
        cnt = value(s, "sptrace_query_latency_seconds_count", query=q, pid=pid)
        inv = value(s, "sptrace_query_invocations_total", query=q, pid=pid)
        check(b and b[-1][1] == cnt == inv,
              "%s %s: +Inf bucket == _count == invocations (%s, %s, %s)" %
              (label, q, b[-1][1] if b else None, cnt, inv))


def check_info_join(s, label):
    """Every pid with per-query series has one sptrace_process_info, and
    no other pid has one: a join on pid loses no series, adds none."""
    ip = info_pids(s)
    eq(sorted(ip), sorted(set(ip)), "%s: one sptrace_process_info per pid"
       % label)
    eq(set(ip), query_pids(s), "%s: sptrace_process_info for exactly the "
       "pids of the per-query series" % label)


def test_counts_and_lifecycle(url, serve):
    # A first process, run to its end: its counters are exact.
    # Runs about 0.8 s: long enough to be seen alive (labels) under load.
    argv1 = [HOST, "--names", "3", "--rounds", "100", "--pause-ms", "5",
             "--spin-us", "1000"]
    p = run(argv1)
    t1 = host_truth(p.stdout)
    s = samples(url)
    for q in ("q00000", "q00001", "q00002"):
        eq(value(s, "sptrace_query_invocations_total", query=q, pid=t1["pid"]),
           float(t1["invocations_per_name"]), "host 1 %s: invocations" % q)
        eq(value(s, "sptrace_query_cache_hits_total", query=q, pid=t1["pid"]),
           float(t1["cache_hits_per_name"]), "host 1 %s: cache hits" % q)
    eq(value(s, "sptrace_query_invocations_total", query="q00000",
             pid=t1["pid"], comm="fleet_host"),
       float(t1["invocations_per_name"]), "host 1: comm label")
    # binary and title once, on the info metric (the title is the argv
    # the host was given: what the kernel puts in its cmdline).
    eq(query_label_keys(s), {("comm", "pid", "query")},
       "per-query series labelled query, pid, comm only")
    eq(info_of(s, t1["pid"]), {"pid": str(t1["pid"]), "comm": "fleet_host",
                               "binary": HOST_REAL, "title": " ".join(argv1)},
       "host 1: sptrace_process_info labels")
    check_info_join(s, "host 1")
    check_histograms(s, t1["pid"], "host 1")
    lat = value(s, "sptrace_query_latency_seconds_sum", query="q00000",
                pid=t1["pid"])
    # 1 ms busy-waits, each timed by the host inside its probes and
    # outside them: every interval sptrace measured lies between the two
    # readings, so the sum does too (1 us for the exposition's rounding).
    host_s = t1["q00000_latency_sum_ns"] / 1e9
    outer_s = t1["q00000_latency_outer_sum_ns"] / 1e9
    check(lat is not None and host_s - 1e-6 <= lat <= outer_s + 1e-6,
          "host 1: histogram _sum %s s in [host's inner %.6f s, outer %.6f s]"
          % (lat, host_s, outer_s))
    tot = value(s, "sptrace_query_time_seconds_total", query="q00000",
                pid=t1["pid"])
    slf = value(s, "sptrace_query_self_seconds_total", query="q00000",
                pid=t1["pid"])
    check(lat is not None and slf == lat == tot,
          "host 1: _sum == time == self for a query without children or "
          "blocked time (%s, %s, %s)" % (lat, tot, slf))

    # A second process started after serve: appears, then goes.
    h2 = subprocess.Popen([HOST, "--names", "3", "--pause-ms", "5"],
                          stdout=subprocess.PIPE, text=True)
    s = wait_for(lambda: (lambda s: s if (value(
        s, "sptrace_query_invocations_total", query="q00000", pid=h2.pid)
        or 0) > 0 and value(s, "sptrace_targets_alive") == 1 else None)(
            samples(url)), "the second process's series")
    check(s is not None, "host 2: its series appear without a restart")
    # Its labels against its own /proc, read while it runs.
    if s:
        eq(info_of(s, h2.pid), proc_facts(h2.pid),
           "host 2: sptrace_process_info labels = its /proc comm, exe, "
           "cmdline")
        check_info_join(s, "hosts 1 and 2")
    h2.send_signal(signal.SIGTERM)
    t2 = host_truth(h2.communicate(timeout=30)[0])
    ev0 = 0
    # Once its rows are evicted (a read after its exit), they keep their
    # final values, now from sptrace's accumulator.
    s = wait_for(lambda: (lambda s: s if value(s, "sptrace_evicted_rows_total")
                 == 6 else None)(samples(url)), "eviction of both hosts' rows")
    if s:
        for q in ("q00000", "q00001", "q00002"):
            eq(value(s, "sptrace_query_invocations_total", query=q,
                     pid=t2["pid"]), float(t2["invocations_per_name"]),
               "host 2 %s: final count kept after its exit" % q)
        eq(value(s, "sptrace_targets_alive"), 0.0, "no target alive")
        eq(value(s, "sptrace_exited_processes_total"), 2.0,
           "both processes counted as exited")
        # Exited within --keep-exited: series and labels of their own.
        eq(info_of(s, t1["pid"]), {"pid": str(t1["pid"]),
                                   "comm": "fleet_host", "binary": HOST_REAL,
                                   "title": " ".join(argv1)},
           "host 1 exited: its sptrace_process_info kept")
        check_info_join(s, "both exited")
        ev0 = value(s, "sptrace_evicted_rows_total")
    # After --keep-exited, the series of exited processes leave /metrics.
    s = wait_for(lambda: (lambda s: s if value(
        s, "sptrace_query_invocations_total", query="q00000",
        pid=t2["pid"]) is None else None)(samples(url)),
        "exited series to leave", timeout=KEEP + 20)
    check(s is not None and not [1 for n, l, v in s if
                                 n.startswith("sptrace_query_") and
                                 l["pid"] != "0"],
          "exited processes' series gone after --keep-exited")
    # ... and their figures are in the pid="0" series, so that sums over
    # processes never go down; the info metric of pid 0 joins them.
    eq(info_of(s or [], 0), {"pid": "0", "comm": "(exited)", "binary": "",
                             "title": ""}, "pid 0: sptrace_process_info")
    check_info_join(s or [], "after --keep-exited")
    for q in ("q00000", "q00001", "q00002"):
        eq(value(s or [], "sptrace_query_invocations_total", query=q, pid=0,
                 comm="(exited)"),
           float(t1["invocations_per_name"] + t2["invocations_per_name"]),
           "pid 0 %s: every exited process's invocations" % q)
    check(ev0 == 6, "evicted rows counted (%s)" % ev0)
    check(serve.poll() is None, "serve still running")


def test_openmetrics(url):
    status, ctype, text = scrape(url, openmetrics=True)
    eq(status, 200, "openmetrics: status")
    check(ctype.startswith("application/openmetrics-text; version=1.0.0"),
          "openmetrics: content type %r" % ctype)
    check(text.endswith("\n# EOF\n"), "openmetrics: ends with # EOF")
    check("\n# TYPE sptrace_process info\n" in text,
          "openmetrics: sptrace_process is an info family")
    check("# UNIT sptrace_query_latency_seconds seconds" in text,
          "openmetrics: UNIT lines")
    status, ctype, text = scrape(url)
    check(ctype.startswith("text/plain; version=0.0.4"),
          "text format: content type %r" % ctype)
    check("# EOF" not in text, "text format: no # EOF")
    check("\n# TYPE sptrace_process_info gauge\n" in text and
          "\nsptrace_process_info{" in text,
          "text format: sptrace_process_info a gauge, with samples")
    if optional(os.access("/usr/bin/promtool", os.X_OK),
                "/usr/bin/promtool (Debian: prometheus)"):
        p = subprocess.run(["/usr/bin/promtool", "check", "metrics"],
                           input=text, capture_output=True, text=True)
        eq(p.returncode, 0, "promtool check metrics accepts it: %r" %
           (p.stdout + p.stderr)[:300])


def raw(url, data, read=True, timeout=10):
    host, port = url.split("//")[1].split(":")
    s = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return s
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        if read:
            s.close()


def status_of(resp):
    try:
        return int(resp.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def test_bad_requests(url):
    # libmicrohttpd 0.9.75 (Debian 12) answers three of these itself, not
    # as the hand-written server did: a request line without a target is
    # closed unanswered (None), an unknown HTTP version is 505 (RFC 9110),
    # and a header line that starts with NUL ends the header block, so
    # that request is served (the connection closes after the answer:
    # nothing can follow it). docs/fleet.md says so.
    cases = [
        (b"GARBAGE\r\n\r\n", None),
        (b"GET /metrics HTTP/9.9\r\n\r\n", 505),
        (b"GET metrics HTTP/1.1\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\n\x00\x01\x02\r\n\r\n", 200),
        (b"GET /nope HTTP/1.1\r\n\r\n", 404),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
        (b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 413),
        (b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
        (b"GET /metrics HTTP/1.0\r\n\r\n", 200),
        (b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200),
    ]
    for data, want in cases:
        resp = raw(url, data)
        eq(status_of(resp), want, "request %r answered" % data[:40])
    resp = raw(url, b"HEAD /metrics HTTP/1.1\r\n\r\n")
    check(resp.endswith(b"\r\n\r\n"), "HEAD: headers only")
    eq(scrape(url)[0], 200, "serving after malformed requests")


def test_concurrent(url, serve):
    """100 concurrent scrapes while a client stalls mid-request."""
    stalled = raw(url, b"GET /metr", read=False)
    results = []

    def one():
        try:
            st, _, t = scrape(url, timeout=60)
            # urllib checks the length; the last family is there.
            results.append((st, t.endswith("\n") and
                            "# TYPE sptrace_process_resident_memory_bytes "
                            "gauge\n" in t))
        except Exception as e:      # noqa: BLE001 - reported below
            results.append((str(e), False))
    threads = [threading.Thread(target=one) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    eq(len(results), 100, "100 concurrent scrapes finished")
    eq(sum(1 for st, ok in results if st == 200 and ok), 100,
       "100 concurrent scrapes answered 200 with a whole body (%s)" %
       [r for r in results if r[0] != 200][:3])
    # The stalled client is dropped after its request timeout.
    stalled.settimeout(15)
    try:
        got = stalled.recv(100)
    except OSError:
        got = b""
    stalled.close()
    eq(got, b"", "stalled client disconnected by the server")
    s = samples(url)
    check((value(s, "sptrace_http_dropped_connections_total") or 0) >= 1,
          "dropped connections counted")
    check(serve.poll() is None, "serve survived 100 concurrent scrapes")


def test_connection_limit(url, serve):
    """300 idle connections: 256 are held, the others closed at once and
    counted as dropped; scrapes work again once they are gone."""
    s = samples(url)
    d0 = value(s, "sptrace_http_dropped_connections_total") or 0
    host, port = url.split("//")[1].split(":")
    conns = [socket.create_connection((host, int(port)), timeout=10)
             for _ in range(300)]
    time.sleep(1)
    closed = 0
    for c in conns:
        c.setblocking(False)
        try:
            if c.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    for c in conns:
        c.close()
    eq(closed, 300 - 256, "connections over the limit of 256 closed at once")
    refused = []

    def after_close():
        # Until serve has read the 256 hang-ups it still holds them, and
        # refuses a new connection as it should: closed with our request
        # unread, a reset (seen under ASan, and now and then with gcc).
        try:
            s = samples(url)
        except (ConnectionError, urllib.error.URLError) as e:
            refused.append(repr(e))
            return None
        return s if (value(s, "sptrace_http_dropped_connections_total") or
                     0) >= d0 + 44 + len(refused) else None
    s = wait_for(after_close, "dropped connections counted")
    check(s is not None and serve.poll() is None,
          "serving after the connection limit was hit (%d scrapes refused "
          "before serve saw the hang-ups: %s)" % (len(refused), refused[:1]))


def test_load(url, serve):
    # Many names: a large response, for clients that hang up mid-way.
    big = subprocess.Popen([HOST, "--names", "3000", "--pause-ms", "50",
                            "--spin-us", "1"], stdout=subprocess.PIPE,
                           text=True)
    try:
        s = wait_for(lambda: (lambda s: s if value(
            s, "sptrace_query_invocations_total", query="q02999",
            pid=big.pid) else None)(samples(url)), "3000 series")
        n0 = value(s, "sptrace_query_invocations_total", query="q00000",
                   pid=big.pid) if s else 0
        _, _, text = scrape(url)
        check(len(text) > 1000000, "large response (%d bytes)" % len(text))
        # Clients that hang up mid-response (RST: SO_LINGER 0).
        for _ in range(20):
            c = raw(url, b"GET /metrics HTTP/1.1\r\n\r\n", read=False)
            c.recv(1000)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                         b"\x01\x00\x00\x00\x00\x00\x00\x00")
            c.close()
        # ... and ones that read slowly, then leave.
        for _ in range(5):
            c = raw(url, b"GET /metrics HTTP/1.1\r\n\r\n", read=False)
            c.recv(100)
            time.sleep(0.2)
            c.close()
        _, _, text = scrape(url)
        parse(text)
        check(text.endswith("\n"), "full scrape after clients hung up")
        s = samples(url)
        # The 8 malformed requests above that were not served.
        check((value(s, "sptrace_http_rejected_requests_total") or 0) >= 8,
              "rejected requests counted")
        n1 = value(s, "sptrace_query_invocations_total", query="q00000",
                   pid=big.pid) or 0
        check(n1 > n0, "tracing went on meanwhile (%s -> %s)" % (n0, n1))
        check(serve.poll() is None, "serve survived the load")
    finally:
        big.send_signal(signal.SIGTERM)
        big.communicate(timeout=30)


def get_raw(url, slow=None):
    """GET /metrics on a socket of our own: (headers, body). slow(sock) is
    called after the first bytes of the body, to read at its own pace."""
    host, port = url.split("//")[1].split(":")
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A small window: serve cannot push the body into socket buffers
    # ahead of a slow reader.
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    c.settimeout(30)
    c.connect((host, int(port)))
    c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        got = c.recv(65536)
        if not got:
            break
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    parts = [body]
    if slow:
        slow(c, parts)
    while True:
        got = c.recv(1 << 20)
        if not got:
            break
        parts.append(got)
    c.close()
    headers = {}
    for line in head.decode().split("\r\n")[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return head.decode().split("\r\n")[0], headers, b"".join(parts)


def test_streamed_snapshot(url, serve):
    """A scrape is sent from the rows' texts as they were when it began
    (serve never writes the whole body): a client that reads slowly while
    other scrapes make serve render every row again gets the same bytes as
    one that read at once, and as many as its Content-Length says; every
    series once."""
    names = 2000
    big = subprocess.Popen([HOST, "--names", str(names), "--pause-ms", "20",
                            "--spin-us", "1"], stdout=subprocess.PIPE,
                           text=True)
    last = "q%05d" % (names - 1)
    try:
        wait_for(lambda: value(samples(url), "sptrace_query_invocations_total",
                               query=last, pid=big.pid), "%d series" % names)
        time.sleep(0.6)     # the render cache expired: the next one renders
        fast = []
        later = []

        def slow(c, parts):
            # Within the cache's 500 ms: the same exposition, read at once.
            fast.append(get_raw(url))
            # Then, for 2 s, 16 KiB at a time, while another client's
            # scrapes render the exposition again every 0.6 s.
            end = time.time() + 2.0
            nxt = time.time() + 0.6
            while time.time() < end:
                parts.append(c.recv(16384))
                time.sleep(0.05)
                if time.time() >= nxt:
                    later.append(get_raw(url)[2])
                    nxt = time.time() + 0.6
        status, headers, body = get_raw(url, slow)
        fstatus, fheaders, fbody = fast[0]
        check(status.endswith(" 200 OK") and fstatus.endswith(" 200 OK"),
              "streamed scrapes answered 200 (%s, %s)" % (status, fstatus))
        eq(headers.get("content-length"), str(len(body)),
           "slow scrape: Content-Length is the bytes received")
        eq(fheaders.get("content-length"), str(len(fbody)),
           "fast scrape: Content-Length is the bytes received")
        check(len(later) >= 2 and all(t != fbody for t in later),
              "the exposition was rendered again %d times while the slow "
              "scrape was sent (each different)" % len(later))
        check(body == fbody, "slow and fast scrape of one exposition: the "
              "same bytes (%d and %d; first difference at %s)" % (
                  len(body), len(fbody),
                  next((i for i in range(min(len(body), len(fbody)))
                        if body[i] != fbody[i]), "the end")))
        s = parse(body.decode())
        seen = {}
        for n, l, _ in s:
            key = (n, tuple(sorted(l.items())))
            seen[key] = seen.get(key, 0) + 1
        eq(max(seen.values()), 1, "every series once in the slow scrape")
        rows = {l["query"] for n, l, _ in s
                if n == "sptrace_query_invocations_total" and
                l.get("pid") == str(big.pid)}
        eq(len(rows), names, "every query of the host in the slow scrape")
        buckets = sum(1 for n, l, _ in s
                      if n == "sptrace_query_latency_seconds_bucket" and
                      l.get("pid") == str(big.pid))
        eq(buckets, 23 * names, "23 buckets per query in the slow scrape")
        check(serve.poll() is None, "serve survived the streamed scrapes")
    finally:
        big.send_signal(signal.SIGTERM)
        big.communicate(timeout=30)


def hist_top(ns):
    """The largest value of the kernel bucket holding `ns`
    (include/sptrace/hist.h: sp_hist_bucket_hi(sp_hist_bucket(ns)) - 1)."""
    if ns < 32:
        return ns
    shift = ns.bit_length() - 1 - 5
    return ((ns >> shift) << shift) + (1 << shift) - 1


def test_changes_between_scrapes(url):
    """serve keeps each row's rendered text between scrapes and formats
    again only rows whose figures changed: after a change through the
    host, every figure of the next scrape is the host's own (counter only,
    histogram bucket only, a new query, the process's exit), none is left
    from the last rendering."""
    h = subprocess.Popen([HOST, "--names", "3", "--steps"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    lat = {i: [] for i in range(3)}     # (inner, outer) per invocation
    hits = {i: 0 for i in range(3)}

    def step(cmd):
        h.stdin.write(cmd + "\n")
        h.stdin.flush()
        r = json.loads(h.stdout.readline())
        i = int(cmd.split()[1])
        if cmd[0] == "q":
            lat[i] += list(zip(r["inner_ns"], r["outer_ns"]))
        else:
            hits[i] += r["hits"]

    def fresh():
        time.sleep(0.6)     # past serve's 500 ms render cache
        return samples(url)

    def check_host(s, label):
        for i in range(3):
            q = "q%05d" % i
            what = "%s %s" % (label, q)
            n = len(lat[i])
            inv = value(s, "sptrace_query_invocations_total", query=q,
                        pid=h.pid)
            if not n and not hits[i]:
                check(inv is None, "%s: no series before its first query"
                      % what)
                continue
            eq(inv, float(n), what + ": invocations, the host's")
            eq(value(s, "sptrace_query_cache_hits_total", query=q,
                     pid=h.pid), float(hits[i]), what + ": cache hits")
            eq(value(s, "sptrace_query_latency_seconds_count", query=q,
                     pid=h.pid), float(n), what + ": _count")
            tot = value(s, "sptrace_query_latency_seconds_sum", query=q,
                        pid=h.pid)
            lo = sum(a for a, b in lat[i]) / 1e9
            hi = sum(b for a, b in lat[i]) / 1e9
            check(tot is not None and lo - 1e-6 <= tot <= hi + 1e-6,
                  "%s: _sum %s s in [host's inner %.9f, outer %.9f]" %
                  (what, tot, lo, hi))
            # Each bound: between the invocations surely under it (their
            # outer reading's kernel bucket is) and those possibly under.
            bad, nb = [], 0
            for n_, l, v in s:
                if (n_ != "sptrace_query_latency_seconds_bucket" or
                        l["query"] != q or l["pid"] != str(h.pid)):
                    continue
                nb += 1
                le = float(l["le"])
                sure = sum(1 for a, b in lat[i] if hist_top(b) <= le * 1e9)
                maybe = sum(1 for a, b in lat[i] if hist_top(a) <= le * 1e9)
                if not sure <= v <= maybe:
                    bad.append((l["le"], v, sure, maybe))
            check(nb == 23 and not bad,
                  "%s: each of %d buckets within the host's counts (misses "
                  "(le, got, sure, maybe): %s)" % (what, nb, bad))

    try:
        step("q 0 300 5")
        step("q 1 300 3")
        step("h 1 2")
        s = fresh()
        check_host(s, "scrape 1")
        b1 = [value(s, "sptrace_query_latency_seconds_bucket", query="q00001",
                    pid=h.pid, le=le) for le in ("0.0005", "+Inf")]
        # Only q00000's cache hits; q00001 into another bucket; q00002 new.
        step("h 0 3")
        step("q 1 3000 2")
        step("q 2 300 1")
        s = fresh()
        check_host(s, "scrape 2")
        b2 = [value(s, "sptrace_query_latency_seconds_bucket", query="q00001",
                    pid=h.pid, le=le) for le in ("0.0005", "+Inf")]
        # 3 ms queries: not under 0.5 ms, so only higher buckets moved.
        check(b1 == [3, 3] and b2 == [3, 5],
              "q00001 buckets le=0.0005, +Inf: [3, 3], then [3, 5] (%s, %s)"
              % (b1, b2))
        ev = value(s, "sptrace_evicted_rows_total")
        h.stdin.close()
        eq(h.wait(timeout=30), 0, "steps host exits 0")
        # Exited: its rows leave the kernel maps, their figures stay.
        s = wait_for(lambda: (lambda s: s if value(
            s, "sptrace_evicted_rows_total") == ev + 3 else None)(fresh()),
            "eviction of the steps host's rows")
        if s:
            check_host(s, "after its exit")
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()


def test_exact_at_bounds(url):
    """Counts at a bound are exact: serve has the kernel count each
    invocation by its ladder slot (include/sptrace/ladder.h), so one of
    49.8 ms is under le=0.05 although the fine kernel bucket that holds it,
    [49283072, 50331647] ns, reaches past 50 ms (fine buckets would count it
    from le=0.1 only). Truth: the host's clock inside and outside the
    probes (fleet_host --steps); an invocation the two readings put on
    both sides of the bound (preempted in a probe) may count either way.
    Not 9.98 ms under le=0.01 (its fine bucket starts 38 us below 10 ms):
    an END past the ring's 10 ms age flushes, and where a trap is slow
    (30-80 us on a VM) that put every outer reading over the bound."""
    h = subprocess.Popen([HOST, "--names", "2", "--steps"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    # name, bound, its `le`, busy-waits (us) just under and just over it
    cases = ((0, 1000000, "0.001", (990, 1010), 40),
             (1, 50000000, "0.05", (49800, 50200), 10))
    try:
        lat = {}
        for i, bound, le, spins, n in cases:
            lat[i] = []
            for us in spins:
                h.stdin.write("q %d %d %d\n" % (i, us, n))
                h.stdin.flush()
                r = json.loads(h.stdout.readline())
                lat[i] += list(zip(r["inner_ns"], r["outer_ns"]))
        for i, bound, le, spins, n in cases:
            q = "q%05d" % i
            s = wait_for(lambda: (lambda s: s if value(
                s, "sptrace_query_latency_seconds_count", query=q,
                pid=h.pid) == 2 * n else None)(samples(url)),
                "%s: all %d invocations scraped" % (q, 2 * n))
            if not s:
                continue
            got = value(s, "sptrace_query_latency_seconds_bucket", query=q,
                        pid=h.pid, le=le)
            sure = sum(1 for a, b in lat[i] if b <= bound)
            maybe = sum(1 for a, b in lat[i] if a <= bound)
            check(got is not None and sure <= got <= maybe,
                  "%s le=%s: %s invocations, the host's clock says %d "
                  "(%d more on the bound)" % (q, le, got, sure, maybe - sure))
            # The check can fail: most invocations under the bound were
            # surely under it by the host's clock.
            check(sure >= n // 4, "%s: %d of %d invocations surely <= %d ns"
                  % (q, sure, n, bound))
        h.stdin.close()
        eq(h.wait(timeout=30), 0, "bounds host exits 0")
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()


def test_many_processes():
    """Bounded kernel maps: 20 processes of 3 queries each, one after the
    other, through a `queries` map of 16 rows. Without eviction it would be
    full after 5 of them; with it nothing is lost, and every exited
    process's counts add up exactly under pid 0."""
    serve, url = start_serve(["--max-queries", "16", "--keep-exited", "0",
                              "-b", HOST])
    if not url:
        stop_serve(serve)
        return
    try:
        n = 0
        for _ in range(20):
            t = host_truth(run([HOST, "--names", "3", "--rounds", "20",
                                "--pause-ms", "2"]).stdout)
            n += t["invocations_per_name"]
            for _ in range(2):      # gone, then evicted: two reads
                time.sleep(0.6)     # past the render cache
                s = samples(url)
        s = wait_for(lambda: (lambda s: s if value(
            s, "sptrace_evicted_rows_total") == 60 else None)(samples(url)),
            "every process evicted")
        if s:
            eq(value(s, "sptrace_map_full_total"), 0.0,
               "20 x 3 rows through a 16-row map: nothing lost")
            eq(value(s, "sptrace_exited_processes_total"), 20.0,
               "20 processes seen exiting, each once")
            for q in ("q00000", "q00001", "q00002"):
                eq(value(s, "sptrace_query_invocations_total", query=q,
                         pid=0), float(n),
                   "pid 0 %s: every process's invocations, exactly" % q)
            eq(len([1 for name, l, v in s
                    if name == "sptrace_query_invocations_total"]), 3,
               "only the pid 0 series are left")
    finally:
        eq(stop_serve(serve), 0, "many processes: serve exits 0")


def test_shared_address_space():
    """A task that shares a -b process's address space without being one
    of its threads (LeakSanitizer's tracer at the exit of every ASan-built
    process, a vfork child before its exec) is a part of that process:
    one process seen exiting, not two. The host's task lives 1 s, across
    several /proc scans."""
    serve, url = start_serve(["--keep-exited", "0", "-b", HOST])
    if not url:
        stop_serve(serve)
        return
    try:
        t = host_truth(run([HOST, "--names", "1", "--rounds", "5",
                            "--pause-ms", "2", "--vm-child-ms", "1000"]).stdout)
        s = wait_for(lambda: (lambda s: s if value(
            s, "sptrace_evicted_rows_total") == 1 else None)(samples(url)),
            "the host evicted")
        if s:
            eq(value(s, "sptrace_exited_processes_total"), 1.0,
               "a host and its CLONE_VM task: one process seen exiting")
            eq(value(s, "sptrace_query_invocations_total", query="q00000",
                     pid=0), float(t["invocations_per_name"]),
               "the host's invocations, under pid 0")
    finally:
        eq(stop_serve(serve), 0, "shared address space: serve exits 0")


def test_mem():
    """--mem: the memory gauges per type, against mem_typed's truth
    (tests/hosts/mem_typed.c)."""
    serve, url = start_serve(["--mem", "-b", MEM_TYPED])
    if not url:
        stop_serve(serve)
        return
    try:
        host = subprocess.Popen([MEM_TYPED, "wait"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, text=True)
        time.sleep(1)       # mapped and snapshotted, for the type names
        host.communicate("go\n", timeout=60)
        s = wait_for(lambda: (lambda s: s if value(
            s, "sptrace_mem_allocations_total", type="Widget") else None)(
                samples(url)), "memory gauges")
        truth = {   # type: allocs, bytes, frees, live, live bytes, peak
            "Widget": (100, 4800, 60, 40, 1920, 4800),
            "Buffer": (12, 6900, 10, 2, 1400, 5500),
            "Gadget": (50, 10000, 20, 30, 6000, 10000),
        }
        for ty, (a, ab, fr, lv, lb, pk) in truth.items():
            got = tuple(value(s or [], m, type=ty) for m in (
                "sptrace_mem_allocations_total",
                "sptrace_mem_allocated_bytes_total",
                "sptrace_mem_frees_total", "sptrace_mem_live_allocations",
                "sptrace_mem_live_bytes", "sptrace_mem_peak_live_bytes"))
            eq(got, tuple(float(x) for x in (a, ab, fr, lv, lb, pk)),
               "--mem %s: allocs, bytes, frees, live, live bytes, peak" % ty)
    finally:
        eq(stop_serve(serve), 0, "--mem: serve exits 0")


def test_batch_fallback():
    """sptrace_batch_fallback_total against batch_host's own count: each of
    its threads runs a "late" pair from a pthread key destructor after its
    ring is gone, two events that fire their per-event sites. The series
    keeps the count after the host exits and its rows are evicted (the
    read that evicts them too), with and without --top; promtool accepts
    the exposition."""
    for extra in ([], ["--top", "1"]):
        what = "batch_fallback%s" % (" " + " ".join(extra) if extra else "")
        serve, url = start_serve(["--keep-exited", "0"] + extra +
                                 ["-b", BATCH_HOST])
        if not url:
            stop_serve(serve)
            return
        try:
            p = run([BATCH_HOST, "threads", "2000"])
            t = json.loads([l for l in p.stdout.splitlines()
                            if l.startswith("{")][-1])
            check(t["late"] == 2000, "%s: the host ran its late pairs (%r)"
                  % (what, p.stdout[-200:]))
            # The read that finds the host gone moves its rows out of the
            # maps: the first exposition without them.
            s = wait_for(lambda: (lambda s: s if (value(
                s, "sptrace_evicted_rows_total") or 0) > 0 else None)(
                    samples(url)), what + ": the host's rows evicted")
            for k in range(2):
                if s is None:
                    break
                fb = [(l, v) for n, l, v in s
                      if n == "sptrace_batch_fallback_total"]
                eq(fb, [({}, float(2 * t["late"]))],
                   "%s: one series, the late pairs' events (%s read)" %
                   (what, ("the evicting", "a later")[k]))
                check(not [l for n, l, v in s if n == "sptrace_errors_total"
                           and "fallback" in l.get("kind", "")],
                      what + ": not among the errors")
                time.sleep(0.6)     # past the render cache
                status, ctype, text = scrape(url)
                s = parse(text)
            if optional(os.access("/usr/bin/promtool", os.X_OK),
                        "/usr/bin/promtool (Debian: prometheus)"):
                r = subprocess.run(["/usr/bin/promtool", "check", "metrics"],
                                   input=text, capture_output=True, text=True)
                eq(r.returncode, 0, "%s: promtool check metrics: %r" %
                   (what, (r.stdout + r.stderr)[:300]))
        finally:
            eq(stop_serve(serve), 0, what + ": serve exits 0")


def test_batch_fallback_unknown():
    """A session with the TSC holds sp:tsc with its semaphore; serve with
    SPTRACE_NO_TSC=1 on the same process cannot watch the site, so it
    cannot count fallbacks: no sptrace_batch_fallback_total series, not a
    0 (its other counters are served)."""
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
        if f.read().strip() != "tsc":
            print("# batch_fallback unknown: the clock source is not the "
                  "TSC: no session raises sp:tsc's semaphore")
            return
    host = subprocess.Popen([GT_HOST, "--wait", "--threads", "1", "5"],
                            stdout=subprocess.PIPE, text=True)
    first = serve = None
    old = os.environ.get("SPTRACE_NO_TSC")
    try:
        host.stdout.readline()      # waiting for SIGUSR1
        first = subprocess.Popen([SPTRACE, "-v", "-o", "/dev/null",
                                  "-p", str(host.pid)],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        seen = ""
        for line in first.stderr:
            seen += line
            if "tracing" in line:
                break
        check("tracing" in seen, "unknown: the TSC session traces (%r)" %
              seen[-300:])
        os.environ["SPTRACE_NO_TSC"] = "1"
        serve, url = start_serve(["-p", str(host.pid)])
        if url:
            s = samples(url)
            eq(value(s, "sptrace_lost_events_total"), 0.0,
               "unknown: serve's other counters are there")
            check(not [1 for n, l, v in s if "batch_fallback" in n],
                  "unknown: no sptrace_batch_fallback_total series")
    finally:
        if old is None:
            os.environ.pop("SPTRACE_NO_TSC", None)
        else:
            os.environ["SPTRACE_NO_TSC"] = old
        for pr in (serve, first):
            if pr and pr.poll() is None:
                pr.send_signal(signal.SIGINT)
        host.kill()
        host.wait()
        for pr in (serve, first):
            if pr:
                try:
                    pr.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pr.kill()
                    pr.wait()


def test_process_labels_series():
    """--process-labels series: binary and title on every per-query series
    again (and the info metric still there), equal to the host's /proc;
    promtool accepts it. A bad value: one line, exit 1, before tracing."""
    p = run([SPTRACE, "serve", "--process-labels", "both", "-b", HOST])
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 1 and len(lines) == 1 and
          lines[0].startswith("sptrace: ") and
          "--process-labels 'both'" in lines[0] and "info or series" in lines[0],
          "--process-labels both refused in one line: %r" % p.stderr)
    serve, url = start_serve(["--process-labels", "series", "-b", HOST])
    if not url:
        stop_serve(serve)
        return
    h = subprocess.Popen([HOST, "--names", "2", "--pause-ms", "5"],
                         stdout=subprocess.PIPE, text=True)
    try:
        s = wait_for(lambda: (lambda s: s if (value(
            s, "sptrace_query_invocations_total", query="q00001",
            pid=h.pid) or 0) > 0 else None)(samples(url)), "the host's series")
        if s:
            facts = proc_facts(h.pid)
            eq(query_label_keys(s),
               {("binary", "comm", "pid", "query", "title")},
               "series: per-query series labelled query, pid, comm, "
               "binary, title")
            bad = [(n, l) for n, l, v in s if n.startswith("sptrace_query_")
                   and {k: l.get(k) for k in facts} != facts]
            check(not bad, "series: every series of the host has its /proc "
                  "labels %r (not: %r)" % (facts, bad[:2]))
            eq(info_of(s, h.pid), facts,
               "series: sptrace_process_info still there")
            check_info_join(s, "series")
        status, ctype, text = scrape(url)
        if optional(os.access("/usr/bin/promtool", os.X_OK),
                    "/usr/bin/promtool (Debian: prometheus)"):
            p = subprocess.run(["/usr/bin/promtool", "check", "metrics"],
                               input=text, capture_output=True, text=True)
            eq(p.returncode, 0, "series: promtool check metrics accepts it: "
               "%r" % (p.stdout + p.stderr)[:300])
    finally:
        h.send_signal(signal.SIGTERM)
        h.communicate(timeout=30)
        eq(stop_serve(serve), 0, "series: serve exits 0")


def test_listen_policy():
    for bad, why in ((":9464", "no address"), ("example.com:9464", "numeric"),
                     ("127.0.0.1:99999", "port")):
        p = run([SPTRACE, "serve", "--listen", bad, "-b", HOST])
        check(p.returncode == 1 and why in p.stderr,
              "--listen %s refused: %r" % (bad, p.stderr.strip()))
    p, url = start_serve(["-b", HOST])
    check(url and url.startswith("http://127.0.0.1:"),
          "default: loopback (%s)" % url)
    stop_serve(p)
    sp = subprocess.Popen([SPTRACE, "serve", "--listen", "0.0.0.0:0", "-b",
                           HOST], stderr=subprocess.PIPE, text=True)
    lines = ""
    # Until it serves: a SIGINT before sptrace set up its signal handling
    # would end it by the default action, as any early Ctrl-C does.
    for _ in range(20):
        line = sp.stderr.readline()
        lines += line
        if not line or "serving http://" in line:
            break
    check("not a loopback address" in lines and "serving http://" in lines,
          "explicit 0.0.0.0 accepted with a warning: %r" % lines.strip())
    stop_serve(sp)
    eq(sp.returncode, 0, "explicit non-loopback serve exits cleanly")
    p = run([SPTRACE, "serve", "--listen", "[::1]:0", "-d", "0.5", "-b", HOST])
    check(p.returncode == 0 and "serving http://[::1]:" in p.stderr,
          "IPv6 loopback: %r" % p.stderr.strip()[-200:])


require_bpf()
serve, url = start_serve(["--keep-exited", str(KEEP), "-b", HOST])
try:
    if url:
        test_counts_and_lifecycle(url, serve)
        test_openmetrics(url)
        test_bad_requests(url)
        test_concurrent(url, serve)
        test_connection_limit(url, serve)
        test_load(url, serve)
        test_streamed_snapshot(url, serve)
        test_changes_between_scrapes(url)
        test_exact_at_bounds(url)
finally:
    eq(stop_serve(serve), 0, "serve exits 0 on Ctrl-C")
test_many_processes()
test_shared_address_space()
test_mem()
test_batch_fallback()
test_batch_fallback_unknown()
test_process_labels_series()
test_listen_policy()
finish()
