# SPDX-License-Identifier: MIT
"""kill -9 of sptrace at random moments leaves no process stopped, no
semaphore raised and no BPF link behind (docs/reliability.md, "A killed
sptrace"): 20 trials each of a launched command (killed while loading,
attaching, or in its first loader stops), of -p PID --follow on a storm of
children that exec and dlopen, and of a launched command that loads and
unloads a library in a loop.

After each kill: no process of the trial is in state T (checked 0.3 s and
again 1.5 s after sptrace is reaped), the host's SP_ENABLED() is 0 in the
executable and in the library (the host prints them on SIGUSR2), no BPF link
is held by any process of the trial, and the releaser is gone. Most launch
trials run `sptrace latency` (its BPF loads in 0.4 s instead of 2.5 s; the
stops are the session's, the same for every command); every fourth runs the
default command. --follow exists for the default command only."""
import ctypes
import json
import os
import random
import select
import signal
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf, tmpfile

HOST = os.environ["DL_CYCLE_HOST"]
LIB = os.environ["DL_CYCLE_LIB"]
STORM = os.environ["EXEC_STORM"]
TRIALS = int(os.environ.get("KILLSAFE_TRIALS", "20"))
LOAD_S = 2.5          # about how long the default command's BPF takes to load

require_bpf()
seed = int(os.environ.get("KILLSAFE_SEED", str(int(time.time()))))
rng = random.Random(seed)
print("seed %d (KILLSAFE_SEED reruns these kill moments)" % seed)

# Orphans (a launched host, the releaser) become our children: they stay
# in view, and we reap them.
PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)
check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, "child subreaper")


def stat(pid):
    """(state, ppid, comm) of pid, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    rest = s[s.rindex(")") + 2:].split()
    return rest[0], int(rest[1]), comm


def children_of(pids):
    """pids and all their descendants now."""
    out = set(pids)
    grew = True
    while grew:
        grew = False
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) in out:
                continue
            st = stat(int(d))
            if st and st[1] in out:
                out.add(int(d))
                grew = True
    return out


def releasers():
    """The releasers alive among our descendants (zombies are gone)."""
    me = os.getpid()
    alive = {}
    for p in children_of([me]) - {me}:
        st = stat(p)              # once: p may exit between two reads
        if st and st[0] != "Z":
            alive[p] = st[2]
    return {p for p, comm in alive.items() if comm == "sptrace-release"}


def reap_orphans(keep):
    """Reaps zombie children that are no Popen's (those reap their own)."""
    for p in children_of([os.getpid()]):
        st = stat(p)
        if st and st[0] == "Z" and st[1] == os.getpid() and p not in keep:
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass


def stopped(pids):
    return sorted(p for p in pids if (stat(p) or ("",))[0] == "T")


def links_held_by(pids):
    p = subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True,
                       text=True, timeout=30)
    try:
        links = json.loads(p.stdout or "[]")
    except ValueError:
        return ["unparsable bpftool output"]
    return [l.get("id") for l in links
            if any(h.get("pid") in pids for h in l.get("pids", []))]


class Lines:
    """Lines of a pipe, read with a deadline."""

    def __init__(self, f):
        self.fd = f.fileno()
        self.buf = b""

    def read(self, timeout):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 4096)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def until(self, prefix, timeout):
        end = time.time() + timeout
        while True:
            line = self.read(max(0.0, end - time.time()))
            if line is None or line.startswith(prefix):
                return line


def orphans():
    """Every process below us: what a killed sptrace leaves (its
    releaser, its command, any child it forked) comes to us."""
    me = os.getpid()
    return children_of([me]) - {me}


def after_kill(name, tracked, ask, want):
    """The checks after sptrace is reaped. tracked: the trial's pids;
    ask(): the host's answer to SIGUSR2, or None without a host."""
    tracked = tracked | orphans()
    time.sleep(0.3)
    left = stopped(tracked)
    if left:
        time.sleep(1.2)        # only what stays stopped counts
        left = stopped(tracked)
    check(not left, "%s: no process left stopped (%s)" % (
        name, ", ".join("%d %s" % (p, (stat(p) or ("", 0, "?"))[2])
                        for p in left) or "none"))
    answer = ask()
    if answer is not False:
        eq(answer, want, "%s: SP_ENABLED() after the kill" % name)
    end = time.time() + 2
    while releasers() & tracked and time.time() < end:
        time.sleep(0.05)
    eq(sorted(releasers() & tracked), [], "%s: the releaser is gone" % name)
    eq(links_held_by(tracked), [], "%s: no BPF link left" % name)
    return len(left)


