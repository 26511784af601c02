# SPDX-License-Identifier: MIT
"""Every error the foundation names gets one clear line and a non-zero
exit: missing PID, a process without sp probes, missing privileges, a
command that cannot be started, bad options, unsafe output paths."""
import os
import subprocess
import time

from sptest import SPTRACE, check, eq, finish, require_bpf, run, tmpfile

GT = os.environ["GT_HOST"]


def one_clear_line(p, *words):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    ok = (p.returncode != 0 and len(lines) == 1 and
          lines[0].startswith("sptrace: ") and
          all(w in lines[0] for w in words))
    return check(ok, "exit %d, one line naming %s: %r" % (
        p.returncode, words, p.stderr.strip()))


def free_pid():
    pid = 4194000
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


require_bpf()

pid = free_pid()
one_clear_line(run([SPTRACE, "-p", str(pid)]), "pid %d" % pid, "no such process")

sleeper = subprocess.Popen(["sleep", "30"])
try:
    time.sleep(0.1)
    one_clear_line(run([SPTRACE, "-p", str(sleeper.pid), "-d", "1"]),
                   "pid %d" % sleeper.pid, "no sp probes")
    # No capabilities: run as nobody with every capability dropped.
    p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=-all", "--bounding-set=-all", SPTRACE, "-p",
             str(sleeper.pid), "-d", "1"])
    one_clear_line(p, "CAP_BPF", "CAP_PERFMON")
finally:
    sleeper.kill()
    sleeper.wait()

p = run([SPTRACE, "--", "/nonexistent/command"])
one_clear_line(p, "cannot start", "/nonexistent/command")
p = run([SPTRACE, "--", "no-such-command-anywhere"])
one_clear_line(p, "cannot start", "no-such-command-anywhere")

one_clear_line(run([SPTRACE, "-p", "abc"]), "invalid PID", "abc")
one_clear_line(run([SPTRACE, "-p", "1", "-d", "-1"]), "invalid duration")
one_clear_line(run([SPTRACE, "-f", "xml", "-p", "1"]), "unknown format", "xml")
one_clear_line(run([SPTRACE, "-s", "bogus", "-p", "1"]), "unknown sort", "bogus")
one_clear_line(run([SPTRACE]), "nothing to trace")
one_clear_line(run([SPTRACE, "frobnicate"]), "unknown command", "frobnicate")
one_clear_line(run([SPTRACE, "re"]), "ambiguous command 're'", "record",
               "report")
eq(run([SPTRACE, "rep", "--help"]).returncode, 0,
   "an unambiguous prefix runs its command")

# Output files: never overwrite without --force, never through a symlink.
out = tmpfile(".json")
with open(out, "w") as f:
    f.write("precious")
one_clear_line(run([SPTRACE, "-o", out, "--", GT, "1"]), out, "exists")
with open(out) as f:
    eq(f.read(), "precious", "existing output file left alone")
p = run([SPTRACE, "--force", "-f", "json", "-o", out, "--", GT, "1"])
eq(p.returncode, 0, "--force overwrites")
os.unlink(out)
link = tmpfile(".json")
os.symlink(out, link)
one_clear_line(run([SPTRACE, "--force", "-o", link, "--", GT, "1"]), link,
               "symbolic link")
check(not os.path.exists(out), "nothing written through the symlink")
os.unlink(link)

# The traced command's exit status is sptrace's.
p = run([SPTRACE, "--", "sh", "-c", "exit 7"])
eq(p.returncode, 7, "sptrace exits with the command's status")
finish()
