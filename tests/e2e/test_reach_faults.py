# SPDX-License-Identifier: MIT
"""Faults while reaching targets: a clear error or warning, never a crash,
a hang or a half-attached file.

- A PID that exits while sptrace attaches (short-lived targets in a loop).
- A PID reused by another process before sptrace reads it (made
  deterministic in a PID namespace with ns_last_pid), and the same steps
  without reuse as the control.
- An executable replaced on disk (rename over it) before or after
  attaching: the running process is traced through the mapped inode; with
  -b, the new file is attached when it appears, with a warning.
- Libraries whose path holds spaces, or really ends in " (deleted)".
- A library whose attachment fails half-way: the links already made for
  it are rolled back (counted as sptrace's open link fds) and its ENDs are
  not counted as unbalanced.
- --query naming a missing probe or argument.
- --func on a Go binary (a C program carrying .go.buildinfo and
  runtime.main, as every Go executable does): refused before it runs."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from sptest import (SPTRACE, check, eq, finish, require_bpf, run, tmpfile,
                    trace_json)

FOLLOW = os.environ["FOLLOW_HOST"]
ENABLED = os.environ["ENABLED_HOST"]
DLOPEN = os.environ["DLOPEN_HOST"]
PLUGIN = os.environ["DL_PLUGIN"]
BAD_PLUGIN = os.environ["BAD_PLUGIN"]
GO = os.environ["GO_LOOKALIKE"]

require_bpf()


def counts(data):
    t = {}
    for q in data["queries"]:
        t[q["name"]] = t.get(q["name"], 0) + q["count"]
    return t


def sanitizer_clean(stderr, what):
    check("Sanitizer" not in stderr and "runtime error" not in stderr,
          "%s: no sanitizer report" % what)


def read_json(path):
    """The JSON sptrace wrote at path (then removed), or None."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
    finally:
        if os.path.exists(path):
            os.unlink(path)


def wait_stderr(proc, needle, timeout=20.0):
    """Reads proc.stderr lines until one holds needle; returns it, or None
    at EOF. A watchdog kills proc after `timeout` (a line never coming must
    not hang the test). Plain readline(): select() on a buffered text pipe
    misses lines already buffered."""
    dog = threading.Timer(timeout, proc.kill)
    dog.start()
    seen = []
    try:
        for line in iter(proc.stderr.readline, ""):
            seen.append(line)
            if needle in line:
                return line
    finally:
        dog.cancel()
    print("note: stderr: %r" % "".join(seen))
    return None


def guard_prog_ids():
    """The site guard's no-op programs (site_guard.c: "sp_site_guard")."""
    p = run(["bpftool", "-j", "prog", "show"])
    return {x["id"] for x in json.loads(p.stdout or "[]")
            if x.get("name") == "sp_site_guard"}


def bpf_link_fds(pid):
    """BPF links and perf-event uprobes sptrace holds open, but for the site
    guard's: a thread closes those a moment after the real links hold the
    sites (site_guard.c, close_later()), so their count depends on time."""
    guards = guard_prog_ids()
    n = 0
    d = "/proc/%d/fd" % pid
    for fd in os.listdir(d):
        try:
            t = os.readlink(os.path.join(d, fd))
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = f.read()
        except OSError:
            continue
        if t not in ("anon_inode:bpf_link", "anon_inode:[perf_event]"):
            continue
        m = re.search(r"^prog_id:\s*(\d+)", info, re.M)
        n += not (m and int(m.group(1)) in guards)
    return n


def proc_state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def maps_has(pid, path):
    with open("/proc/%d/maps" % pid) as f:
        return path in f.read()


