# SPDX-License-Identifier: MIT
"""Semaphores are kernel-managed: they rise while sptrace is attached and
fall back to zero when it detaches, and also when it is killed with
SIGKILL (no cleanup code runs). SIGINT stops a trace and prints the table."""
import os
import select
import signal
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf

HOST = os.environ["ENABLED_HOST"]


def wait_line(proc, want, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([proc.stdout], [], [], max(0, end - time.time()))
        if not r:
            break
        line = proc.stdout.readline()
        if line.startswith(want):
            return line.strip()
    return None


require_bpf()
host = subprocess.Popen([HOST], stdout=subprocess.PIPE, text=True)
try:
    check(wait_line(host, "sema=0 enabled=0"), "untraced: semaphore 0")

    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    check(wait_line(host, "sema=1 enabled=1"), "traced: semaphore 1, SP_ENABLED()")
    tracer.kill()
    tracer.wait()
    check(wait_line(host, "sema=0 enabled=0"),
          "sptrace killed with SIGKILL: semaphore back to 0")

    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    check(wait_line(host, "sema=1 enabled=1"), "traced again: semaphore 1")
    time.sleep(0.2)
    t0 = time.time()
    tracer.send_signal(signal.SIGINT)
    out, _ = tracer.communicate(timeout=10)
    eq(tracer.returncode, 0, "SIGINT: exit 0")
    check(time.time() - t0 < 1.0, "SIGINT: table within 1 s (%.2fs)" % (time.time() - t0))
    check("| tick" in out, "SIGINT: table has the query")
    check(wait_line(host, "sema=0 enabled=0"), "detached: semaphore back to 0")
finally:
    host.kill()
    host.wait()
finish()
