# SPDX-License-Identifier: MIT
"""-b PATH traces every process that runs (or maps) PATH, including those
started after sptrace attached or that exec it later, and names their
queries."""
import json
import os
import signal
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, tmpfile

GT = os.environ["GT_HOST"]
LIB = os.path.join(os.path.dirname(GT), "libgthost.so")
COLD = os.environ["COLD_NAME_HOST"]


def trace_binary(path, runs, *extra):
    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-b", path, "-f", "json", "-o", out] +
                              list(extra),
                              stderr=subprocess.PIPE, text=True)
    check("tracing" in tracer.stderr.readline(), "-b %s: attached" % os.path.basename(path))
    for _ in range(runs):   # each started after sptrace attached
        subprocess.run([GT, "--threads", "1", "2"], stdout=subprocess.DEVNULL,
                       check=True)
        time.sleep(0.3)     # let the scan see it (names)
    tracer.send_signal(signal.SIGINT)
    eq(tracer.wait(timeout=30), 0, "-b: SIGINT ends the trace")
    with open(out) as f:
        s = json.load(f)
    os.unlink(out)
    return s


require_bpf()
s = trace_binary(GT, 3)
r = rows(s)
eq(r.get("inner", {}).get("count"), 3 * 4, "-b exe: inner of 3 processes started later")
eq(r.get("outer", {}).get("count"), 3 * 2, "-b exe: outer of 3 processes")
check("lib_query" not in r, "-b exe: the library's probes are not the exe's")
check(not any(n.startswith("<") for n in r), "-b exe: every query named (%s)" % sorted(r))

s = trace_binary(GT, 3, "--per-pid")
inner = [q for q in s["queries"] if q["name"] == "inner"]
eq([q["count"] for q in inner], [4, 4, 4], "--per-pid: one inner row per process")
eq(len({q["pid"] for q in inner}), 3, "--per-pid: three distinct pids")

s = trace_binary(LIB, 2)
r = rows(s)
eq(sorted(r), ["lib_query", "warm_lib_query"], "-b library: only the library's queries")
eq(r.get("lib_query", {}).get("count"), 2 * 2, "-b library: every call")

# Query names in a page BPF cannot read (tests/hosts/cold_name.c), in -b
# processes sptrace may never have snapshotted: the names are located in
# the file at each process's exit (bpf/name_locate.bpf.c) and read from the
# -b file sptrace holds open. First a process sptrace's scan of /proc
# already knew (a shell, 0.6 s) that then execs the file and lives 0.4 s:
# the scan may see the exec in time, or not (a loaded machine); then
# processes that exit at once, which no scan sees. Four of each. Without
# the locator at exits: unreadable names (the second kind always, the
# first when the scan is late); without the file held: the second kind.
def cold_run(argv):
    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-b", COLD, "-f", "json", "-o", out],
                              stderr=subprocess.PIPE, text=True)
    check("tracing" in tracer.stderr.readline(), "-b cold_name: attached")
    for _ in range(4):
        subprocess.run(argv, check=True)
    time.sleep(0.3)
    tracer.send_signal(signal.SIGINT)
    eq(tracer.wait(timeout=30), 0, "-b cold_name: SIGINT ends the trace")
    with open(out) as f:
        s = json.load(f)
    os.unlink(out)
    return rows(s), s["errors"]["name_read_failed"]


r, failed = cold_run(["sh", "-c", 'sleep 0.6; exec "$0" 3 400', COLD])
eq(sorted((n, q.get("count")) for n, q in r.items()), [("cold_query", 12)],
   "-b: a known process that execs the file: its names")
r, failed = cold_run([COLD, "3", "0"])
eq(sorted((n, q.get("count")) for n, q in r.items()), [("cold_query", 12)],
   "-b: processes that exit before any scan: their names, located at exit")
eq(failed, 0, "-b: processes that exit before any scan: no name_read_failed")

p = subprocess.run([SPTRACE, "-b", "/nonexistent/prog"], capture_output=True, text=True)
check(p.returncode != 0 and "/nonexistent/prog" in p.stderr, "-b missing file: clear error")
p = subprocess.run([SPTRACE, "-b", "/bin/true", "-d", "1"], capture_output=True, text=True)
check(p.returncode != 0 and "no sp probes" in p.stderr, "-b file without probes: clear error")
finish()
