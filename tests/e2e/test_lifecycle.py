# SPDX-License-Identifier: MIT
"""What a traced process may do while sptrace -p traces it: exit, be
killed, exec another program, be stopped with SIGSTOP, run thousands of
short-lived threads, or exit and have its PID reused at once. The report
stays exact for what was seen and says what was incomplete. (A thread
exiting with open queries: tests/e2e/test_unbalanced.py.)"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from sptest import (SPTRACE, check, eq, finish, require_bpf, rows, run,
                    tmpfile)

SOAK = os.environ["SOAK_HOST"]
LIFE = os.environ["LIFE_HOST"]


_readers = {}


def readline(stream, timeout=30.0):
    """The next line of a host's output, or "" after timeout. A thread
    reads the pipe: select() cannot see lines already in the file object's
    buffer."""
    q = _readers.get(stream)
    if q is None:
        q = _readers[stream] = queue.Queue()

        def pump():
            for line in iter(stream.readline, ""):
                q.put(line)
            q.put("")           # end of file
        threading.Thread(target=pump, daemon=True).start()
    try:
        return q.get(timeout=timeout)
    except queue.Empty:
        return ""


def wait_for(stream, want, timeout=30.0):
    end = time.time() + timeout
    seen = ""
    while time.time() < end:
        line = readline(stream, max(0.0, end - time.time()))
        if not line:
            break
        seen += line
        if want in line:
            return line, seen
    return None, seen


class Trace:
    """sptrace -p PID -f json, started and waited for."""

    def __init__(self, pid, extra=()):
        self.out = tmpfile(".json")
        # No "Ctrl-C" line with -d: -v says when it traces instead. No
        # time is assumed for attaching.
        verbose = ["-v"] if "-d" in extra else []
        self.p = subprocess.Popen([SPTRACE, "-p", str(pid), "-f", "json",
                                   "-o", self.out] + verbose + list(extra),
                                  stderr=subprocess.PIPE, text=True)
        line, self.head = wait_for(self.p.stderr, "after start" if verbose
                                   else "Ctrl-C to stop", 120)
        check(line, "sptrace attached (%r)" % self.head)
        self.t0 = time.time()

    def finish(self, timeout=60):
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            check(False, "sptrace ended within %d s" % timeout)
        self.elapsed = time.time() - self.t0
        err = ""
        while True:
            line = readline(self.p.stderr, 10)
            if not line:
                break
            err += line
        self.stderr = self.head + err
        data = None
        if os.path.exists(self.out):
            with open(self.out) as f:
                data = json.load(f)
            os.unlink(self.out)
        return data


def host_json(line):
    """The host's truth line; a missing or empty one is a failed check
    (exact() would otherwise have nothing to compare)."""
    truth = json.loads(line) if line and line.startswith("{") else {}
    check(truth.get("queries"), "host printed its counts (%r)" % line[:200])
    return truth


def exact(s, truth, what):
    check(s is not None, "%s: JSON summary written" % what)
    check(truth.get("queries"), "%s: the host's counts to compare" % what)
    r = rows(s) if s else {}
    for name, n in sorted(truth.get("queries", {}).items()):
        eq(r.get(name, {}).get("count"), n, "%s: %s count" % (what, name))
    for name, n in truth.get("cache_hits", {}).items():
        eq(r.get(name, {}).get("cache_hits"), n, "%s: %s cache hits" % (what, name))


def no_errors(s, what, allow=()):
    bad = {k: v for k, v in (s or {}).get("errors", {"missing": 1}).items()
           if v and k not in allow and k not in ("unbalanced", "map_full")}
    eq(bad, {}, "%s: no error counted" % what)


require_bpf()

# 1. The target exits by itself mid-trace: sptrace reports what it saw,
# exactly, and ends with it (long before -d).
host = subprocess.Popen([SOAK, "--wait", "--rate", "0", "--iterations",
                         "20000"], stdout=subprocess.PIPE, text=True)
check(readline(host.stdout).startswith("ready"), "exit: host ready")
t = Trace(host.pid, ["-d", "120"])
host.send_signal(signal.SIGUSR1)
truth = host_json(readline(host.stdout))
host.wait()
s = t.finish()
eq(t.p.returncode, 0, "exit: sptrace exit status")
check(t.elapsed < 60, "exit: sptrace ended with its target, not at -d 120 "
      "(%.1fs)" % t.elapsed)
exact(s, truth, "exit")
no_errors(s, "exit")

# 2. The target is killed (SIGKILL) mid-query: the rows seen are reported,
# and the queries left open are counted as such, not as invocations.
host = subprocess.Popen([SOAK, "--wait", "--rate", "0"],
                        stdout=subprocess.PIPE, text=True)
check(readline(host.stdout).startswith("ready"), "kill: host ready")
t = Trace(host.pid)
host.send_signal(signal.SIGUSR1)
time.sleep(1.0)
host.kill()
host.wait()
s = t.finish()
eq(t.p.returncode, 0, "kill: sptrace exit status")
if check(s is not None, "JSON summary written (test_lifecycle.py:145)"):
    r = rows(s)
    e = s["errors"]
    check(r.get("soak_outer", {}).get("count", 0) > 0, "kill: rows reported")
    # Each of the 4 threads has at most soak_outer+soak_inner open.
    check(e["thread_exit_open"] <= 8, "kill: at most 8 open frames counted "
          "(%d)" % e["thread_exit_open"])
    eq(e["unbalanced"], e["thread_exit_open"],
       "kill: open frames are the only unbalanced events")
    check(r["soak_leaf"]["count"] >= 2 * r["soak_outer"]["count"] - 8,
          "kill: the mix holds (2 leaves per outer, up to the kill)")
    no_errors(s, "kill", allow=("thread_exit_open",))


# 3. exec: before the exec, exact; after it, sptrace says so, naming the
# PID and the new program, and keeps working.
def exec_case(new_argv, what, attached_later):
    host = subprocess.Popen([LIFE, "exec", "500"] + new_argv,
                            stdout=subprocess.PIPE, text=True)
    check(readline(host.stdout).startswith("ready"), "%s: host ready" % what)
    t = Trace(host.pid)
    host.send_signal(signal.SIGUSR1)
    truth = host_json(readline(host.stdout))
    check(readline(host.stdout).startswith("ready"),
          "%s: the new program runs" % what)
    # sptrace looks every 50 ms: let the new program work only once it
    # has said what it saw.
    for want in ["executed"] + (["probe sites in files it mapped"]
                                if attached_later else []):
        line, seen = wait_for(t.p.stderr, want)
        t.head += seen
        check(line, "%s: sptrace says %r" % (what, want))
    host.send_signal(signal.SIGUSR1)
    after = readline(host.stdout)
    host.wait(timeout=30)
    s = t.finish()
    eq(t.p.returncode, 0, "%s: sptrace exit status" % what)
    exact(s, truth, what)
    warn = [l for l in t.stderr.splitlines() if "executed" in l]
    check(len(warn) == 1 and "pid %d" % host.pid in warn[0] and
          os.path.basename(new_argv[0]) in warn[0] and
          warn[0].startswith("sptrace: warning: "),
          "%s: one warning names the pid and the new program (%r)" %
          (what, t.stderr))
    return s, host_json(after)


s, after = exec_case([SOAK, "--wait", "--rate", "0", "--iterations", "100"],
                     "exec other", True)
# The new program's loader announces its files, as for a dlopen, and
# sptrace attaches them within about 50 ms; the test let it work only
# after that, so its rows are exact.
exact(s, after, "exec other: the new program")
no_errors(s, "exec other")
s, after = exec_case([LIFE, "threads", "4", "10"], "exec self", False)
# The same file: its uprobes stay, so the new image's queries are counted,
# exactly (the uprobes belong to the process, not to its old image).
if check(s is not None, "JSON summary written (test_lifecycle.py:202)"):
    eq(rows(s).get("life_thread", {}).get("count"),
       after["queries"]["life_thread"], "exec self: the new image's row")
no_errors(s, "exec self")

# 4. SIGSTOP while traced: sptrace keeps running; -d ends on time; Ctrl-C
# works; the report is exact for what ran.
host = subprocess.Popen([SOAK, "--wait", "--rate", "0", "--iterations",
                         "5000", "--phases", "2"], stdout=subprocess.PIPE,
                        text=True)
check(readline(host.stdout).startswith("ready"), "stop -d: host ready")
t = Trace(host.pid, ["-d", "4"])
host.send_signal(signal.SIGUSR1)
truth = host_json(readline(host.stdout))
host.send_signal(signal.SIGSTOP)
host.send_signal(signal.SIGUSR1)     # phase 2 waits for SIGCONT
s = t.finish()
eq(t.p.returncode, 0, "stop -d: sptrace exit status")
check(t.elapsed < 30, "stop -d: -d ends the trace of a stopped target "
      "(%.1fs for -d 4)" % t.elapsed)
exact(s, truth, "stop -d")
no_errors(s, "stop -d")
with open("/proc/%d/stat" % host.pid) as f:
    state = f.read().rsplit(")", 1)[1].split()[0]
eq(state, "T", "stop -d: sptrace left the target stopped")
host.send_signal(signal.SIGCONT)
phase2 = host_json(readline(host.stdout))
eq(host.wait(timeout=30), 0, "stop -d: the target goes on after SIGCONT")
eq(phase2.get("iterations"), 2 * truth["iterations"],
   "stop -d: the target did its second phase")

host = subprocess.Popen([SOAK, "--wait", "--rate", "0", "--iterations",
                         "5000", "--phases", "2"], stdout=subprocess.PIPE,
                        text=True)
check(readline(host.stdout).startswith("ready"), "stop ^C: host ready")
t = Trace(host.pid)
host.send_signal(signal.SIGUSR1)
readline(host.stdout)
host.send_signal(signal.SIGSTOP)
time.sleep(0.3)
host.send_signal(signal.SIGCONT)     # stopped and continued while traced
host.send_signal(signal.SIGUSR1)
truth = host_json(readline(host.stdout))
host.send_signal(signal.SIGSTOP)
time.sleep(0.2)
t0 = time.time()
t.p.send_signal(signal.SIGINT)
s = t.finish()
eq(t.p.returncode, 0, "stop ^C: sptrace exit status")
check(time.time() - t0 < 10, "stop ^C: Ctrl-C ends the trace of a stopped "
      "target (%.2fs)" % (time.time() - t0))
exact(s, truth, "stop ^C (both phases, stopped and continued between)")
no_errors(s, "stop ^C")
host.send_signal(signal.SIGCONT)
eq(host.wait(timeout=30), 0, "stop ^C: the target exits normally")

# 5. 5,000 short-lived threads through a threads map of 256 entries: exact,
# and the map never fills (an exiting thread's entry is freed).
host = subprocess.Popen([LIFE, "threads", "5000", "20"],
                        stdout=subprocess.PIPE, text=True)
check(readline(host.stdout).startswith("ready"), "threads: host ready")
t = Trace(host.pid, ["--max-threads", "256"])
host.send_signal(signal.SIGUSR1)
truth = host_json(readline(host.stdout, timeout=120))
host.wait(timeout=120)
s = t.finish()
eq(t.p.returncode, 0, "threads: sptrace exit status")
eq(truth.get("threads"), 5000, "threads: the host ran 5,000 threads")
exact(s, truth, "threads")
no_errors(s, "threads")

# 6. PID reuse, made deterministic in a pid namespace: the target (pid X)
# exits, and at once a new instrumented process gets pid X (ns_last_pid).
# sptrace, tracing X, must end with the first process, report its counts
# exactly, and never count the second one.
INNER = r"""
import json, os, signal, subprocess, sys
soak, sptrace, out = sys.argv[1:4]
def waiting():
    p = subprocess.Popen([soak, "--wait", "--rate", "0", "--iterations",
                          "3000"], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    return p
a, c = waiting(), waiting()
# Two targets: sptrace goes on tracing c after a exits.
t = subprocess.Popen([sptrace, "-p", "%d,%d" % (a.pid, c.pid), "-f", "json",
                      "-o", out], stderr=subprocess.PIPE, text=True)
t.stderr.readline()
a.send_signal(signal.SIGUSR1)
truth = json.loads(a.stdout.readline())
a.wait()
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(a.pid - 1))
b = subprocess.Popen([soak, "--rate", "0", "--threads", "1", "--seconds",
                      "1.5"], stdout=subprocess.PIPE, text=True)
