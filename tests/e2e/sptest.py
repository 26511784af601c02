# SPDX-License-Identifier: MIT
"""Small harness for sptrace's end-to-end tests: run the real sptrace on
real host programs, check figures against ground truth, and print one
'N passed, N failed' line (followed by ', N skipped' when a part was
skipped). Needs root (BPF) and the tools a test names; without them the
test skips (exit 77) outside CI and fails in CI (see in_ci())."""
import atexit
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SPTRACE = os.environ.get("SPTRACE", "sptrace")
_passed = 0
_failed = 0
_skipped = 0
_failures = []  # what each failed check said, for finish()


def _hogs():
    try:
        return max(0, int(os.environ.get("SPTEST_HOGS", "0") or 0))
    except ValueError:
        return 0


# A bound on wall-clock time that is part of what a test checks (Ctrl-C
# ends a trace within 1 s) is multiplied by this: with two CPU hogs beside
# the test, the RCU grace periods that closing uprobe links waits for (one
# or two before the report; 10-60 ms each on an idle machine) took 0.2 to
# 5 s in all, so the bound there only guards against a hang.
TIME_FACTOR = 10 if _hogs() else 1


def _start_hogs():
    """SPTEST_HOGS=N (meson test --setup hogs: 2): N CPU-bound processes
    run beside the test, as other work on a CI machine does, so that no
    test passes only because the machine was idle (attach, detach and the
    hosts' own timing all get slower). They die with the test, even a
    killed one (PR_SET_PDEATHSIG)."""
    n = _hogs()
    if n <= 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)

    def die_with_parent():
        libc.prctl(1, signal.SIGKILL)    # PR_SET_PDEATHSIG

    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             preexec_fn=die_with_parent)
            for _ in range(n)]

    def stop():
        for h in hogs:
            h.kill()
            h.wait()
    atexit.register(stop)
    print("note: %d CPU-bound hog processes run beside this test "
          "(SPTEST_HOGS)" % n)


_start_hogs()


def in_ci():
    """True when CI is set to anything but empty, "0", "false" or "no"
    (any case): CI=1, CI=True and CI=yes all count, so an inherited
    spelling cannot turn a failure back into a skip."""
    v = os.environ.get("CI", "").strip().lower()
    return v not in ("", "0", "false", "no")


def require(ok, msg):
    """A whole test needs something (root, a tool): without it, exit 77
    (skip) outside CI, exit 1 (fail) in CI."""
    if ok:
        return
    if in_ci():
        print("FAIL: needs " + msg + " (CI: tests must not skip)")
        sys.exit(1)
    print("SKIP: needs " + msg)
    sys.exit(77)


def optional(ok, msg):
    """A part of a test needs a tool: returns ok. Without it the part is
    skipped outside CI (and finish() exits 77 once every check passed)
    and is a failed check in CI."""
    global _skipped
    if ok:
        return True
    if in_ci():
        check(False, "needs " + msg + " (CI: tests must not skip)")
    else:
        _skipped += 1
        print("SKIP part: needs " + msg)
    return False


def require_bpf():
    require(os.geteuid() == 0, "root to load BPF programs")


_buffer = None



def wait_links(pid, timeout=20.0):
    """Until process pid (an sptrace) holds a uprobe link: it has started
    attaching. True, or False when it exited or the time ran out."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            for fd in os.listdir("/proc/%d/fdinfo" % pid):
                try:
                    with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                        info = f.read()
                except OSError:
                    continue
                if "uprobe" in info and "link_type" in info:
                    return True
        except OSError:
            return False
        time.sleep(0.02)
    return False


def wait_tracing(proc, timeout=60.0):
    """Until an sptrace (stderr a pipe, text mode) says it traces: every
    site attached and counting. Without -d it says "Ctrl-C to stop"; with
    -d "tracing N probe sites for S s"; -v says "tracing N probe sites, ...
    after start" first.
    Tests never assume how long attaching takes: they wait for this line.
    Returns the stderr lines read on the way, for the caller's messages;
    communicate() reads the rest."""
    seen = []
    end = time.time() + timeout
    while time.time() < end:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if "Ctrl-C to stop" in line or ("probe sites" in line and
                                        "after start" in line) or \
                ("sptrace: tracing " in line and "probe sites for " in line):
            return seen
    return seen

def check(cond, what):
    global _passed, _failed
    if _buffer is not None:
        _buffer.append((bool(cond), what))
        return cond
    if cond:
        _passed += 1
        print("ok   " + what)
    else:
        _failed += 1
        _failures.append(what)
        print("FAIL " + what)
    return cond


def eq(actual, expected, what):
    return check(actual == expected,
                 "%s: %r == %r" % (what, actual, expected))


def close(actual, expected, what, rel=0.03):
    ok = expected > 0 and abs(actual - expected) <= rel * expected
    return check(ok, "%s: %s within %.1f%% of %s (%.2f%%)" % (
        what, actual, rel * 100, expected,
        100.0 * (actual - expected) / expected if expected else float("nan")))


def async_rust_hosts():
    """The folder of the async Rust hosts (tests/rust_async), built only
    where Debian's tokio and tracing crates are installed; requires it."""
    hosts = os.environ.get("RUST_ASYNC_HOSTS_DIR", "")
    require(bool(hosts), "Debian's tokio and tracing crates: the async Rust hosts were not "
            "built (apt-get install librust-tokio-dev librust-tracing-dev "
            "librust-tracing-subscriber-dev)")
    return hosts


