# SPDX-License-Identifier: MIT
"""The sp-tracing layer: tests/rust_async rs_tracing, a tokio program
instrumented with `tracing` (500 async spans "tr_request" entered at each
of their 4 polls on 2 workers, a sync span "tr_decode" inside each, 250
sync spans "tr_sync" entered twice each), its spans' entered time timed by
the host's own clock. Each span must be counted once, when it closes, with
the sum of its enters as its time: counts exact; total, self, shortest
and longest between the host's clock read inside the span's enters and
exits and read around them (the layer's probes are per-event: their traps
lie between, 5 us each on a VM with slow traps), within 0.5%. Its INFO events are marks (with the field `id` as
the key) and its DEBUG events are not: `sptrace record -e mark` has
exactly the host's marks and keys. With the layer's key_field("shard"),
--query-keys gives a row per field value (integer and text keys), exact. And the example examples/rust-tracing,
profiled by its one added line: every span counted."""
import csv
import io
import os
import re

from sptest import (SPTRACE, async_rust_hosts, between, check, eq, finish, host_truth,
                    require_bpf, retry_timing, rows, run, tmpfile, trace_json)

HOSTS = async_rust_hosts()
require_bpf()
TRACING = os.path.join(HOSTS, "rs_tracing")
EXAMPLE = os.path.join(HOSTS, "tracing_example_rs")
NAMES = ("tr_request", "tr_decode", "tr_sync")


def test_spans():
    p, s = trace_json(["--", TRACING, "500", "2", "150"])
    eq(p.returncode, 0, "exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    eq(t["watched"], True, "the host saw the tracer attached from its start")
    eq(t["polls"], 2000, "the host: 500 requests polled 4 times each")
    if not check(s is not None, "JSON written"):
        return
    r = rows(s)
    for name in NAMES:
        q = r.get(name)
        if not check(q is not None, "row %s present" % name):
            continue
        eq(q["count"], t["count"][name], "%s: one count per span" % name)
        for k in ("total_ns", "self_ns", "min_ns", "max_ns"):
            between(q[k], t["bounds"][k][name], "%s: %s" % (name, k))
    for k, v in s["errors"].items():
        eq(v, 0, "errors.%s" % k)


def test_marks():
    spt = tmpfile(".spt")
    try:
        p = run([SPTRACE, "record", "-e", "mark", "-o", spt, "--force", "--",
                 TRACING, "100", "2", "20"])
        eq(p.returncode, 0, "record: exit 0 (%s)" % p.stderr.strip()[-300:])
        t = host_truth(p.stdout)
        p = run([SPTRACE, "export", "--csv", spt, "-o", "-"])
        eq(p.returncode, 0, "export: exit 0 (%s)" % p.stderr.strip()[-300:])
        marks = [row for row in csv.DictReader(io.StringIO(p.stdout)) if row["kind"] == "mark"]
        eq(len(marks), t["marks"], "one mark per INFO event, none for DEBUG ones")
        eq(sum(int(m["arg1"]) for m in marks), t["mark_keys"], "each mark's key is its id field")
        names = {m["name"] for m in marks}
        check(len(names) == 1 and re.match(r"event .*rs_tracing\.rs:\d+$", names.pop() or ""),
              "marks are named by the event's callsite (%s)" % sorted({m["name"] for m in marks}))
    finally:
        os.unlink(spt)


def test_keys():
    """key_field("shard"): with --query-keys a row per value, an integer
    key as tr_sync(N), a text key as tr_decode(even); spans without the
    field in their name's row. Without --query-keys, a row per name."""
    args = ["--", TRACING, "200", "2", "50", "keys"]
    p, s = trace_json(["--query-keys"] + args)
    eq(p.returncode, 0, "keys: exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    if not check(s is not None and "keyed" in t, "keys: JSON written, the host's key rows"):
        return
    r = rows(s)
    for name, n in sorted(t["keyed"].items()):
        eq(r.get(name, {}).get("count"), n, "--query-keys: %s counted" % name)
    eq(r.get("tr_request", {}).get("count"), t["count"]["tr_request"],
       "--query-keys: a span without the field counts under its name")
    eq(sorted(n for n in ("tr_sync", "tr_decode") if n in r), [],
       "--query-keys: keyed spans have no row of their name alone")
    for k, v in s["errors"].items():
        eq(v, 0, "keys: errors.%s" % k)
    p, s = trace_json(args)
    eq(p.returncode, 0, "keys, no --query-keys: exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    if check(s is not None, "keys, no --query-keys: JSON written"):
        r = rows(s)
        for name in NAMES:
            eq(r.get(name, {}).get("count"), t["count"][name],
               "no --query-keys: %s, one row of every key" % name)


def test_example():
    p, s = trace_json(["--", EXAMPLE, "120"])
    eq(p.returncode, 0, "example: exit 0 (%s)" % p.stderr.strip()[-300:])
    m = re.search(r"pages=(\d+) fetch=(\d+) parse=(\d+) store=(\d+)", p.stdout)
    if not check(m and s, "example: its summary line and sptrace's JSON"):
        return
    r = rows(s)
    for i, name in enumerate(("fetch", "parse", "store")):
        eq(r.get(name, {}).get("count"), int(m.group(i + 2)), "example: %s spans counted" % name)
    for k, v in s["errors"].items():
        eq(v, 0, "example: errors.%s" % k)


retry_timing(test_spans)
test_keys()
test_marks()
test_example()
finish()
