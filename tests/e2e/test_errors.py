# SPDX-License-Identifier: MIT
"""Every error the foundation names gets one clear line and a non-zero
exit: missing PID, a process without sp probes, missing privileges, a
command that cannot be started, bad options, unsafe output paths."""
import json
import os
import signal
import subprocess
import time

from sptest import (SPTRACE, check, eq, finish, host_truth, require_bpf, run,
                    tmpfile, wait_tracing)

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

# Extra words and options that would be dropped silently (issue 25): one
# line each, before anything runs (the host never prints).
one_clear_line(run([SPTRACE, "--version", "extra"]), "--version takes "
               "nothing after it", "extra")
spt = tmpfile(".spt")
for only, why in (("", "no name"), ("a,,b", "nothing between two commas"),
                  (",a", "nothing before the first comma"),
                  ("a,", "nothing after the last comma")):
    p = run([SPTRACE, "record", "-o", spt, "--only", only, "--", GT, "1"])
    one_clear_line(p, "invalid --only '%s'" % only, why)
    check(not p.stdout and not os.path.exists(spt),
          "record --only '%s': nothing ran, no file" % only)
one_clear_line(run([SPTRACE, "record", "-o", spt, "--only", "a", "--only",
                    "b", "--", GT, "1"]), "--only given twice ('a', then 'b')")
one_clear_line(run([SPTRACE, "report", "--base", "a.spt", "--base", "b.spt",
                    "c.spt"]), "--base given twice ('a.spt', then 'b.spt')")
one_clear_line(run([SPTRACE, "report", "--mem", "a.json", "--mem", "b.json"]),
               "--mem given twice")

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

# Bad options: one line naming the option and where the help is; the
# usage only with --help, and every message keeps the `sptrace: ` prefix.
one_clear_line(run([SPTRACE, "--bogus", "-p", "1"]), "unknown option '--bogus'",
               "see sptrace --help")
one_clear_line(run([SPTRACE, "record", "--bogus"]), "unknown option '--bogus'",
               "see sptrace record --help")
one_clear_line(run([SPTRACE, "summarize", "-Z", "x"]), "unknown option '-Z'",
               "see sptrace summarize --help")
one_clear_line(run([SPTRACE, "record", "-o"]), "option '-o' needs an argument",
               "see sptrace record --help")
one_clear_line(run([SPTRACE, "report", "--forc=1", "x"]),
               "option '--force' takes no argument")
one_clear_line(run([SPTRACE, "--pe", "1", "-p", "1"]), "ambiguous option '--pe'",
               "--per-pid", "--percent-above")
p = run([SPTRACE, "help", "record"])
check(p.returncode == 0 and p.stdout.startswith("Usage: sptrace record"),
      "sptrace help record is sptrace record --help (%r)" % p.stdout[:40])
one_clear_line(run([SPTRACE, "help", "nosuch"]), "unknown command 'nosuch'")

# PID lists: plain decimal numbers only, nothing empty.
for bad, words in ((",", ("invalid PID list ','", "nothing before")),
                   ("1,,2", ("invalid PID list '1,,2'", "between two commas")),
                   ("1,", ("nothing after the last comma",)),
                   (" 7", ("invalid PID ' 7'",)),
                   ("+7", ("invalid PID '+7'",)),
                   ("", ("invalid PID list ''", "empty"))):
    one_clear_line(run([SPTRACE, "-p", bad, "-d", "1"]), *words)
# The real minimum of -d is stated.
one_clear_line(run([SPTRACE, "-d", "0.0001", "-p", "1"]),
               "invalid duration '0.0001'", "0.001")

# Specs: the same spec twice would count every event twice; a BEGIN that is
# its own END times nothing.
spec = "sp:query_begin,sp:query_end,name=arg0"
one_clear_line(run([SPTRACE, "--query", spec, "--query", spec, "-p", "1"]),
               "the same spec", "give it once")
one_clear_line(run([SPTRACE, "--query", "sp:query_begin,sp:query_begin,"
                    "name=arg0", "-p", "1"]), "is both BEGIN and END")

# What the user typed comes back terminal-safe: no escape sequence reaches
# the terminal, and a 100 KB argument is shortened.
p = run([SPTRACE, "-p", "\x1b]0;pwned\x07"])
one_clear_line(p, "invalid PID", "\\x1b]0;pwned\\x07")
check("\x1b" not in p.stderr and "\x07" not in p.stderr,
      "no raw control byte echoed: %r" % p.stderr)
p = run([SPTRACE, "-p", "9" * 100000])
one_clear_line(p, "invalid PID", "\u2026")
check(len(p.stderr) < 1000, "a 100 KB argument is shortened (%d bytes)" %
      len(p.stderr))

# A JSON summary given where a trace file belongs: say what it is.
js = tmpfile(".json")
with open(js, "w") as f:
    f.write('{"duration_ns": 1, "queries": []}')
one_clear_line(run([SPTRACE, "summarize", js]), js, "this is a JSON summary",
               "use diff or report")
os.unlink(js)


def waiting_host():
    h = subprocess.Popen([GT, "--wait", "--threads", "1", "2"],
                         stdout=subprocess.PIPE, text=True)
    check(h.stdout.readline().startswith("ready"), "host waits")
    return h


def release(h):
    h.send_signal(signal.SIGUSR1)
    h.wait(timeout=60)
    return host_truth(h.stdout.read())


# The same target twice is one target: no false "no sp probes", each event
# counted once (the host's own count).
for args in (lambda pid: ["-p", "%d,%d" % (pid, pid)],
             lambda pid: ["-p", str(pid), "-p", str(pid)]):
    h = waiting_host()
    try:
        t = subprocess.Popen([SPTRACE, "-f", "json"] + args(h.pid),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        head = "".join(wait_tracing(t))
        truth = release(h)
        out, err = t.communicate(timeout=60)
        err = head + err
        eq(t.returncode, 0, "%s: exit 0 (%s)" % (args(h.pid), err.strip()[:200]))
        got = {q["name"]: q["count"] for q in json.loads(out)["queries"]} \
            if t.returncode == 0 else {}
        eq(got.get("outer"), truth["iterations"],
           "%s: outer counted once per iteration" % args(h.pid))
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()
p = run([SPTRACE, "-b", GT, "-b", GT, "-b", os.path.relpath(GT), "-d", "0.5"])
eq((p.returncode, [l for l in p.stderr.splitlines() if "sptrace: " in l and
                   "warning" not in l and "probe sites for" not in l]), (0, []),
   "-b H -b H (and by another path): one target, no error")

# -v is sptrace's own account, libbpf's debug stream only with -vv.
p1 = run([SPTRACE, "-v", "--", GT, "1"])
p2 = run([SPTRACE, "-vv", "--", GT, "1"])
n1, n2 = len(p1.stderr.splitlines()), len(p2.stderr.splitlines())
own = [l for l in p1.stderr.splitlines() if l.startswith("sptrace: ")]
check(p1.returncode == 0 and n1 < 40 and own and
      "-- BEGIN BTF LOAD LOG" not in p1.stderr,
      "-v: %d lines, %d of them sptrace's own, no BTF dump" % (n1, len(own)))
check(p2.returncode == 0 and n2 > n1 + 100,
      "-vv: libbpf's debug messages too (%d lines)" % n2)

# The traced command's exit status is sptrace's.
p = run([SPTRACE, "--", "sh", "-c", "exit 7"])
eq(p.returncode, 7, "sptrace exits with the command's status")
finish()