# 1. Targets that exit while sptrace attaches: one clear line, or a normal
# report; never a crash or a hang. An error is right only for a target that
# was gone before sptrace gave up: sptrace must have run at least as long
# as the target lived (MS after it was started). Attaching takes about
# 0.1 s on the idle VM (it took 2-4 s before the BPF programs were split by
# family); 6 and 12 s are there so that some target outlives the attach
# however loaded the machine is.
outcomes = {"report": 0, "error": 0}
for ms in [0, 5, 20, 100, 300, 600, 900, 1200, 1500, 2000, 3000, 6000, 12000]:
    t_host = time.time()
    host = subprocess.Popen([FOLLOW, "--live", str(ms)], stdout=subprocess.PIPE,
                            text=True)
    out = tmpfile(".json")
    p = run([SPTRACE, "-p", str(host.pid), "-f", "json", "-o", out], timeout=60)
    t_end = time.time()
    host.wait(timeout=30)
    truth = json.loads(host.stdout.read())["count"]
    what = "exit during attach (%d ms)" % ms
    sanitizer_clean(p.stderr, what)
    lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
    if p.returncode == 0:
        outcomes["report"] += 1
        data = read_json(out)
        got = counts(data).get("f_live", 0) if data else -1
        check(0 <= got <= truth, "%s: report, %d of the %d queries counted"
              % (what, got, truth))
        check(data and data["errors"]["end_without_begin"] <= 1,
              "%s: at most one END before its BEGIN was attached" % what)
    else:
        outcomes["error"] += 1
        if os.path.exists(out):
            os.unlink(out)
        check(t_end - t_host >= ms / 1000.0, "%s: an error only once the "
              "target is gone (sptrace ended %.0f ms after its start)" %
              (what, 1000 * (t_end - t_host)))
        check(p.returncode == 1 and len(lines) == 1 and
              re.search(r"pid %d( \([^)]*\))?: (exited|no such process|"
                        r"a zombie: it has exited)" % host.pid, lines[0]),
              "%s: exit 1 with one clear line (rc %d, %r)"
              % (what, p.returncode, p.stderr.strip()))
print("note: exit-during-attach outcomes: %r" % outcomes)
check(outcomes["report"] > 0, "exit during attach: the longer-lived targets "
      "were traced (%r)" % outcomes)

# A zombie (exited, not reaped): its pid exists, its memory does not.
z = subprocess.Popen([FOLLOW, "--live", "0"], stdout=subprocess.DEVNULL)
while proc_state(z.pid) != "Z":
    time.sleep(0.01)
p = run([SPTRACE, "-p", str(z.pid), "-d", "1"])
check(p.returncode == 1 and "pid %d (follow_host): a zombie: it has exited"
      % z.pid in p.stderr and len(p.stderr.splitlines()) == 1,
      "zombie: one clear line (%r)" % p.stderr.strip())
# With a live target before it: the whole session is refused before
# anything is loaded, so the live target is never attached: its
# semaphores never rise.
live = subprocess.Popen([ENABLED], stdout=subprocess.PIPE, text=True)
check(live.stdout.readline().startswith("sema=0"), "live + zombie: untraced")
p = run([SPTRACE, "-p", "%d,%d" % (live.pid, z.pid), "-d", "1"])
check(p.returncode == 1 and "pid %d (follow_host): a zombie" % z.pid in
      p.stderr and len(p.stderr.splitlines()) == 1,
      "live + zombie: refused with one clear line (%r)" % p.stderr.strip())
sanitizer_clean(p.stderr, "live + zombie")
time.sleep(0.5)
live.kill()
lines = live.communicate()[0].split()
check(lines == [], "live + zombie: the live target was never attached: its "
      "semaphores stayed 0 (%r)" % lines)
z.wait()

# 2. PID reuse, deterministic in a fresh PID namespace: sptrace is started
# (stopped before its exec) while PID X is a dummy; the dummy exits and
# ns_last_pid makes an instrumented host the new X; then sptrace runs.
INNER = r'''
import json, os, signal, subprocess, sys, time
sptrace, host = sys.argv[1:3]
res = {}

def state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]

def stopped_sptrace(pid):
    sh = subprocess.Popen(["sh", "-c", 'kill -STOP $$; exec "$0" -p "$1" -d 0.3 -f json',
                           sptrace, str(pid)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    while state(sh.pid) != "T":
        time.sleep(0.01)
    return sh

dummy = subprocess.Popen(["sleep", "100"])
x = dummy.pid
sh = stopped_sptrace(x)
dummy.kill()
dummy.wait()
time.sleep(0.05)    # a later clock tick than sptrace's start
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(x - 1))
h = subprocess.Popen([host], stdout=subprocess.DEVNULL)
res["reused"] = h.pid == x
os.kill(sh.pid, signal.SIGCONT)
out, err = sh.communicate(timeout=60)
res["reuse"] = [sh.returncode, err]
h.kill()
h.wait()

h = subprocess.Popen([host], stdout=subprocess.DEVNULL)
time.sleep(0.05)
sh = stopped_sptrace(h.pid)
os.kill(sh.pid, signal.SIGCONT)
out, err = sh.communicate(timeout=60)
res["control"] = [sh.returncode, err, out]
h.kill()
h.wait()
print(json.dumps(res))
'''
inner = tmpfile(".py")
with open(inner, "w") as f:
    f.write(INNER)
p = run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, inner,
         SPTRACE, ENABLED], timeout=120)
