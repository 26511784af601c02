# SPDX-License-Identifier: MIT
"""--query / --query-file: third-party USDT probes in the query table.
Debian's python3.11 (names read from a string argument, hashed in BPF),
libstdc++'s exception probes (fixed names, cache-hit counters), and bad
specs, each refused with one line."""
import json
import os
import signal
import subprocess
import time

from fleet_metrics import scrape, start_serve, stop_serve
from sptest import (SPTRACE, check, cleanup, eq, finish, host_truth,
                    optional, require_bpf, rows, run, tmpfile, trace_json,
                    wait_tracing)

PY = "/usr/bin/python3.11"
THROW = os.environ["THROW_HOST"]
SPEC_HOST = os.environ["SPEC_HOST"]
SPECS = os.environ["SPEC_DIR"]
N = 1000


def trace(args, cmd="trace"):
    return trace_json(args, cmd=None if cmd == "trace" else cmd)


def one_error_line(p, what, needle):
    lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
    check(p.returncode != 0 and len(lines) == 1 and needle in lines[0],
          "%s: one clear line, exit != 0 (rc %d, %r)" % (what, p.returncode, p.stderr.strip()[-300:]))


require_bpf()
if optional(os.access(PY, os.X_OK), "%s (Debian: python3.11)" % PY):
    prog = ("def work(): pass\n"
            "for i in range(%d): work()\n"
            "def rec(n):\n    return rec(n - 1) if n else 0\n"
            "for i in range(10): rec(49)\n"
            "import gc; gc.collect()\n" % N)
    p, s = trace(["--query-file", os.path.join(SPECS, "python3.11.spec"), "--", PY, "-c", prog])
    eq(p.returncode, 0, "python: exit 0 (%s)" % p.stderr.strip()[-200:])
    r = rows(s)
    eq(r["work"]["cache_hits"], N, "python: work() called %d times" % N)
    eq(r["rec"]["cache_hits"], 10 * 50, "python: recursion, every level")
    check(len(r) > 3, "python: other functions have rows too (%d rows)" % len(r))
    check(r["gc"]["count"] >= 1 and r["gc"]["total_ns"] > 0, "python: gc__start..gc__done timed")
    eq(s["errors"]["end_without_begin"], 0, "python: gc pairs balance")
    eq(s["errors"]["name_read_failed"], 0, "python: every name string read")

    # The same through `sptrace record`: its live summary and its events.
    trace_file = tmpfile(".sptrace")
    summ = tmpfile(".json")
    p = run([SPTRACE, "record", "-o", trace_file, "--summary", summ,
             "--query-file", os.path.join(SPECS, "python3.11.spec"), "--", PY, "-c", prog])
    eq(p.returncode, 0, "record: exit 0 (%s)" % p.stderr.strip()[-200:])
    with open(summ) as f:
        eq(rows(json.load(f))["work"]["cache_hits"], N, "record: live summary names the row")
    p, s = trace([trace_file], cmd="summarize")
    eq(rows(s)["work"]["cache_hits"], N, "record: trace events carry the name")
    for f in (trace_file, summ):
        os.unlink(f)

    # name=arg9 of a probe with 3 arguments
    p, s = trace(["--query", "python:function__return,name=arg9,kind=cache", "--", PY, "-c", "pass"])
    one_error_line(p, "name=arg9", "has 3 arguments")
    p, s = trace(["--query", "python:nosuch__probe,name=arg0,kind=cache", "--", PY, "-c", "pass"])
    one_error_line(p, "missing probe", "no probe python:nosuch__probe")

p, s = trace(["--query-file", os.path.join(SPECS, "libstdcxx.spec"), "--", THROW, "250"])
eq(p.returncode, 0, "C++: exit 0 (%s)" % p.stderr.strip()[-200:])
r = rows(s)
eq((r["throw"]["cache_hits"], r["catch"]["cache_hits"]), (250, 250), "C++: thrown and caught")

# ---- Semantics on sys/sdt.h probes whose truth the host prints ----------
SPEC = """# line 1 is a comment
sph:outer__start,sph:outer__done,name=arg0
sph:inner__start,sph:inner__done,name=inner:arg0
sph:a__start,sph:a__done,name=a,stack=ab
sph:b__start,sph:b__done,name=b,stack=ab
sph:txn__start,sph:txn__commit@commit|sph:txn__abort,name=txn,outcomes
sph:read,name=rel:arg0,kind=cache,hit=arg1!=0
sph:read,name=found,kind=cache,if=arg1==1
sph:query-start,sph:query__done,name=arg0,normalize=sql
sph:key,name=arg0,kind=cache,max-rows=10
sph:a__start,sph:a__done,name=a_alone
sph:rd__start,sph:rd__done,name=rd,hit=arg0!=0
sph:kq__start,sph:kq__done,name=arg0,max-rows=10
"""
NS = 40
spec_file = tmpfile(".spec")
with open(spec_file, "w") as f:
    f.write(SPEC)
