# SPDX-License-Identifier: MIT
"""Limits reached are counted, reported in the table, in JSON and on
stderr, and never corrupt what was kept; sptrace still exits 0 (the exit
status policy of docs/reliability.md). Here: the record ring buffer full,
and the threads map full. (The queries map full and the per-thread stack
limit: tests/e2e/test_unbalanced.py.)

Ring buffer: `sptrace record --ringbuf-size 1` is stopped with SIGSTOP, so
nothing drains the 1 MiB ring, while the host makes ~590,000 events; then
it is continued, in both recording modes. The kernel's aggregation
(--summary) stays exact; recorded + lost accounts for every event the host
made, exactly; per event, the file holds a prefix of the events."""
import collections
import json
import os
import re
import signal
import subprocess

from sptest import (SPTRACE, check, eq, finish, require_bpf, rows, run,
                    tmpfile)

SOAK = os.environ["SOAK_HOST"]
THREADS = 4

require_bpf()


def full_ring(batched):
    """The ring buffer full in one recording mode. Per-event recording
    loses a prefix, event by event; batched recording loses whole batches
    (a smaller later one may still fit), so there the file is no prefix
    but still every event the host made is recorded or counted lost."""
    mode = "ring (batched)" if batched else "ring (per-event)"
    env = dict(os.environ)
    env.pop("SPTRACE_PER_EVENT", None)
    if not batched:
        env["SPTRACE_PER_EVENT"] = "1"
    spt, live = tmpfile(".spt"), tmpfile(".json")
    host = subprocess.Popen([SOAK, "--wait", "--rate", "0", "--threads",
                             str(THREADS), "--iterations", "20000"],
                            stdout=subprocess.PIPE, text=True)
    rec = None
    try:
        check(host.stdout.readline().startswith("ready"), mode + ": host ready")
        rec = subprocess.Popen([SPTRACE, "record", "-v", "--ringbuf-size", "1",
                                "-o", spt, "--summary", live, "-p",
                                str(host.pid)],
                               stderr=subprocess.PIPE, text=True, env=env)
        line = ""
        while "Ctrl-C to stop" not in line:
            line = rec.stderr.readline()
            if not line:
                break
        check("Ctrl-C to stop" in line, mode + ": recording")
        rec.send_signal(signal.SIGSTOP)
        host.send_signal(signal.SIGUSR1)
        truth = json.loads(host.stdout.readline())
        eq(host.wait(timeout=60), 0, mode + ": host exit status")
        rec.send_signal(signal.SIGCONT)
        err = rec.communicate(timeout=60)[1]
        eq(rec.returncode, 0, mode + ": record exits 0 when events were lost")
    finally:
        for p in (host, rec):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    batches = re.search(r"(\d+) events in (\d+) ring-buffer records "
                        r"\((\d+) of them batches\)", err)
    check(batches and (int(batches.group(3)) > 0) == batched,
          "%s: the recording was %s (%r)" % (
              mode, "batched" if batched else "per event",
              batches.group(0) if batches else err[-300:]))

    with open(live) as f:
        ls = json.load(f)
    lost = ls["errors"]["lost"]
    check(lost > 0, mode + ": events lost (%d)" % lost)
    check(("%d events lost" % lost) in err and "--ringbuf-size" in err,
          "%s: record says how many were lost and what to raise (%r)"
          % (mode, err[-400:]))
    r = rows(ls)
    for name, n in truth["queries"].items():
        eq(r[name]["count"], n, "%s: live aggregation exact: %s" % (mode, name))
    eq(r["soak_inner"]["cache_hits"], truth["cache_hits"]["soak_inner"],
       mode + ": live aggregation exact: cache hits")
    eq(ls["errors"]["unbalanced"], 0, mode + ": live aggregation balanced")

    p = run([SPTRACE, "export", "--csv", spt, "-o", "-"])
    eq(p.returncode, 0, mode + ": export exit status")
    events = [l.split(",") for l in p.stdout.splitlines()[1:]]
    # A batched flush's pause is sptrace's bookkeeping, not the host's
    # event: neither recorded nor lost counts it.
    user = [e for e in events if e[3] != "pause"]
    kinds = collections.Counter(e[3] for e in events)
    ends = collections.Counter(e[4] for e in events if e[3] == "query_end")
    hits = collections.Counter(e[4] for e in events if e[3] == "cache_hit")
    check(batched or not kinds["pause"], mode + ": no pause events")
    # Every event the host made, plus one thread-exit event per worker
    # thread (they exit after the burst, into the full ring), is recorded
    # or lost.
    eq(len(user) + lost, truth["events"] + THREADS,
       "%s: recorded (%d) + lost (%d) = the host's events + %d thread exits"
       % (mode, len(user), lost, THREADS))

    p = run([SPTRACE, "summarize", "-f", "json", spt])
    eq(p.returncode, 0, mode + ": summarize exits 0 on a lossy file")
    s = json.loads(p.stdout)
    eq(s["errors"]["lost"], lost, mode + ": summarize JSON reports the "
       "footer's loss")
    if not batched:
        # The kept prefix (the drain stopped, then everything was refused).
        eq(s["errors"]["unbalanced"], 0, mode + ": the kept prefix is "
           "balanced")
        for q in s["queries"]:
            eq(q["count"], ends[q["name"]],
               "%s: summarize %s: one invocation per recorded END"
               % (mode, q["name"]))
            eq(q["cache_hits"], hits[q["name"]],
               "%s: summarize %s: cache hits recorded" % (mode, q["name"]))
    check("lost" in p.stderr, "%s: summarize -f json warns on stderr (%r)" %
          (mode, p.stderr))
    p = run([SPTRACE, "summarize", spt])
    eq(p.returncode, 0, mode + ": summarize table exits 0")
    check(("%d lost events" % lost) in p.stdout + p.stderr,
          mode + ": the table run reports the loss")
    for path in (spt, live):
        os.unlink(path)


