# SPDX-License-Identifier: MIT
"""The uprobes of a launched command that has exited are unregistered
behind sptrace (live/detach_behind.c), so its end is not held up by the
kernel's grace periods; nothing is left behind, and nothing else is held.

  - `sptrace -v -- HOST`: the report is exact, -v says the uprobes go in
    the background; while sptrace is still there (stopped right after that
    line), its keeper holds only /dev/null as its standard streams, its
    pipe, and BPF links and perf events: not sptrace's output pipe;
  - once sptrace has exited, the keeper exits too and no BPF link is left
    with it;
  - a --follow session (its links hold every process of the file) and a
    -p session (the target still running) detach in sptrace; a per-event
    run right after a --follow run of the same host counts exactly.
"""
import ctypes
import json
import os
import signal
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf, tmpfile

HOST = os.environ["GT_HOST"]
ENABLED = os.environ["ENABLED_HOST"]
STORM = os.environ["FORK_STORM"]
LINE = "uprobes are unregistered in the background"

require_bpf()
# The keeper is sptrace's grandchild, orphaned at once: as our child it
# stays in view.
PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)
check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, "child subreaper")


def keepers():
    me, out = str(os.getpid()), []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        if s[s.index("(") + 1:s.rindex(")")] == "sptrace-detach" and rest[1] == me \
                and rest[0] != "Z":
            out.append(int(d))
    return out


def fds(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def links_of(pid):
    p = subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True,
                       text=True, timeout=30)
    return [l.get("id") for l in json.loads(p.stdout or "[]")
            if any(h.get("pid") == pid for h in l.get("pids", []))]


def reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


# 1. Launch mode: stopped right after the line, the keeper is inspected.
out = tmpfile(".json")
p = subprocess.Popen([SPTRACE, "-v", "-f", "json", "-o", out, "--", HOST, "300"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
err = ""
while True:
    line = p.stderr.readline()
    if not line:
        break
    err += line
    if LINE in line:
        p.send_signal(signal.SIGSTOP)
        break
check(LINE in err, "launch: -v says the uprobes go in the background (%s)" % err.strip()[-300:])


def settled(pid):
    """The keeper has named itself and closed what it does not keep (it
    does so on its own, after sptrace saw it forked: a loaded machine may
    not have run it yet)."""
    f = fds(pid)
    return [f.get(i) for i in (0, 1, 2)] == ["/dev/null"] * 3 and \
        not any(i > 2 and not t.startswith("pipe:") and
                t not in ("anon_inode:bpf_link", "anon_inode:[perf_event]")
                for i, t in f.items())


end = time.time() + 10
k = keepers()
while (len(k) != 1 or not settled(k[0])) and time.time() < end:
    time.sleep(0.05)
    k = keepers()
eq(len(k), 1, "launch: one keeper")
if k:
    f = fds(k[0])
    eq([f.get(i) for i in (0, 1, 2)], ["/dev/null"] * 3, "keeper: its standard streams")
    other = sorted(set(t for i, t in f.items() if i > 2 and not t.startswith("pipe:")
                       and t not in ("anon_inode:bpf_link", "anon_inode:[perf_event]")))
    eq(other, [], "keeper: holds nothing but its pipe, BPF links and perf events")
    check(sum(t == "anon_inode:bpf_link" for t in f.values()) > 0, "keeper: holds the links")
    out_pipe = os.readlink("/proc/self/fd/%d" % p.stdout.fileno())
    check(out_pipe not in f.values(), "keeper: not sptrace's output pipe")
p.send_signal(signal.SIGCONT)
rest, err2 = p.communicate(timeout=120)
eq(p.returncode, 0, "launch: exit status (%s)" % err2.strip()[-300:])
with open(out) as fh:
    data = json.load(fh)
check(any(q["count"] > 0 for q in data["queries"]), "launch: the report has the queries")
end = time.time() + 20
while keepers() and time.time() < end:
    time.sleep(0.05)
    reap()
eq(keepers(), [], "the keeper exits once sptrace has")
for pid in k:
    eq(links_of(pid), [], "no BPF link left with the keeper")
reap()

# 2. --follow: its links hold every process of the file, so a next run of
# the same host would meet them while a keeper unregisters them; sptrace
# detaches itself, and a per-event run right after counts exactly (one
# did lose 6-16% of its events to a --follow run's keeper).
def storm_run(args, env=None):
    """sptrace ARGS -- fork_storm (200 children); (host line, JSON)."""
    o = tmpfile(".json")
    r = subprocess.run([SPTRACE, "-v", "-f", "json", "-o", o] + args +
                       ["--", STORM, "--children", "200", "--iters", "100"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    eq(r.returncode, 0, "%s: exit status (%s)" % (args, r.stderr.strip()[-300:]))
    host = [json.loads(l) for l in r.stdout.splitlines() if l.startswith('{"children"')]
    with open(o) as fh:
        data = json.load(fh)
    os.unlink(o)
    return r, (host or [None])[0], data


for trial in range(3):
    r, _, _ = storm_run(["--follow"])
    if trial == 0:
        check(LINE not in r.stderr, "--follow: detached by sptrace itself")
        eq(keepers(), [], "--follow: no keeper")
    r, host, data = storm_run([], {"SPTRACE_PER_EVENT": "1"})
    if check(host is not None, "after --follow: the host reported"):
        eq(sum(q["count"] for q in data["queries"] if q["name"] == "storm_q"),
           host["parent_units"], "after --follow (%d): the parent's storm_q exact" % trial)
reap()

# 3. -p: the target runs on; sptrace detaches itself.
h = subprocess.Popen([ENABLED], stdout=subprocess.DEVNULL)
try:
    time.sleep(0.2)
    r = subprocess.run([SPTRACE, "-v", "-p", str(h.pid), "-d", "0.3"],
                       capture_output=True, text=True, timeout=120)
    eq(r.returncode, 0, "-p: exit status (%s)" % r.stderr.strip()[-300:])
    check(LINE not in r.stderr, "-p: detached by sptrace itself")
    eq(keepers(), [], "-p: no keeper")
finally:
    h.kill()
    h.wait()
finish()
