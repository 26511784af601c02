# SPDX-License-Identifier: MIT
"""A target in its own mount and pid namespaces (unshare), running a binary
that exists only in its private mount: sptrace attaches through
/proc/PID/map_files and reports under the PID the operator typed."""
import json
import os
import signal
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, tmpfile

GT = os.environ["GT_HOST"]
LIB = os.path.join(os.path.dirname(GT), "libgthost.so")

require_bpf()
script = ("mount -t tmpfs sptest /mnt && cp %s %s /mnt/ && "
          "LD_LIBRARY_PATH=/mnt exec /mnt/groundtruth --wait --threads 1 5" % (GT, LIB))
box = subprocess.Popen(["unshare", "--mount", "--pid", "--fork", "--mount-proc",
                        "sh", "-c", script], stdout=subprocess.PIPE, text=True)
line = box.stdout.readline()
check(line.startswith("ready 1"), "the target is pid 1 in its namespace (%r)" % line)
# its pid as the operator sees it: the child of unshare
pid = None
for _ in range(50):
    kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(box.pid)],
                          capture_output=True, text=True).stdout.split()
    if kids:
        pid = int(kids[0])
        break
    time.sleep(0.05)
check(pid is not None, "found the target's pid from outside (%s)" % pid)
check(not os.path.exists("/mnt/groundtruth"), "its binary is not visible from here")
out = tmpfile(".json")
tracer = subprocess.Popen([SPTRACE, "-p", str(pid), "-f", "json", "-o", out, "--per-pid"],
                          stderr=subprocess.PIPE, text=True)
check("tracing" in tracer.stderr.readline(), "attached across namespaces")
os.kill(pid, signal.SIGUSR1)
box.communicate(timeout=30)
eq(tracer.wait(timeout=30), 0, "sptrace ends with the target")
with open(out) as f:
    s = json.load(f)
os.unlink(out)
r = rows(s)
eq(r.get("inner", {}).get("count"), 10, "queries counted")
eq(r.get("lib_query", {}).get("count"), 5, "library from the private mount counted")
eq({q["pid"] for q in s["queries"]}, {pid}, "rows carry the PID the operator typed")
finish()