p, s = trace(["--query-file", spec_file, "--", SPEC_HOST, str(NS)])
eq(p.returncode, 0, "sdt host: exit 0 (%s)" % p.stderr.strip()[-300:])
t = host_truth(p.stdout)
r = rows(s)
e = s["errors"]
eq((e["end_without_begin"], e["end_mismatch"], e["stack_overflow"], e["thread_exit_open"]),
   (0, 0, 0, 0), "sdt host: overlapping lines on their own tracks: no error")
eq(r["outer"]["count"], NS, "overlap: outer intervals")
eq([r["inner:%d" % i]["count"] for i in range(3)],
   [len([i for i in range(NS) if i % 3 == k]) for k in range(3)],
   "overlap: integer names inner:0..2")
eq((r["a"]["count"], r["b"]["count"]), (NS, NS), "stack=ab: a and b")
eq(r["a"]["self_ns"], r["a"]["total_ns"] - r["b"]["total_ns"],
   "stack=ab: a's self time is its total minus b's (nested)")
eq(r["a_alone"]["self_ns"], r["a_alone"]["total_ns"],
   "own track: the same probes' self time is their total")
check(r["a"]["self_ns"] < r["a"]["total_ns"], "stack=ab: b's time left a's self time")
eq(r["txn"]["count"], NS, "alternative ENDs: every transaction closed")
eq((r["txn [commit]"]["cache_hits"], r["txn [txn__abort]"]["cache_hits"]),
   (t["commits"], t["aborts"]), "outcomes: commits and aborts (label, probe name)")
for k in (1, 2, 3):
    want_hits = len([i for i in range(3 * NS) if i % 3 + 1 == k and i % 5 != 0])
    eq((r["rel:%d" % k]["count"], r["rel:%d" % k]["cache_hits"]),
       (t["rel%d" % k], want_hits), "hit=: reads and hits of rel:%d" % k)
eq(r["found"]["cache_hits"], t["found"], "if=: only found reads")
eq((r["rd"]["count"], r["rd"]["cache_hits"]), (t["reads"], t["found"]),
   "hit= on an interval line: reads timed, hits at the END")
eq(r["found"]["count"], 0, "if= on a cache line filters, counts no reads")
eq(r["SELECT abalance FROM t1 WHERE aid = $1 AND name = $2"]["count"], t["selects"],
   "normalize=sql: one SELECT row (dashed probe name accepted)")
eq(r["INSERT INTO h (a, b) VALUES ($1), ($2)"]["count"], t["inserts"],
   "normalize=sql: one INSERT row, lists folded")
keyrows = {n: q for n, q in r.items() if n.startswith("key-")}
eq(len(keyrows), 10, "max-rows=10: ten key rows")
eq(sum(q["cache_hits"] for q in keyrows.values()) + r["key <other>"]["cache_hits"],
   t["keys"], "max-rows: <other> keeps the count exact")
# key-k fired k + 1 times, then once more after the cap was reached: the
# ten admitted keep every event, also those after the cap.
eq({n: q["cache_hits"] for n, q in keyrows.items()},
   {"key-%d" % k: k + 2 for k in range(10)},
   "max-rows: admitted values counted after the cap too (cache line)")
kq = {n: q["count"] for n, q in r.items() if n.startswith("kqy-")}
eq(kq, {"kqy-%d" % k: k + 2 for k in range(10)},
   "max-rows: admitted values counted after the cap too (interval line)")
eq(sum(kq.values()) + r["kq__start <other>"]["count"], t["keys"] - 1,
   "max-rows: interval line, <other> keeps the count exact")
check("events of names beyond max-rows" in p.stderr and "%s:10:" % spec_file in p.stderr,
      "max-rows: the warning names the spec line (%r)" % p.stderr.strip()[-300:])

# 256-byte names: a 300-byte string is cut at 255; digits normalized, in
# BPF: the keys make one row there, so two rows (that and the long name)
# fit max-rows=2 and nothing goes to <other>.
p, s = trace(["--query", "sph:key,name=arg0,kind=cache,normalize=digits,max-rows=2",
              "--", SPEC_HOST, "3"])
r = rows(s)
eq(r.get("L" * 255, {}).get("cache_hits"), 1, "a 300-byte name keeps 255 bytes")
eq(r["key-?"]["cache_hits"], host_truth(p.stdout)["keys"] - 1, "normalize=digits: one key row")
eq(sorted(n for n in r if n.endswith("<other>")), [],
   "normalize=digits folds in BPF: no value beyond max-rows=2")

