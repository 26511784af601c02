# SPDX-License-Identifier: MIT
"""valgrind memcheck on the post-processing commands (summarize, diff,
export): no invalid access, no leak. Skipped on a sanitizer build, which
valgrind cannot run and which checks the same things itself."""
import os
import shutil
import subprocess
import sys

from sptest import SPTRACE, check, eq, finish, require_bpf, run, tmpfile

GT = os.environ["GT_HOST"]

if "asan" in subprocess.run(["ldd", SPTRACE], capture_output=True, text=True).stdout:
    print("SKIP: sanitizer build (valgrind runs on the plain build)")
    sys.exit(77)
if not shutil.which("valgrind"):
    check(False, "valgrind installed (.ci/install-deps installs it)")
    finish()
require_bpf()

spt, live = tmpfile(".spt"), tmpfile(".json")
p = run([SPTRACE, "record", "-o", spt, "--summary", live, "--", GT, "--threads", "2", "3"])
eq(p.returncode, 0, "recorded a trace")
VG = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
      "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect"]
for args in (["summarize", spt], ["summarize", "-f", "json", "--hist", spt],
             ["diff", spt, live], ["diff", "-f", "json", live, spt],
             ["export", "--chrome", spt, "-o", "-"],
             ["export", "--folded", spt, "-o", "-"],
             ["export", "--csv", spt, "-o", "-"]):
    p = run(VG + [SPTRACE] + args, timeout=300)
    eq(p.returncode, 0, "memcheck clean: sptrace %s (%s)" % (
        " ".join(args[:-1] if args[-1] == spt else args[:2]), p.stderr.strip()[-300:]))
# a damaged file too: the recovery paths
with open(spt, "rb") as f:
    data = f.read()
with open(spt, "wb") as f:
    f.write(data[: len(data) // 2])
p = run(VG + [SPTRACE, "summarize", spt], timeout=300)
check(p.returncode in (0, 1), "memcheck clean on a truncated file (%d)" % p.returncode)
for f in (spt, live):
    os.unlink(f)
finish()
