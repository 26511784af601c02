# SPDX-License-Identifier: MIT
"""The probe site must not corrupt the red zone of leaf functions when the
kernel turns the uprobe on its 5-byte nop into a call. The host's leaf
function keeps spilled values below %rsp across its probes; millions of
traced calls must all compute the right result, with the site kept a trap
(sptrace's guard for forked children) and as the kernel's call
(SPTRACE_SITE_GUARD=direct). A naive nop5 site, traced with the call, is
the negative control: it must go wrong, or this test could not fail. The host is built with SP_PROBES_NO_BATCH (a batched query probe
calls the ring code, so its function would be no leaf): it is also the
program built without batching that sptrace must trace per-event, per file.
The batched trap, sp:flush, sits between the same leas (header test)."""
import os
import re
import subprocess

from sptest import (check, eq, finish, require_bpf, rows, run, trace_json,
                    wait_detached)

RZ = os.environ["RZ_HOST"]
CALLS = 2000000


def wrong_count(stdout):
    m = re.search(r"wrong=(\d+) calls=(\d+)", stdout)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def red_zone_live(func):
    """The red-zone slots `func` keeps live across a probe: offsets
    -0x1..-0x80 from %rsp stored before a probe's semaphore test and
    loaded after it, in a leaf function (no call), with %rsp unchanged
    between the store and the load (a prologue's push or sub moves what
    an offset means, so a pair across one is not counted). The probe
    site's own `lea -0x80(%rsp),%rsp`, the nop and the
    `lea 0x80(%rsp),%rsp` after it are not data and are skipped. Returns
    a list of (offset, store address, load address); empty when the
    function keeps nothing there (or is not a leaf)."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", RZ],
                         capture_output=True, text=True).stdout
    body = re.search(r"<%s>:\n(.*?)\n\n" % func, dis + "\n\n", re.S)
    if not body:
        return []
    insns = []
    for line in body.group(1).splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3)))
    site = set()
    for i, (_, op, args) in enumerate(insns):
        if op == "lea" and args.startswith("-0x80(%rsp),%rsp"):
            site.update(range(i, min(i + 3, len(insns))))
    if any(op.startswith("call") for _, op, args in insns):
        return []
    stores, loads, semas, moves = {}, {}, [], []
    for i, (addr, op, args) in enumerate(insns):
        if i in site:
            continue
        if op.startswith(("push", "pop")) or args.endswith(",%rsp"):
            moves.append(addr)
        if "_semaphore>" in args:
            semas.append(addr)
        m = re.match(r"%\w+,-0x([0-9a-f]+)\(%rsp\)$", args)
        if op.startswith("mov") and m and int(m.group(1), 16) <= 0x80:
            stores.setdefault(int(m.group(1), 16), []).append(addr)
        m = re.match(r"-0x([0-9a-f]+)\(%rsp\),%\w+$", args)
        if op.startswith("mov") and m and int(m.group(1), 16) <= 0x80:
            loads.setdefault(int(m.group(1), 16), []).append(addr)
    live = []
    for off in sorted(stores):
        for s in stores[off]:
            for ld in loads.get(off, []):
                if any(s < m < ld for m in semas) and \
                        not any(s < m < ld for m in moves):
                    live.append((-off, hex(s), hex(ld)))
    return live


require_bpf()
# The precondition: both traced functions really keep data in their red
# zone across a probe, and the check says no for one that does not.
for f in ("rz_safe", "rz_naive"):
    live = red_zone_live(f)
    check(live, "%s keeps data in its red zone across a probe %r" % (f, live))
eq(red_zone_live("rz_flat"), [],
   "the precondition check rejects rz_flat, which keeps nothing there")

p = run([RZ, "safe", "100000"])
eq(wrong_count(p.stdout), (0, 100000), "untraced: all results right")

# The host is built with SP_PROBES_NO_BATCH (no sp:flush): sptrace traces
# it event by event by itself, with no SPTRACE_PER_EVENT.
os.environ.pop("SPTRACE_PER_EVENT", None)
# sptrace keeps per-event sites traps where the kernel's call would kill
# forked children (live/site_guard.c); the site must be safe under the
# call all the same (another tracer, or a kernel that keeps the call
# across fork): SPTRACE_SITE_GUARD=direct lets the kernel make it.
for guard in ("auto", "direct"):
    if guard == "direct":
        check(wait_detached(), "the guarded run's uprobes are gone")
    os.environ["SPTRACE_SITE_GUARD"] = guard
    p, s = trace_json(["--", RZ, "safe", str(CALLS)], timeout=600)
    eq(wrong_count(p.stdout), (0, CALLS),
       "traced sp site (guard %s): all results right" % guard)
    if check(s is not None, "JSON summary written"):
        eq(s.get("events"), "per-event",
           "a file without sp:flush (built without batching) is traced per-event")
        eq(rows(s).get("rz", {}).get("count"), CALLS,
           "traced sp site (guard %s): every call counted" % guard)

p = run([RZ, "safe", "100000"])
eq(wrong_count(p.stdout), (0, 100000), "after tracing: all results right")

# The kernel's call, which writes below %rsp (guard off).
check(wait_detached(), "the earlier runs' uprobes are gone")
p, s = trace_json(["--", RZ, "naive", "200000"], timeout=600)
w, n = wrong_count(p.stdout)
check(w is not None and w > 0,
      "negative control: a naive nop5 site corrupts the red zone (%s of %s wrong)" % (w, n))
finish()