os.unlink(inner)
try:
    res = json.loads(p.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    res = None
    check(False, "reuse: namespace helper ran (%r)" % p.stderr[-300:])
if res:
    check(res["reused"], "reuse: the host got the dummy's PID (ns_last_pid)")
    rc, err = res["reuse"]
    lines = [l for l in err.splitlines() if l.startswith("sptrace:")]
    check(rc == 1 and len(lines) == 1 and "PID was reused" in lines[0],
          "reuse: refused with one clear line (rc %s, %r)" % (rc, err.strip()))
    rc, err, out = res["control"]
    eq(rc, 0, "reuse control: a host older than sptrace is traced (%r)"
       % err.strip()[-200:])
    try:
        n = sum(q["count"] for q in json.loads(out)["queries"])
    except ValueError:
        n = -1
    check(n > 0, "reuse control: its queries counted (%d)" % n)

# Not a reuse: a shell starts the target, then execs sptrace (which keeps
# the shell's older start time); the target is sptrace's own child. The
# shell waits for the child's exec: until then the child is a shell too,
# with no sp probes, which sptrace refuses (a CI run under load caught it
# so).
p = run(["sh", "-c", '"$0" >/dev/null 2>&1 & c=$!; echo "child $c"; '
         'e=$(readlink -f "$0"); '
         'while [ "$(readlink /proc/$c/exe)" != "$e" ]; do sleep 0.01; done; '
         'exec "$1" -p $c -d 0.3', ENABLED, SPTRACE], timeout=60)
child = [int(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("child ")]
for pid in child:
    os.kill(pid, signal.SIGKILL)
eq(p.returncode, 0, "exec'd sptrace: its child older than the exec is traced (%r)"
   % p.stderr.strip()[-200:])

# 3. The executable replaced on disk (new file renamed over it), before
# and after attaching: the running process is traced through the mapped
# inode, exactly.
tmpdir = tempfile.mkdtemp(prefix="sptest-reach ")
exe = os.path.join(tmpdir, "dl host")


def replace(path, src):
    shutil.copy(src, path + ".new")
    os.rename(path + ".new", path)


for when in ("before", "after"):
    shutil.copy(DLOPEN, exe)
    host = subprocess.Popen([exe, PLUGIN, "5", "--wait"], stdout=subprocess.PIPE,
                            text=True)
    check(host.stdout.readline().startswith("ready"), "replaced %s: host ready" % when)
    if when == "before":
        replace(exe, DLOPEN)
        check(maps_has(host.pid, exe + " (deleted)"),
              "replaced before: maps names it (deleted)")
    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json", "-o", out],
                              stderr=subprocess.PIPE, text=True)
    check(wait_stderr(tracer, "tracing"), "replaced %s: attached" % when)
    if when == "after":
        replace(exe, DLOPEN)
    host.send_signal(signal.SIGUSR1)
    host.wait(timeout=30)
    err = tracer.stderr.read()
    eq(tracer.wait(timeout=30), 0, "replaced %s: sptrace ends with the target" % when)
    sanitizer_clean(err, "replaced %s" % when)
    data = read_json(out)
    c = counts(data) if data else {}
    eq((c.get("before_dlopen"), c.get("plugin_query")), (1, 5),
       "replaced %s attaching: exact counts" % when)

# -b PATH, then PATH replaced: the new file's processes are traced too,
# after a warning.
binpath = os.path.join(tmpdir, "follow host")
shutil.copy(FOLLOW, binpath)
out = tmpfile(".json")
tracer = subprocess.Popen([SPTRACE, "-b", binpath, "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
check(wait_stderr(tracer, "tracing"), "-b: attached")
truth = 0
h = run([binpath, "--live", "300"])
truth += json.loads(h.stdout)["count"]
replace(binpath, FOLLOW)
warn = wait_stderr(tracer, "replaced on disk")
check(warn and "attached now" in warn, "-b replaced: a warning says so (%r)" % warn)
h = run([binpath, "--live", "300"])
truth += json.loads(h.stdout)["count"]
tracer.send_signal(signal.SIGINT)
err = tracer.stderr.read()
eq(tracer.wait(timeout=30), 0, "-b replaced: exit 0")
data = read_json(out)
eq(sum(counts(data).values()) if data else None, truth,
   "-b replaced: processes of the old and of the new file counted exactly")

# 4. Libraries whose path holds spaces, or really ends in " (deleted)".
for name in ("lib with space.so", "libplugin.so (deleted)"):
    lib = os.path.join(tmpdir, name)
    shutil.copy(PLUGIN, lib)
    p, data = trace_json(["--", DLOPEN, lib, "7"], timeout=60)
    eq(p.returncode, 0, "%r launch: exit 0 (%s)" % (name, p.stderr.strip()[-200:]))
    eq(counts(data).get("plugin_query") if data else None, 7,
       "%r launch: its probes attached, exact" % name)
    host = subprocess.Popen([DLOPEN, lib, "7", "--wait"], stdout=subprocess.PIPE,
                            text=True)
    check(host.stdout.readline().startswith("ready"), "%r -p: host ready" % name)
    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json", "-o", out],
                              stderr=subprocess.PIPE, text=True)
    check(wait_stderr(tracer, "tracing"), "%r -p: attached" % name)
    host.send_signal(signal.SIGUSR1)
    host.wait(timeout=30)
    tracer.stderr.read()
    eq(tracer.wait(timeout=30), 0, "%r -p: exit 0" % name)
    data = read_json(out)
    eq(counts(data).get("plugin_query") if data else None, 7,
       "%r -p: dlopen()ed while traced, its probes attached, exact" % name)

# 5. A library whose attachment fails half-way (its query_begin has a site
# the kernel refuses): the query_end links made before are rolled back;
# the good plugin is the control.
# Per-event: the refused site is a query_begin site, which batched mode
# (only sp:flush traps) never attaches.
os.environ["SPTRACE_PER_EVENT"] = "1"
for lib, good in ((PLUGIN, True), (BAD_PLUGIN, False)):
    what = "rollback control" if good else "rollback"
    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-f", "json", "-o", out, "--", DLOPEN,
                               lib, "5", "--wait"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    line = tracer.stdout.readline()
    check(line.startswith("ready"), "%s: host ready" % what)
    pid = int(line.split()[1])
    before = bpf_link_fds(tracer.pid)
    os.kill(pid, signal.SIGUSR1)
    # dlopen() done, the loader's stop handled: the host sleeps 500 ms
    # before it calls the plugin.
    end = time.time() + 10
    while time.time() < end and not (maps_has(pid, os.path.basename(lib)) and
                                     proc_state(pid) == "S"):
        time.sleep(0.005)
    after = bpf_link_fds(tracer.pid)
    _, err = tracer.communicate(timeout=60)
    data = read_json(out)
    sanitizer_clean(err, what)
    eq(tracer.returncode, 0, "%s: the session goes on (exit 0)" % what)
    c = counts(data) if data else {}
    if good:
        check(after > before, "%s: the plugin's links added (%d -> %d)"
              % (what, before, after))
        eq(c.get("plugin_query"), 5, "%s: plugin counted" % what)
    else:
        eq(after, before, "%s: no link of the failed library left" % what)
        check("cannot probe the instruction" in err,
              "%s: the error names the cause (%r)" % (what, err.strip()[-300:]))
        eq(c.get("plugin_query"), None, "%s: nothing of the failed library counted" % what)
        eq(data["errors"]["end_without_begin"] if data else None, 0,
           "%s: its query_end was not left attached" % what)
    eq(c.get("before_dlopen"), 1, "%s: the executable still counted" % what)
os.environ.pop("SPTRACE_PER_EVENT", None)
shutil.rmtree(tmpdir)

# 6. --query naming a missing argument (launch) or probe (-p).
p, data = trace_json(["--query", "sp:query_begin,sp:query_end,name=arg3", "--",
                      FOLLOW, "--leaf", "1"])
lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
check(p.returncode == 1 and len(lines) == 1 and "has 1 argument" in lines[0],
      "--query missing argument: one clear line (%r)" % p.stderr.strip())
live = subprocess.Popen([ENABLED], stdout=subprocess.PIPE, text=True)
check(live.stdout.readline().startswith("sema=0"), "--query, -p: host running")
p = run([SPTRACE, "--query", "nope:a,nope:b,name=arg0", "-p", str(live.pid), "-d", "1"])
lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
check(p.returncode == 1 and len(lines) == 1 and
      "no probe nope:a in pid %d" % live.pid in lines[0],
      "--query missing probe, -p: one clear line (%r)" % p.stderr.strip())
live.kill()
live.wait()

# 7. --func on a Go binary: return probes corrupt Go's moving stacks.
p, data = trace_json(["--func", "go_*", "--", GO])
lines = [l for l in p.stderr.splitlines() if l.startswith("sptrace:")]
check(p.returncode == 1 and len(lines) == 1 and "a Go binary" in lines[0] and
      "--func refuses" in lines[0],
      "Go: --func refused with one clear line (%r)" % p.stderr.strip())
eq(p.stdout, "", "Go: the program was not started")
finish()