# A line whose END comes first: its warning names the line.
with open(spec_file, "w") as f:
    f.write("\n\nsph:outer__done,sph:outer__start,name=reversed\n")
p, s = trace(["--query-file", spec_file, "--", SPEC_HOST, "5"])
check("%s:3: 'sph:outer__done,sph:outer__start,name=reversed': 1 ENDs without a BEGIN" % spec_file
      in p.stderr, "per-line warning names file:line (%r)" % p.stderr.strip()[-300:])
os.unlink(spec_file)

# A spec that matches nothing names the spec and the providers there.
p, s = trace(["--query", "nope:x__start,nope:x__done,name=x", "--", SPEC_HOST, "1"])
one_error_line(p, "no match", "--query 'nope:x__start,nope:x__done,name=x': no probe nope:x__start")
check("their providers: sph" in p.stderr, "no match: names the file's providers")

for bad, needle in [
        ("libstdcxx:throw,name=throw", "kind=cache"),
        ("libstdcxx-throw,name=x,kind=cache", "not PROVIDER:PROBE"),
        ("a:b,c:d", "no name="),
        ("a:b,c:d,name=arg12", "no such argument"),
        ("a:b,c:d,name=x,kind=sleepy", "unknown kind"),
        ("a:b,c:d,name=x,kind=cache", "one probe"),
        ("nope:begin,nope:end,name=arg0", "no probe nope:begin"),
        ("a:b,c:d|,name=x", "an empty END"),
        ("a:b,c:d,name=x,if=arg1~2", "unknown comparison"),
        ("a:b,c:d,name=x,hit=argx", "expected argN OP NUMBER"),
        ("a:b,c:d,name=x,normalize=sql", "normalize= needs name=argN"),
        ("a:b,c:d,name=arg0,max-rows=0", "max-rows=0"),
        ("a:b,c:d,name=x,stack=-", "stack=-"),
        ("a:b,name=x,kind=cache,outcomes", "outcomes, stack= and serial need"),
        ("a:b@l,c:d,name=x", "@LABEL names an END")]:
    p, s = trace(["--query", bad, "--", THROW, "1"])
    one_error_line(p, "bad spec %r" % bad, needle)


def loaded_programs(pid):
    """The names of the BPF programs process pid holds: the prog_id of
    each of its program and link descriptors (fdinfo), named by bpftool."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                ids |= {int(l.split()[1]) for l in f if l.startswith("prog_id:")}
        except OSError:
            pass
    p = run(["bpftool", "-j", "prog", "show"])
    if p.returncode:
        return None
    return {g.get("name") for g in json.loads(p.stdout) if g.get("id") in ids}


def test_binaries_without_sp():
    """-b files without sp probes (a third-party provider's, traced by
    --query): the sp probes' programs (sp_event, the batched family) are
    not loaded, so not verified (issue #25), and the line still counts."""
    out = tmpfile(".json")
    sp = None
    try:
        sp = subprocess.Popen([SPTRACE, "-b", SPEC_HOST, "--query",
                               "sph:outer__start,sph:outer__done,name=arg0",
                               "-f", "json", "-o", out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        wait_tracing(sp)
        progs = loaded_programs(sp.pid)
        if check(progs is not None, "bpftool lists sptrace's programs"):
            eq(sorted(progs & {"sp_event", "sp_flush", "sp_tsc", "sp_batch_feed"}), [],
               "-b without sp probes: no sp program loaded (%s)" % sorted(progs))
            check("sp_spec_begin" in progs, "-b: the --query programs loaded")
        t = host_truth(run([SPEC_HOST, "20"]).stdout)
        sp.send_signal(signal.SIGINT)
        _, err = sp.communicate(timeout=120)
        eq(sp.returncode, 0, "-b without sp probes: exit 0 (%s)" % err.strip()[-300:])
        with open(out) as f:
            r = rows(json.load(f))
        eq(r.get("outer", {}).get("count"), t["n"],
           "-b without sp probes: the line counts the host's intervals")
    finally:
        cleanup(sp, out)


test_binaries_without_sp()
# serve reads the maps at every scrape: a line's warning (here its <other>
# row growing at each run of the host) is said once a minute at most, not
# at every read (before: the same warning at each of them).
serve, url = start_serve(["-b", SPEC_HOST, "--query",
                          "sph:key,name=arg0,kind=cache,max-rows=2"])
for i in range(4):
    subprocess.run([SPEC_HOST, "50"], stdout=subprocess.DEVNULL, timeout=60)
    scrape(url)
    time.sleep(0.2)
stop_serve(serve)
warned = [l for l in serve.stderr.read().splitlines() if "<other> row" in l]
eq(len(warned), 1, "serve: the <other> warning once in 4 scrapes (%r)" % warned)
finish()
