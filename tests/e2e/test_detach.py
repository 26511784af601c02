# SPDX-License-Identifier: MIT
"""Detaching restores the original instructions. One red-zone host process
(tests/hosts/redzone.c, phases mode) computes with red-zone data across its
probe sites before sptrace attaches, while traced, and after sptrace has
detached (SIGINT) and after sptrace was killed (SIGKILL): every result is
right in every round. The bytes of every sp probe site, read from the live
process in /proc/PID/mem, are the 5-byte nop before, something else (the
kernel's breakpoint) while attached, and the very same nop again after each
detach. Per-event (SPTRACE_PER_EVENT=1): the sites under test are the
query sites, which batched tracing leaves alone (it traps only sp:flush,
a 1-byte nop, patched and restored the same way)."""
import json
import os
import re
import signal
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf, tmpfile

RZ = os.environ["RZ_HOST"]
os.environ["SPTRACE_PER_EVENT"] = "1"
CALLS = 300000
NOP5 = bytes.fromhex("0f1f440000")


def sites():
    notes = subprocess.run(["readelf", "-n", RZ], capture_output=True,
                           text=True).stdout
    return [int(m, 16) for m in
            re.findall(r"Provider: sp\n\s+Name: (?!flush\n|tsc\n)\w+\n\s+Location: (0x[0-9a-f]+)",
                       notes)]


def load_base(pid):
    real = os.path.realpath(RZ)
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    return None


def site_bytes(pid, base, locs):
    with open("/proc/%d/mem" % pid, "rb") as f:
        out = []
        for loc in locs:
            f.seek(base + loc)
            out.append(f.read(5))
        return out


def uprobe_events():
    """The kernel's tracefs uprobe events (global; tracefs mounted in a
    private mount namespace so the machine's mounts are left alone)."""
    p = subprocess.run(["unshare", "--mount", "sh", "-c",
                        "mount -t tracefs nodev /sys/kernel/tracing && "
                        "cat /sys/kernel/tracing/uprobe_events"],
                       capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else None


def round_ok(host, what):
    host.send_signal(signal.SIGUSR1)
    line = host.stdout.readline().strip()
    eq(line, "wrong=0 calls=%d" % CALLS, "%s: every result right" % what)


require_bpf()
locs = sites()
check(len(locs) >= 4, "the host has sp probe sites (%d)" % len(locs))
host = subprocess.Popen([RZ, "phases", str(CALLS), "4"], stdout=subprocess.PIPE,
                        text=True)
try:
    check(host.stdout.readline().startswith("ready"), "host ready")
    base = load_base(host.pid)
    check(base is not None, "found the executable's load address")
    before = site_bytes(host.pid, base, locs)
    # The safe sites (lea; nop5; lea) and the naive ones (nop5) alike.
    eq(before, [NOP5] * len(locs), "before: every site is the 5-byte nop")
    round_ok(host, "before tracing")

    out = tmpfile(".json")
    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json",
                               "-o", out], stderr=subprocess.PIPE, text=True)
    check("Ctrl-C to stop" in tracer.stderr.readline(), "attached")
    during = site_bytes(host.pid, base, locs)
    check(all(d != NOP5 for d in during),
          "while attached: every site is patched (%s)" %
          [d.hex() for d in during])
    ev = uprobe_events()
    check(ev is not None and RZ not in ev and "libbpf_" not in ev,
          "while attached: no tracefs uprobe event (links only): %r" % ev)
    round_ok(host, "while traced")
    tracer.send_signal(signal.SIGINT)
    eq(tracer.wait(timeout=30), 0, "SIGINT: sptrace exit status")
    with open(out) as f:
        q = {r["name"]: r for r in json.load(f)["queries"]}
    os.unlink(out)
    eq(q.get("rz", {}).get("count"), CALLS, "while traced: every call counted")
    eq(site_bytes(host.pid, base, locs), before,
       "after detaching: the original bytes are back")
    round_ok(host, "after detaching")

    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-o", "/dev/null",
                               "--force"], stderr=subprocess.PIPE, text=True)
    check("Ctrl-C to stop" in tracer.stderr.readline(), "attached again")
    tracer.kill()
    tracer.wait()
    # The kernel removes the uprobes when the last link's file is closed,
    # which is when the killed process's files are released.
    for _ in range(100):
        if site_bytes(host.pid, base, locs) == before:
            break
        time.sleep(0.05)
    eq(site_bytes(host.pid, base, locs), before,
       "after SIGKILL of sptrace: the original bytes are back")
    ev = uprobe_events()
    check(ev is not None and RZ not in ev and "libbpf_" not in ev,
          "after SIGKILL of sptrace: no tracefs uprobe event left: %r" % ev)
    round_ok(host, "after sptrace was killed")
    eq(host.wait(timeout=30), 0, "host exit status")
finally:
    if host.poll() is None:
        host.kill()
        host.wait()
finish()