tb = json.loads(b.stdout.readline())
b.wait()
t.send_signal(signal.SIGINT)
err = t.communicate(timeout=60)[1]
c.kill()
c.wait()
print(json.dumps({"a": a.pid, "b": b.pid, "truth": truth, "b_truth": tb,
                  "rc": t.returncode, "stderr": err}))
"""
out = tmpfile(".json")
p = run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c",
         INNER, SOAK, SPTRACE, out], timeout=120)
try:
    res = json.loads(p.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    res = {}
    check(False, "pid reuse: the namespace script ran (%r %r)" %
          (p.stdout, p.stderr))
if res:
    eq(res["b"], res["a"], "pid reuse: the second process got the same pid")
    eq(res["rc"], 0, "pid reuse: sptrace exit status")
    with open(out) as f:
        s = json.load(f)
    exact(s, res["truth"], "pid reuse")
    no_errors(s, "pid reuse")
    check("executed" not in res["stderr"],
          "pid reuse: the new process is not taken for an exec (%r)" %
          res["stderr"])
    check(res["b_truth"]["iterations"] > 0, "pid reuse: the second process "
          "ran (%d iterations, none counted)" % res["b_truth"]["iterations"])
if os.path.exists(out):
    os.unlink(out)

# 7. -d without -v: a line says when tracing begins, and the seconds count
# from it (attaching, however slow, is not part of them).
host = subprocess.Popen([SOAK, "--wait", "--rate", "0", "--iterations",
                         "1000"], stdout=subprocess.PIPE, text=True)
check(readline(host.stdout).startswith("ready"), "-d line: host ready")
out = tmpfile(".json")
p = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-d", "1.5", "-f",
                      "json", "-o", out], stderr=subprocess.PIPE, text=True)
line, head = wait_for(p.stderr, "sptrace: tracing", 120)
t_line = time.time()
check(line and "probe sites for 1.5 s" in line,
      "-d: 'sptrace: tracing N probe sites for 1.5 s' (%r)" % head)
p.wait(timeout=60)
t_end = time.time()
eq(p.returncode, 0, "-d line: sptrace exit status")
check(t_end - t_line >= 1.45, "-d: the 1.5 s run after the line (%.2f s)"
      % (t_end - t_line))
with open(out) as f:
    s = json.load(f)
os.unlink(out)
check(1.5e9 <= s["duration_ns"] < 1.5e9 + 1e9,
      "-d: the duration is the 1.5 s traced (%d ns)" % s["duration_ns"])
host.kill()
host.wait()
finish()