full_ring(False)
full_ring(True)

# Threads map full: 32 threads alive at once (paced, 1 s), 16 map entries.
# A thread without an entry loses its intervals: each lost BEGIN is counted
# as threads_map_full and its END as end_without_begin; the threads that
# got an entry are exact, and nothing lands in another thread's stack. So
# counted + threads_map_full = the host's intervals, exactly.
FULL = ["--max-threads", "16", "--", SOAK, "--rate", "64000", "--threads",
        "32", "--seconds", "1"]
out = tmpfile(".json")
p = run([SPTRACE, "-f", "json", "-o", out] + FULL)
eq(p.returncode, 0, "threads full: exit 0")
with open(out) as f:
    s = json.load(f)
os.unlink(out)
truth = json.loads(p.stdout.splitlines()[0])
e = s["errors"]
check(e["threads_map_full"] > 0, "threads full: counted (%d)" %
      e["threads_map_full"])
eq(e["map_full"], e["threads_map_full"], "threads full: map_full is the sum")
eq(e["end_without_begin"], e["threads_map_full"],
   "threads full: the END of each lost interval is end_without_begin")
eq(e["unbalanced"], e["end_without_begin"], "threads full: nothing else "
   "unbalanced")
r = rows(s)
eq(sum(q["count"] for q in s["queries"]) + e["threads_map_full"],
   sum(truth["queries"].values()),
   "threads full: counted + threads_map_full = the host's intervals")
eq(r["soak_inner"]["cache_hits"], truth["cache_hits"]["soak_inner"],
   "threads full: cache hits need no stack: exact")
check("threads_map_full" in p.stderr, "threads full: warned on stderr (%r)"
      % p.stderr)
p = run([SPTRACE] + FULL)
eq(p.returncode, 0, "threads full: table run exit 0")
check("threads_map_full" in p.stdout + p.stderr,
      "threads full: the table run reports it")
finish()
