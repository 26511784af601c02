# SPDX-License-Identifier: MIT
"""`sptrace record` of --query spec lines whose intervals overlap: each line
has its own per-thread stack (track) in BPF, and `sptrace summarize` must
replay each event on the same track, so the recorded summary equals the
live one (`record --summary`) figure for figure, and both equal the host's
own counts. One stack per thread gave a mismatched outer/inner pair and
a's self time without b (no stack=)."""
import json
import os

from sptest import (SPTRACE, check, eq, finish, host_truth, require_bpf,
                    rows, run, tmpfile)

SPEC_HOST = os.environ["SPEC_HOST"]
N = 60
# outer/inner overlap (outer ends first); a/b nest on a shared track;
# a_alone uses a's probes on its own track; txn has two ENDs, each
# counted; rd counts hits at its END; found is a cache line.
SPEC = """sph:outer__start,sph:outer__done,name=arg0
sph:inner__start,sph:inner__done,name=inner:arg0
sph:a__start,sph:a__done,name=a,stack=ab
sph:b__start,sph:b__done,name=b,stack=ab
sph:a__start,sph:a__done,name=a_alone
sph:txn__start,sph:txn__commit@commit|sph:txn__abort,name=txn,outcomes
sph:rd__start,sph:rd__done,name=rd,hit=arg0!=0
sph:read,name=found,kind=cache,if=arg1==1
"""
FIELDS = ("count", "cache_hits", "incr_loads", "blocked_count", "self_ns",
          "total_ns", "min_ns", "max_ns", "incr_load_ns", "blocked_ns",
          "p50_ns", "p90_ns", "p99_ns", "hist")

require_bpf()
spec_file, live, spt = tmpfile(".spec"), tmpfile(".json"), tmpfile(".spt")
with open(spec_file, "w") as f:
    f.write(SPEC)
p = run([SPTRACE, "record", "-o", spt, "--summary", live,
         "--query-file", spec_file, "--", SPEC_HOST, str(N)])
eq(p.returncode, 0, "record: exit 0 (%s)" % p.stderr.strip()[-300:])
t = host_truth(p.stdout)
with open(live) as f:
    a = json.load(f)
q = run([SPTRACE, "summarize", "-f", "json", spt])
eq(q.returncode, 0, "summarize: exit 0 (%s)" % q.stderr.strip()[-300:])
b = json.loads(q.stdout)
ra, rb = rows(a), rows(b)

want = {"outer": N, "a": N, "b": N, "a_alone": N, "txn": t["commits"] + t["aborts"],
        "rd": t["reads"]}
for k in range(3):
    want["inner:%d" % k] = len([i for i in range(N) if i % 3 == k])
for label, r in (("live", ra), ("recorded", rb)):
    eq({n: r.get(n, {}).get("count") for n in want}, want,
       "%s: every line's intervals, as the host counted them" % label)
    g = lambda n, k: r.get(n, {}).get(k, -1)
    eq(g("a", "self_ns"), g("a", "total_ns") - g("b", "total_ns"),
       "%s: stack=ab: a's self time is its total minus b's" % label)
    eq(g("a_alone", "self_ns"), g("a_alone", "total_ns"),
       "%s: own track: a_alone's self time is its total" % label)
    eq((r.get("txn [commit]", {}).get("cache_hits"),
        r.get("txn [txn__abort]", {}).get("cache_hits")),
       (t["commits"], t["aborts"]), "%s: outcomes: commits and aborts" % label)
    eq((r.get("rd", {}).get("cache_hits"), r.get("found", {}).get("cache_hits")),
       (t["found"], t["found"]), "%s: hits at an END and on a cache line" % label)
    eq(g("outer", "self_ns"), g("outer", "total_ns"),
       "%s: overlapping lines do not nest: outer's self time is its total" % label)

eq(sorted(ra), sorted(rb), "same rows live and recorded")
same = True
for name in ra:
    for k in FIELDS:
        if ra[name].get(k) != rb.get(name, {}).get(k):
            same = check(False, "%s.%s: live %r, recorded %r" % (
                name, k, ra[name].get(k), rb.get(name, {}).get(k)))
check(same, "every figure of every row identical live and recorded")
for k in ("end_without_begin", "end_mismatch", "stack_overflow",
          "thread_exit_open", "lost"):
    eq((a["errors"].get(k), b["errors"].get(k)), (0, 0),
       "errors.%s: none live, none recorded" % k)
for f in (spec_file, live, spt):
    os.unlink(f)

# A cache line with hit= counts non-hits too, which the file cannot carry:
# refused before tracing, no file left behind.
spt = tmpfile(".spt")
p = run([SPTRACE, "record", "-o", spt, "--query",
         "sph:read,name=rel:arg0,kind=cache,hit=arg1!=0", "--", SPEC_HOST, "3"])
lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
check(p.returncode != 0 and len(lines) == 1 and
      lines[0].startswith("sptrace: record: --query 'sph:read,") and
      "kind=cache with hit=" in lines[0] and p.stdout == "",
      "record refuses kind=cache with hit=, one line, host not run (rc %d, %r)" % (
          p.returncode, p.stderr.strip()[-300:]))
check(not os.path.exists(spt), "refused: no trace file")

# normalize=pg names rows from every string seen, at the end: refused too.
p = run([SPTRACE, "record", "-o", spt, "--query",
         "sph:query-start,sph:query__done,name=arg0,normalize=pg", "--",
         SPEC_HOST, "3"])
lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
check(p.returncode != 0 and len(lines) == 1 and "normalize=pg" in lines[0]
      and p.stdout == "",
      "record refuses normalize=pg, one line, host not run (rc %d, %r)" % (
          p.returncode, p.stderr.strip()[-300:]))
check(not os.path.exists(spt), "refused: no trace file")
finish()
