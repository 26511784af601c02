# SPDX-License-Identifier: MIT
"""--query / --query-file: third-party USDT probes in the query table.
Debian's python3.11 (names read from a string argument, hashed in BPF),
libstdc++'s exception probes (fixed names, cache-hit counters), and bad
specs, each refused with one line."""
import json
import os

from sptest import (SPTRACE, check, eq, finish, optional, require_bpf, rows,
                    run, tmpfile, trace_json)

PY = "/usr/bin/python3.11"
THROW = os.environ["THROW_HOST"]
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

for bad, needle in [
        ("libstdcxx:throw,name=throw", "kind=cache"),
        ("libstdcxx-throw,name=x,kind=cache", "not PROVIDER:PROBE"),
        ("a:b,c:d", "no name="),
        ("a:b,c:d,name=arg12", "no such argument"),
        ("a:b,c:d,name=x,kind=sleepy", "unknown kind"),
        ("a:b,c:d,name=x,kind=cache", "one probe"),
        ("nope:begin,nope:end,name=arg0", "no probe nope:begin")]:
    p, s = trace(["--query", bad, "--", THROW, "1"])
    one_error_line(p, "bad spec %r" % bad, needle)
finish()