def launch_trial(name, argv, phase):
    """sptrace ARGV -- dl_cycle_host LIB 0, killed in `phase`."""
    t0 = time.time()
    out = tmpfile(".out")
    sp = subprocess.Popen([SPTRACE] + argv + ["-o", out, "--", HOST, LIB, "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines = Lines(sp.stdout)
    tracked = {sp.pid}
    if phase == "load":
        time.sleep(rng.uniform(0, LOAD_S if "latency" not in argv else 0.4))
    elif phase == "attach":
        # The command forked (waiting to exec) or exec'd: sptrace attaches.
        end = time.time() + 30
        while time.time() < end and len(children_of([sp.pid])) < 3:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.02))
    else:
        lines.until("rss_kb", 30)       # exec'd and its first dlopen done
        time.sleep(rng.uniform(0, 0.5))
    tracked |= children_of([sp.pid])
    sp.kill()
    sp.wait()
    tracked |= orphans()
    host = [p for p in tracked if (stat(p) or ("", 0, ""))[2] == "dl_cycle_host"]

    def ask():
        if not host:
            return False       # killed before the command ran
        os.kill(host[0], signal.SIGUSR2)
        return lines.until("enabled", 5)

    n = after_kill(name, tracked, ask, "enabled 0 0")
    for p in host:
        for sig in (signal.SIGTERM, signal.SIGCONT):
            os.kill(p, sig)
    if host:
        final = lines.until("cycles", 10)
        check(final is not None and final.endswith("enabled 0 0"),
              "%s: the command ran on to its end (%r)" % (name, final))
        for p in host:
            try:
                os.waitpid(p, 0)
            except ChildProcessError:
                pass
    sp.stdout.close()
    reap_orphans(set())
    if os.path.exists(out):
        os.unlink(out)
    print("     %s: %.1f s" % (name, time.time() - t0))
    return n


def follow_trial(name, storm, storm_lines, phase):
    t0 = time.time()
    out = tmpfile(".out")
    sp = subprocess.Popen([SPTRACE, "-p", str(storm.pid), "--follow", "-o", out],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if phase == "load":
        time.sleep(rng.uniform(0, LOAD_S + 0.5))
    else:
        Lines(sp.stderr).until("sptrace: tracing", 60)
        time.sleep(rng.uniform(0, 0.5))
    tracked = children_of([sp.pid])
    sp.kill()
    sp.wait()
    sp.stderr.close()
    tracked |= orphans()

    def ask():
        storm.send_signal(signal.SIGUSR2)
        return storm_lines.until("enabled", 5)

    n = after_kill(name, tracked, ask, "enabled 0")
    reap_orphans({storm.pid})
    if os.path.exists(out):
        os.unlink(out)
    print("     %s: %.1f s" % (name, time.time() - t0))
    return n


t_start = time.time()
phases = ["load", "attach", "run", "run"]

left = 0
for i in range(TRIALS):
    argv = [] if i % 4 == 0 else ["latency", "--from", "dl_open", "--to", "dl_closed"]
    phase = phases[i % len(phases)]
    left += launch_trial("launch %d (%s, %s)" % (i, argv[0] if argv else "default",
                                                phase), argv, phase)
print("launch: processes left stopped in %d of %d trials" % (left, TRIALS))

storm = subprocess.Popen([STORM, LIB], stdout=subprocess.PIPE)
try:
    storm_lines = Lines(storm.stdout)
    left = 0
    for i in range(TRIALS):
        phase = "load" if i % 4 == 0 else "run"
        left += follow_trial("follow %d (%s)" % (i, phase), storm, storm_lines, phase)
    storm.send_signal(signal.SIGTERM)
    final = storm_lines.until("children", 30)
    try:
        _, n, _, ok, _, en = final.split()
        check(int(n) > 0 and n == ok and en == "0",
              "follow: every child of the storm exited 0, SP_ENABLED() 0 (%s)" % final)
    except (AttributeError, ValueError):
        check(False, "follow: the storm's last line (%r)" % final)
    storm.wait(timeout=30)
finally:
    # The storm runs until told to stop, and it holds our stderr: a
    # failed trial must not leave it running (meson would wait for it).
    if storm.poll() is None:
        storm.kill()
        storm.wait()
print("follow: processes left stopped in %d of %d trials" % (left, TRIALS))

left = 0
for i in range(TRIALS):
    argv = [] if i % 4 == 0 else ["latency", "--from", "dl_open", "--to", "dl_closed"]
    left += launch_trial("dlopen loop %d (%s)" % (i, argv[0] if argv else "default"),
                         argv, "run")
print("dlopen loop: processes left stopped in %d of %d trials" % (left, TRIALS))
print("%.0f s" % (time.time() - t_start))
finish()
