# SPDX-License-Identifier: MIT
"""The probe site must not corrupt the red zone of leaf functions when the
kernel turns the uprobe on its 5-byte nop into a call. The host's leaf
function keeps spilled values below %rsp across its probes; millions of
traced calls must all compute the right result. A naive nop5 site, traced
the same way, is the negative control: it must go wrong, or this test could
not fail."""
import os
import re
import subprocess

from sptest import check, eq, finish, require_bpf, rows, run, trace_json

RZ = os.environ["RZ_HOST"]
CALLS = 2000000


def wrong_count(stdout):
    m = re.search(r"wrong=(\d+) calls=(\d+)", stdout)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def uses_red_zone(func):
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", RZ],
                         capture_output=True, text=True).stdout
    body = re.search(r"<%s>:\n(.*?)\n\n" % func, dis, re.S)
    return bool(body and re.search(r"-0x[0-9a-f]+\(%rsp\)", body.group(1)))


require_bpf()
check(uses_red_zone("rz_safe"), "rz_safe keeps data in its red zone")
check(uses_red_zone("rz_naive"), "rz_naive keeps data in its red zone")

p = run([RZ, "safe", "100000"])
eq(wrong_count(p.stdout), (0, 100000), "untraced: all results right")

p, s = trace_json(["--", RZ, "safe", str(CALLS)], timeout=600)
eq(wrong_count(p.stdout), (0, CALLS), "traced sp site: all results right")
if s:
    eq(rows(s).get("rz", {}).get("count"), CALLS, "traced sp site: every call counted")

p = run([RZ, "safe", "100000"])
eq(wrong_count(p.stdout), (0, 100000), "after tracing: all results right")

p, s = trace_json(["--", RZ, "naive", "200000"], timeout=600)
w, n = wrong_count(p.stdout)
check(w is not None and w > 0,
      "negative control: a naive nop5 site corrupts the red zone (%s of %s wrong)" % (w, n))
finish()