def between(v, bounds, what, rel=0.005):
    """v lies between a host's readings inside the probes (lo) and around
    them (hi), within rel: the check for a time that has kernel entries
    inside it (traps, flushes), whose cost depends on the machine."""
    lo, hi = bounds
    return check(lo * (1 - rel) <= v <= hi * (1 + rel),
                 "%s: %d between the host's bounds %d and %d, within %.1f%% "
                 "(%+.2f%% of the low one)" % (what, v, lo, hi, 100 * rel,
                                         100.0 * (v - lo) / max(lo, 1)))


def cross_bounds(t, q, per_event):
    """batch_host cross's truth for query q ("span", "back"): the bounds
    of its total and of its self time (its time less its step's). The
    step's END window (the host's reading before it to the one after it)
    goes to the parent in sptrace when records are stamped as the macro
    starts (batched: a flush there is the parent's), to the step when
    they are stamped in the kernel (per-event: the trap's way in); its
    BEGIN window may go to either."""
    step_out = t[q + "_step_begin_ns"] + (t[q + "_step_end_ns"] if per_event else 0)
    return ((t[q + "_ns"], t[q + "_outer_ns"]),
            (t[q + "_ns"] - t[q + "_step_ns"] - step_out,
             t[q + "_outer_ns"] - t[q + "_step_ns"]))


def run(args, timeout=300, **kw):
    """Runs a command; returns CompletedProcess with text output."""
    return subprocess.run(args, capture_output=True, text=True,
                          timeout=timeout, **kw)


def tmpfile(suffix=""):
    fd, path = tempfile.mkstemp(prefix="sptest-", suffix=suffix)
    os.close(fd)
    os.unlink(path)          # sptrace refuses to overwrite without --force
    return path


def cleanup(proc, *paths):
    """For a `finally:`: kills proc (a Popen) if it still runs, removes
    the files that exist."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
    for f in paths:
        if os.path.exists(f):
            os.unlink(f)


def wait_detached(timeout=30.0):
    """Until no earlier sptrace's uprobes are left: a launch-mode run leaves
    their unregistering to a keeper process (live/detach_behind.c), whose
    uprobes, pinned traps, a new run on the same sites would share. Call it
    before SPTRACE_SITE_GUARD=direct, which must meet the kernel's own
    choice. True, or False when the time ran out."""
    end = time.time() + timeout
    while time.time() < end:
        busy = False
        for d in os.listdir("/proc"):
            try:
                with open("/proc/%s/comm" % d) as f:
                    busy = busy or f.read().strip() == "sptrace-detach"
            except OSError:
                pass
        if not busy:
            return True
        time.sleep(0.05)
    return False


def trace_json(args, cmd=None, timeout=300):
    """sptrace [CMD] -f json -o FILE ARGS; returns (CompletedProcess,
    parsed JSON or None)."""
    out = tmpfile(".json")
    try:
        p = run([SPTRACE] + ([cmd] if cmd else []) +
                ["-f", "json", "-o", out] + args, timeout=timeout)
        data = None
        if os.path.exists(out):
            with open(out) as f:
                text = f.read()
            try:
                data = json.loads(text)
            except ValueError as e:
                check(False, "sptrace JSON parses (%s): %r" % (e, text[:200]))
        return p, data
    finally:
        if os.path.exists(out):
            os.unlink(out)


def host_truth(stdout):
    """The JSON line a ground-truth host prints about what it really did."""
    for line in stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError("host printed no truth: %r" % stdout)


def rows(summary):
    return {q["name"]: q for q in summary["queries"]}


def retry_timing(fn, attempts=3):
    """Runs fn() (which calls check/eq/close) up to `attempts` times and
    keeps the first attempt whose checks all pass, else the last one.
    Wall-clock comparisons on a shared 2-CPU machine can lose to a
    preemption that lands inside a probe; counts are exact on every
    attempt, so only timing failures are retried."""
    global _buffer
    for i in range(attempts):
        _buffer = []
        try:
            fn()
        finally:
            results, _buffer = _buffer, None
        bad = [w for ok, w in results if not ok]
        # Only close() checks (" within ") may be retried: a wrong count
        # fails on the spot.
        if not bad or i == attempts - 1 or \
                any(" within " not in w for w in bad):
            break
        print("note: attempt %d had %d failing checks (first: %s); "
              "load %s; retrying" % (i + 1, len(bad), bad[0],
                                     open("/proc/loadavg").read().split()[:3]))
    for ok, what in results:
        check(ok, what + ("" if i == 0 else " (attempt %d)" % (i + 1)))


def finish():
    # Said again last: a CI log that keeps only a test's tail still shows
    # which checks failed.
    for what in _failures:
        print("FAILED " + what)
    line = "%d passed, %d failed" % (_passed, _failed)
    print(line + (", %d skipped" % _skipped if _skipped else ""))
    if not _passed and not _failed:
        print("FAIL no check ran")
        sys.exit(1)
    if _failed:
        sys.exit(1)
    sys.exit(77 if _skipped else 0)
