# SPDX-License-Identifier: MIT
"""Semaphores are kernel-managed: they rise while sptrace is attached and
fall back to zero when it detaches, and also when it is killed with
SIGKILL (no cleanup code runs). SIGINT stops a trace and prints the table.
Both modes: batched (sptrace raises the flush semaphore, and the probes' own
for probes compiled without batching) and per-event
(SPTRACE_PER_EVENT=1: only the probes' own); every semaphore ends at 0."""
import os
import select
import signal
import subprocess
import time

from sptest import (SPTRACE, TIME_FACTOR, check, eq, finish, require_bpf,
                    wait_tracing)

HOST = os.environ["ENABLED_HOST"]


_pending = {}


def wait_line(proc, want, timeout=5.0):
    """The first line the host prints from now on that starts with `want`.
    Reads the pipe with os.read: the host may print two lines at once (a
    detach lowers one semaphore, then the other), and a buffered readline
    would hide the second from select()."""
    fd = proc.stdout.fileno()
    buf = _pending.get(fd, b"")
    end = time.time() + timeout
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.decode().startswith(want):
                _pending[fd] = buf
                return line.decode().strip()
        left = end - time.time()
        if left <= 0:
            break
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buf += chunk
    _pending[fd] = buf
    return None


def run_mode(label, env, traced):
    host = subprocess.Popen([HOST], stdout=subprocess.PIPE)
    try:
        check(wait_line(host, "sema=0 flush=0 enabled=0", 30),
              label + ": untraced: semaphores 0")

        # No time is assumed for attaching: sptrace's line says when it
        # traces (the semaphores rose before), and the host prints a change
        # within a millisecond of it.
        tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid)], env=env,
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        check("Ctrl-C to stop" in "".join(wait_tracing(tracer)),
              label + ": sptrace traces")
        check(wait_line(host, traced, 30),
              label + ": traced: %s, SP_ENABLED()" % traced)
        tracer.kill()
        tracer.communicate()
        check(wait_line(host, "sema=0 flush=0 enabled=0", 30),
              label + ": sptrace killed with SIGKILL: semaphores back to 0")

        tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid)], env=env,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        check("Ctrl-C to stop" in "".join(wait_tracing(tracer)),
              label + ": sptrace traces again")
        check(wait_line(host, traced, 30), label + ": traced again: " + traced)
        time.sleep(0.2)     # traced work: the host's ticks, 1 ms each
        t0 = time.time()
        tracer.send_signal(signal.SIGINT)
        out, _ = tracer.communicate(timeout=10)
        eq(tracer.returncode, 0, label + ": SIGINT: exit 0")
        check(time.time() - t0 < 1.0 * TIME_FACTOR,
              label + ": SIGINT: table within %d s (%.2fs)"
              % (TIME_FACTOR, time.time() - t0))
        check("| tick" in out, label + ": SIGINT: table has the query")
        check(wait_line(host, "sema=0 flush=0 enabled=0", 30),
              label + ": detached: semaphores back to 0")
    finally:
        host.kill()
        host.wait()


require_bpf()
env = dict(os.environ)
env.pop("SPTRACE_PER_EVENT", None)
run_mode("batched", env, "sema=1 flush=1 enabled=1")
env["SPTRACE_PER_EVENT"] = "1"
run_mode("per-event", env, "sema=1 flush=0 enabled=1")
finish()
