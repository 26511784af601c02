# SPDX-License-Identifier: MIT
"""An instrumented library loaded and unloaded over and over
(tests/hosts/dl_cycle_host: 100 queries per load), traced batched and
per-event, launched and with -p: every query counted, against the host's
own count; the library's rings unmapped at each unload (the host's RSS as
flat as untraced); its query names readable once it is gone, even when each
copy is mapped at a new address. And a process that exits while threads
still run the library's batched probes exits cleanly (probes/sp_probe.h
unmaps other threads' rings at a dlclose only).

Per-event runs make 1,000 cycles, not 10,000: a per-event site traps at
every event (200 a cycle), and a launched command also stops at each of
the loader's 4 events a cycle."""
import json
import os
import signal
import subprocess
import time

from sptest import (SPTRACE, check, eq, finish, require_bpf, rows, tmpfile,
                    wait_tracing)

HOST = os.environ["DL_CYCLE_HOST"]
LIB = os.environ["DL_CYCLE_LIB"]
EXIT_DLOPEN = os.environ["DL_EXIT_DLOPEN"]
EXIT_LINKED = os.environ["DL_EXIT_LINKED"]
NAMES = ["dlq%d%d" % (i, j) for i in range(10) for j in range(10)]
# RSS growth allowed beyond the untraced run's: the rings of 10,000 unloads
# left mapped were 40 MB.
RSS_SLACK_KB = 256

require_bpf()


def host_lines(text):
    """The host's "rss_kb N" and final "cycles ... rss_kb N ..." lines."""
    first = last = None
    for line in text.splitlines():
        w = line.split()
        if w[:1] == ["rss_kb"]:
            first = int(w[1])
        elif w[:1] == ["cycles"]:
            last = dict(zip(w[0::2], w[1::2]))
    return first, last


def check_counts(name, summary, cycles, threads=1):
    r = rows(summary)
    bad = [q for q in NAMES if r.get(q, {}).get("count") != cycles * threads]
    eq(bad, [], "%s: each of the 100 library queries counted %d times" % (
        name, cycles * threads))
    eq(r.get("dl_cycle", {}).get("count"), cycles,
       "%s: the host's own query, once a cycle" % name)
    odd = sorted(q for q in r if q not in NAMES and q != "dl_cycle")
    eq(odd, [], "%s: no other row (every name read)" % name)
    errs = {k: v for k, v in summary.get("errors", {}).items() if v}
    eq(errs, {}, "%s: nothing lost, unbalanced or full" % name)


def untraced_growth(cycles, extra=()):
    p = subprocess.run([HOST, LIB, str(cycles)] + list(extra),
                       capture_output=True, text=True, timeout=120)
    first, last = host_lines(p.stdout)
    return int(last["rss_kb"]) - first


def launch(name, cycles, extra=(), env=None):
    out = tmpfile(".json")
    t0 = time.time()
    p = subprocess.run([SPTRACE, "-f", "json", "-o", out, "--", HOST, LIB,
                        str(cycles)] + list(extra), capture_output=True,
                       text=True, timeout=300, env=env)
    eq(p.returncode, 0, "%s: exit 0 (%s)" % (name, p.stderr.strip()[-300:]))
    with open(out) as f:
        summary = json.load(f)
    os.unlink(out)
    first, last = host_lines(p.stdout)
    print("     %s: %.1f s" % (name, time.time() - t0))
    return summary, first, last


def attach(name, cycles, extra=(), env=None):
    """dl_cycle_host --wait: the library loaded, sptrace -p attached, then
    the cycles."""
    t0 = time.time()
    host = subprocess.Popen([HOST, LIB, str(cycles), "--wait"] + list(extra),
                            stdout=subprocess.PIPE, text=True)
    first = int(host.stdout.readline().split()[1])
    check(host.stdout.readline().startswith("ready"), "%s: host ready" % name)
    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json",
                               "-o", out], stderr=subprocess.PIPE, text=True,
                              env=env)
    seen = wait_tracing(tracer)
    check(seen and "Ctrl-C to stop" in seen[-1], "%s: attached" % name)
    host.send_signal(signal.SIGUSR1)
    text = host.stdout.read()
    host.wait(timeout=300)
    err = tracer.stderr.read()
    eq(tracer.wait(timeout=60), 0, "%s: sptrace ends with the host (%s)" % (
        name, err.strip()[-300:]))
    with open(out) as f:
        summary = json.load(f)
    os.unlink(out)
    _, last = host_lines(text)
    print("     %s: %.1f s" % (name, time.time() - t0))
    return summary, first, last


def check_rss(name, first, last, base):
    grew = int(last["rss_kb"]) - first
    check(grew <= max(base, 0) + RSS_SLACK_KB,
          "%s: RSS %d -> %s KiB (+%d), untraced +%d" % (
              name, first, last["rss_kb"], grew, base))


per_event = dict(os.environ, SPTRACE_PER_EVENT="1")
base = untraced_growth(10000)

s, first, last = launch("launch, batched", 10000)
eq(s.get("events"), "batched", "launch, batched: batched events")
eq(int(last["queries"]), 1000000, "launch, batched: the host's count")
check_counts("launch, batched", s, 10000)
check_rss("launch, batched", first, last, base)

# Threads grow glibc's arenas untraced too: the base is the same shape's.
s, first, last = launch("launch, batched, 3 threads", 2000, ["--threads", "2"])
check_counts("launch, batched, 3 threads", s, 2000, threads=3)
check_rss("launch, batched, 3 threads", first, last,
          untraced_growth(2000, ["--threads", "2"]))

s, first, last = attach("-p, batched", 10000)
eq(int(last["queries"]), 1000000, "-p, batched: the host's count")
check_counts("-p, batched", s, 10000)
check_rss("-p, batched", first, last, base)

s, first, last = launch("launch, per-event", 1000, env=per_event)
eq(s.get("events"), "per-event", "launch, per-event: per-event")
check_counts("launch, per-event", s, 1000)
check_rss("launch, per-event", first, last, base)

s, first, last = attach("-p, per-event", 1000, env=per_event)
check_counts("-p, per-event", s, 1000)

# Each copy at a new address (a page mapped before each load): 100 new
# name pointers per cycle, read by BPF or located in the file, never at an
# address the snapshot of the first copy names wrongly or not at all.
s, first, last = attach("-p, per-event, moving", 60, ["--shift"], env=per_event)
check_counts("-p, per-event, moving", s, 60)
s, first, last = attach("-p, batched, moving", 60, ["--shift"])
check_counts("-p, batched, moving", s, 60)

# No tracer: the unload at exit must not unmap rings under running threads
# (a dlopen()ed library tells exit from dlclose by an exit handler, one
# loaded at start never frees other threads' rings).
for what, argv in (("dlopen()ed", [EXIT_DLOPEN, LIB]),
                   ("a dependency", [EXIT_LINKED])):
    died = [p.returncode for p in
            (subprocess.run(argv, timeout=30) for _ in range(30))
            if p.returncode != 0]
    eq(died, [], "exit with threads in the library's probes, %s: 30 runs exit 0"
       % what)
finish()
