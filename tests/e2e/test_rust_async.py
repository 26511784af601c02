# SPDX-License-Identifier: MIT
"""Async queries (sp_probe::Instrument) on a tokio multi-threaded runtime:
tests/rust_async rs_async spawns 1,000 futures "fetch" that each await 3
times (one await is an instrumented inner future "parse"), interleaved on
2 workers and moved between them, and 100 futures "cancelled" dropped
while suspended. The host times every poll with its own clock, inside
and around the probes. sptrace must count each invocation once (not once
per poll), with the sum of its polls as its time: counts exact; total,
self, and the shortest and longest invocation between the host's inner
and outer readings (each poll is a per-event pair, so a trap's cost, which
depends on the machine, lies between them). `sptrace record`
does not watch polls, so the futures fire nothing there (no unbalanced
BEGIN)."""
import json
import os

from sptest import (SPTRACE, async_rust_hosts, between, check, eq, finish, host_truth,
                    require_bpf, retry_timing, rows, run, tmpfile, trace_json)

HOSTS = async_rust_hosts()
require_bpf()
ASYNC = os.path.join(HOSTS, "rs_async")
NAMES = ("fetch", "parse", "cancelled")


def test_async():
    p, s = trace_json(["--", ASYNC, "1000", "2", "150"])
    eq(p.returncode, 0, "exit 0 (%s)" % p.stderr.strip()[-300:])
    t = host_truth(p.stdout)
    eq(t["watched"], True, "the host saw sp:query_poll_end watched from its start")
    eq((t["count"]["fetch"], t["polls"]["fetch"], t["polls"]["parse"]), (1000, 4000, 2000),
       "the host: 1000 fetches of 4 polls (3 awaits), their parse 2 polls")
    check(t["migrated"] > 0, "some futures moved between the workers (%d)" % t["migrated"])
    if not check(s is not None, "JSON written"):
        return
    r = rows(s)
    for name in NAMES:
        q = r.get(name)
        if not check(q is not None, "row %s present" % name):
            continue
        eq(q["count"], t["count"][name], "%s: one count per invocation" % name)
        for k in ("total_ns", "self_ns", "min_ns", "max_ns"):
            between(q[k], t["bounds"][k][name], "%s: %s" % (name, k))
        eq(sum(b["count"] for b in q["hist"]), q["count"],
           "%s: one histogram sample per invocation" % name)
    for k, v in s["errors"].items():
        eq(v, 0, "errors.%s" % k)


def test_record_ignores_polls():
    spt = tmpfile(".spt")
    try:
        p = run([SPTRACE, "record", "-o", spt, "--force", "--", ASYNC, "100", "2", "50"])
        eq(p.returncode, 0, "record: exit 0 (%s)" % p.stderr.strip()[-300:])
        eq(host_truth(p.stdout)["watched"], False,
           "record: sp:query_poll_end not watched, so polls fire nothing")
        p = run([SPTRACE, "summarize", "-f", "json", spt])
        eq(p.returncode, 0, "summarize: exit 0")
        s = json.loads(p.stdout)
        eq([q["name"] for q in s["queries"] if q["name"] in NAMES], [],
           "record: no async rows")
        eq(s["errors"]["unbalanced"], 0, "record: no unbalanced BEGIN")
    finally:
        os.unlink(spt)


retry_timing(test_async)
test_record_ignores_polls()
finish()
