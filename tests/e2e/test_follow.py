# SPDX-License-Identifier: MIT
"""--follow -- CMD: the processes CMD forks and execs are traced, exactly,
per process (--per-pid) and in total: children that only fork, a
grandchild, a child that execs another dynamically linked program which
then dlopen()s a plugin, a child that execs a static program, and a child
that outlives CMD and its own first thread. Without --follow only CMD
counts. Processes outside the tree that run the same files do not count.
The exit status is CMD's."""
import json
import os
import signal
import subprocess
import time

from sptest import (SPTRACE, check, eq, finish, require_bpf, run, tmpfile,
                    trace_json)

HOST = os.environ["FOLLOW_HOST"]
STATIC = os.environ["FOLLOW_STATIC"]
DLOPEN = os.environ["DLOPEN_HOST"]
PLUGIN = os.environ["DL_PLUGIN"]
N, K = 3, 10

require_bpf()


def truths(stdout):
    """The {"pid", "name", "count"} lines the host processes printed."""
    return [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]


def per_pid(data):
    return {(q["pid"], q["name"]): q["count"] for q in data["queries"]}


def totals(data):
    t = {}
    for q in data["queries"]:
        t[q["name"]] = t.get(q["name"], 0) + q["count"]
    return t


tree = [HOST, str(N), str(K), DLOPEN, PLUGIN, STATIC]
# What the tree runs, by name, over all its processes.
want = {"f_parent": 3, "f_child": K * N * (N + 1) // 2, "f_grand": 7,
        "f_static": 6, "before_dlopen": 1, "plugin_query": 5}

# 1. The whole tree, per process.
for attempt in range(3):
    p, data = trace_json(["--follow", "--per-pid", "--"] + tree, timeout=60)
    eq(p.returncode, 3, "follow: sptrace exits with CMD's status (%s)"
       % p.stderr.strip()[-300:])
    if not data:
        check(False, "follow: JSON written")
        break
    got = per_pid(data)
    t = truths(p.stdout)
    # dlopen_host prints no truth line: its pid is the one whose rows are
    # plugin_query and before_dlopen.
    expect = {(x["pid"], x["name"]): x["count"] for x in t}
    dl_pids = {pid for (pid, name) in got if name == "plugin_query"}
    eq(len(dl_pids), 1, "follow: one process ran the dlopen()ed plugin")
    for pid in dl_pids:
        expect[(pid, "plugin_query")] = 5
        expect[(pid, "before_dlopen")] = 1
    eq(len(t), 1 + N + 1 + 1, "follow: every host process reported")
    eq(got, expect, "follow --per-pid: every (process, query) count exact")
    eq(totals(data), want, "follow: totals per query exact")
    eq(len({pid for pid, _ in got}), 1 + N + 1 + 1 + 1,
       "follow: rows of 7 processes (CMD, %d children, grandchild, exec'd dynamic, exec'd static)" % N)
    eq(data["errors"]["end_without_begin"], 0, "follow: no END without BEGIN")
    eq(data["errors"]["name_read_failed"], 0,
       "follow: every name read, also of processes gone before the end")

# 2. Without --follow: only CMD's own queries.
p, data = trace_json(["--per-pid", "--"] + tree, timeout=60)
eq(p.returncode, 3, "no follow: exit status is CMD's")
cmd_pid = [x["pid"] for x in truths(p.stdout) if x["name"] == "f_parent"]
eq(per_pid(data) if data else None, {(cmd_pid[0], "f_parent"): 3},
   "no follow: only CMD's queries are counted")

# 3. A descendant that outlives CMD, whose first thread exits first: the
# session waits for it, and its queries after CMD's exit count.
p, data = trace_json(["--follow", "--per-pid", "--", HOST, "--orphan", "9"],
                     timeout=60)
eq(p.returncode, 5, "orphan: exit status is CMD's, not the descendant's")
t = truths(p.stdout)
eq(len(t), 1, "orphan: the descendant ran to its end")
if t and data:
    eq(per_pid(data), {(t[0]["pid"], "f_orphan"): 9},
       "orphan: its queries, after CMD exited, counted exactly")

# 4. Processes outside the tree running the same files do not count: an
# untraced dlopen_host maps the same plugin (attached for every process
# once the tree's dlopen_host loaded it) and runs it while the session
# lasts: the shell waits until it is a zombie.
outside = subprocess.Popen([DLOPEN, PLUGIN, "200", "--wait"],
                           stdout=subprocess.PIPE, text=True)
check(outside.stdout.readline().startswith("ready"), "outside: host ready")
script = ("\"$@\"; kill -USR1 {0}; "
          "while [ \"$(cut -d' ' -f3 /proc/{0}/stat)\" != Z ]; do sleep 0.05; done"
          ).format(outside.pid)
p, data = trace_json(["--follow", "--", "sh", "-c", script, "sh"] + tree,
                     timeout=60)
eq(outside.wait(timeout=30), 0, "outside: the untraced host ran to its end")
eq(p.returncode, 0, "outside: exit status is the shell's")
eq(totals(data) if data else None, want,
   "outside: totals are the tree's only (through sh -c, a second exec)")

# 5. sptrace record --follow: the same events, in the trace file.
trace = tmpfile(".sptrace")
p = run([SPTRACE, "record", "--follow", "-o", trace, "--"] + tree, timeout=60)
eq(p.returncode, 3, "record: exit status is CMD's (%s)" % p.stderr.strip()[-200:])
summary = tmpfile(".json")
s = run([SPTRACE, "summarize", "-f", "json", "-o", summary, trace])
eq(s.returncode, 0, "record: summarize reads the trace")
if os.path.exists(summary):
    with open(summary) as f:
        eq(totals(json.load(f)), want, "record --follow: totals exact")
    os.unlink(summary)
if os.path.exists(trace):
    os.unlink(trace)

# 6. Clear errors.
# (-p PID --follow is supported: tests/e2e/test_postgres.py.)
p = run([SPTRACE, "--follow", "-b", HOST, "-d", "0.1"])
eq(p.returncode, 1, "follow -b: refused")
check("--follow" in p.stderr and "-- CMD" in p.stderr and "-p PID" in p.stderr,
      "follow -b: says it needs a command or -p (%r)" % p.stderr.strip())
p = run([SPTRACE, "--follow", "--mem", "--", HOST, "--leaf", "1"])
eq(p.returncode, 1, "follow --mem: refused")
check("--follow" in p.stderr and "mem" in p.stderr,
      "follow --mem: says which option it cannot follow with (%r)"
      % p.stderr.strip())
finish()
