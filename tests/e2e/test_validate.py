# SPDX-License-Identifier: MIT
"""Everything that can be checked before tracing is checked before tracing,
in one pass that names every problem: output paths (their directory, a
directory given as a file, "", an overlong name, the input itself, two
outputs that are one file), targets (a directory as the command, a PID
that does not exist, a -b file that is not there) and --func globs that
match nothing. No run is spent and no file is left behind on any failure:
not the trace file, not the --summary, not a --db database. A command that
is a script (a pyenv shim) is followed through its exec, and a probe not
found says which program really ran."""
import json
import os
import shutil
import stat
import subprocess
import tempfile

from sptest import (SPTRACE, check, eq, finish, host_truth, require_bpf, rows,
                    run, trace_json)

GT = os.environ["GT_HOST"]
FUNCS = os.environ["FUNCS_HOST"]


def lines(p):
    return [l for l in p.stderr.splitlines() if l.strip()]


def refused(p, what, *words, n=1):
    """Exit 1, n lines, each starting `sptrace: `, naming words; and the
    host never ran (it prints its truth when it does)."""
    ls = lines(p)
    ok = (p.returncode == 1 and len(ls) == n and
          all(l.startswith("sptrace: ") for l in ls) and
          all(w in p.stderr for w in words) and not p.stdout.strip())
    return check(ok, "%s: refused before tracing, %d line(s) naming %s: "
                 "exit %d, %r, stdout %r" % (what, n, words, p.returncode,
                                             p.stderr.strip()[:400],
                                             p.stdout[:80]))


require_bpf()
d = tempfile.mkdtemp(prefix="sptest-validate-")
try:
    missing = os.path.join(d, "no", "such", "dir", "x")
    refused(run([SPTRACE, "-o", missing, "--", GT, "1"]), "-o in a missing dir",
            "-o " + missing, "does not exist")
    refused(run([SPTRACE, "-o", d, "--force", "--", GT, "1"]), "-o DIR --force",
            "is a directory")
    refused(run([SPTRACE, "-o", "", "--", GT, "1"]), "-o ''",
            "an empty file name")
    p = run([SPTRACE, "-o", os.path.join(d, "n" * 5000), "--", GT, "1"])
    refused(p, "-o with a 5000-character name", "file name too long")
    check(len(p.stderr) < 1000, "the 5000-character name is shortened in the "
          "message (%d bytes)" % len(p.stderr))
    refused(run([SPTRACE, "mem", "-o", missing, "--", GT, "1"]), "mem -o",
            "does not exist")
    spt = os.path.join(d, "r.spt")
    refused(run([SPTRACE, "record", "-o", spt, "--summary", missing, "--", GT,
                 "1"]), "record --summary in a missing dir", "--summary")
    check(not os.path.exists(spt), "record: no trace file left behind")
    refused(run([SPTRACE, "record", "-o", spt, "--summary",
                 os.path.join(d, ".", "r.spt"), "--", GT, "1"]),
            "record -o X --summary ./X", "the same file")
    # Every problem in one pass: three lines, nothing created.
    db = os.path.join(d, "new.db")
    p = run([SPTRACE, "record", "-o", missing, "--summary", "", "--db", db,
             "--", d])
    refused(p, "record with three problems", "-o " + missing, "--summary ''",
            "cannot start '%s': Is a directory" % d, n=3)
    check(not os.path.exists(db), "no database created by a refused run")
    # A PID that does not exist and a -b that is not there: both named.
    refused(run([SPTRACE, "-b", missing, "-o", missing, "-d", "1"]),
            "-b missing and -o missing", "-b " + missing, "-o " + missing, n=2)

    # Writing to a device: /dev/null works; /dev/full, a /proc file and a
    # name under /sys are refused before tracing, by the live trace and
    # record alike (one check, output__check), with or without --force.
    p = run([SPTRACE, "-o", "/dev/null", "--", GT, "1"])
    eq(p.returncode, 0, "-o /dev/null: exit 0 (%s)" % p.stderr.strip()[:200])
    for o, why in (("/dev/full", "-o /dev/full: cannot write: No space left "
                    "on device"),
                   ("/proc/version", "-o /proc/version: a file of /proc "
                    "(procfs), a kernel interface"),
                   ("/sys/kernel/nosuch", "-o /sys/kernel/nosuch: /sys/kernel "
                    "is in /sys (sysfs), a kernel interface, where no file "
                    "can be created")):
        for cmd in ([], ["record"], ["mem"]):
            for force in ([], ["--force"]):
                refused(run([SPTRACE] + cmd + ["-o", o] + force +
                            ["--", GT, "1"]),
                        "%s -o %s %s" % ((cmd or ["trace"])[0], o,
                                         " ".join(force)), why)
    # stdout a device that takes nothing: said before tracing too.
    with open("/dev/full", "w") as full:
        p = subprocess.run([SPTRACE, "-f", "json", "--", GT, "1"],
                           stdout=full, stderr=subprocess.PIPE, text=True)
    eq((p.returncode, lines(p)),
       (1, ["sptrace: stdout: cannot write: No space left on device "
            "(redirect it, or give -o FILE)"]), "> /dev/full: one line")

    # A write that fails once the run is over (the disk filled while it
    # traced: a full tmpfs in a private mount namespace) loses nothing:
    # one line with the device's reason names where the report is kept,
    # and that copy is the whole run (the host's own counts); the partial
    # -o file is not left. export streams (its trace stays): one line, the
    # device's errno, nothing kept.
    mnt = os.path.join(d, "mnt")
    keep = os.path.join(d, "keep")
    os.mkdir(mnt)
    os.mkdir(keep)
    spt_full = os.path.join(d, "full.spt")
    eq(run([SPTRACE, "record", "-o", spt_full, "--", GT, "1"]).returncode, 0,
       "a trace to export")
    fill = ("mount -t tmpfs -o size=64k none %s && "
            "dd if=/dev/zero of=%s/fill bs=4k 2>/dev/null; " % (mnt, mnt))
    out = os.path.join(mnt, "out.json")
    p = run(["unshare", "--mount", "sh", "-c", fill + 'exec "$@"', "sh",
             "env", "TMPDIR=" + keep, SPTRACE, "-f", "json", "-o", out, "--",
             GT, "--threads", "1", "3"])
    kept = os.listdir(keep)
    eq((p.returncode, lines(p)),
       (1, ["sptrace: %s: write failed: No space left on device (the report "
            "is kept in %s)" % (out, os.path.join(keep, kept[0]) if kept
                                else "?")]),
       "-o on a full disk: one line naming where the run is kept")
    if kept:
        with open(os.path.join(keep, kept[0])) as f:
            s = json.load(f)
        eq(rows(s)["outer"]["count"], host_truth(p.stdout)["iterations"],
           "the kept report is the run (the host's count of outer)")
        eq(os.stat(os.path.join(keep, kept[0])).st_mode & 0o777, 0o600,
           "the kept report is private")
    for fmt in ("--folded", "--csv", "--chrome"):
        p = run(["unshare", "--mount", "sh", "-c", fill + 'exec "$@"', "sh",
                 SPTRACE, "export", fmt, spt_full, "-o", out])
        eq((p.returncode, lines(p)),
           (1, ["sptrace: %s: write failed: No space left on device" % out]),
           "export %s to a full disk: one line, the device's errno" % fmt)
    refused(run([SPTRACE, "export", "--folded", spt_full, "-o", "/dev/full"]),
            "export --folded -o /dev/full", "-o /dev/full: cannot write: No "
            "space left on device")

    # A device is written as it is: never created, chmod'ed or removed,
    # even by a record that fails after opening it. A node of its own
    # (1:3, what /dev/null is), so a regression cannot touch /dev/null.

    dn = os.path.join(d, "null")
    os.mknod(dn, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.chmod(dn, 0o666)
    p = run([SPTRACE, "record", "-o", dn, "--", GT, "1"])
    eq(p.returncode, 0, "record -o DEVICE: exit 0 (%s)" % p.stderr.strip()[:200])
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        p = run([SPTRACE, "record", "-o", dn, "--force", "-p",
                 str(sleeper.pid), "-d", "1"])
    finally:
        sleeper.kill()
        sleeper.wait()
    st = os.lstat(dn) if os.path.lexists(dn) else None
    check(p.returncode == 1 and "no sp probes" in p.stderr and st and
          stat.S_ISCHR(st.st_mode) and (st.st_mode & 0o777) == 0o666,
          "a record that fails after opening -o DEVICE --force leaves the "
          "device as it was (%s)" % (oct(st.st_mode) if st else "removed"))

    # An output that is the input.
    p = run([SPTRACE, "record", "-o", spt, "--", GT, "1"])
    eq(p.returncode, 0, "record a trace (%s)" % p.stderr.strip()[:200])
    before = open(spt, "rb").read()
    refused(run([SPTRACE, "summarize", "-o", spt, "--force", spt]),
            "summarize -o X --force X", "is the input")
    refused(run([SPTRACE, "report", "-o", spt, "--force", spt]),
            "report -o X --force X", "is the input")
    refused(run([SPTRACE, "export", "--csv", spt, "-o", spt, "--force"]),
            "export X -o X --force", "is the input")
    check(open(spt, "rb").read() == before, "the input is untouched")

    # Failures after the checks leave nothing either: no privileges, a
    # command that cannot start.
    os.chmod(d, 0o777)
    u = os.path.join(d, "u.spt")
    p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=-all", "--bounding-set=-all", SPTRACE, "record",
             "-o", u, "--", GT, "1"])
    check(p.returncode == 1 and "CAP_BPF" in p.stderr and
          not os.path.exists(u),
          "record without privileges: refused, no stub file (%s)" %
          p.stderr.strip()[:200])
    refused(run([SPTRACE, "--", d]), "-- DIR",
            "cannot start '%s': Is a directory" % d)
    refused(run([SPTRACE, "record", "-o", u, "--", d]), "record -- DIR",
            "Is a directory")
    check(not os.path.exists(u), "record -- DIR: no stub file")

    # A FIFO (or a device) where a file is read: refused at once in one
    # line (open() of a FIFO waits for a writer, which never comes), by
    # every command that reads one (common/input.c); a --db one too.
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    for args in (["summarize", fifo], ["export", "--csv", fifo, "-o", "-"],
                 ["export", "--chrome", fifo, "-o", "-"], ["list", fifo],
                 ["list", "/dev/null"], ["diff", fifo, spt_full],
                 ["report", fifo], ["report", "--mem", fifo, spt_full],
                 ["import", fifo, "--db", os.path.join(d, "i.db")],
                 ["--query-file", fifo, "--", GT, "1"],
                 ["history", "--db", fifo], ["diff", "--db", fifo, "1", "2"],
                 ["-o", os.path.join(d, "x.json"), "--db", fifo, "--", GT,
                  "1"]):
        try:
            p = run([SPTRACE] + args, timeout=20)
        except subprocess.TimeoutExpired:
            check(False, "sptrace %s: hung on the FIFO" % " ".join(args))
            continue
        refused(p, "sptrace %s" % " ".join(args), "not a regular file")

    # --func: a glob that matches nothing in the program is a typo, said
    # before the run; one for a library, once the libraries are known.
    refused(run([SPTRACE, "--func", "nosuch_*", "--", FUNCS]), "--func nosuch_*",
            "--func 'nosuch_*'", "no function")
    p = run([SPTRACE, "--func", "libc:nosuch_*", "--", FUNCS])
    check(p.returncode == 1 and "--func 'libc:nosuch_*'" in p.stderr and
          "no function matches" in p.stderr,
          "--func libc:nosuch_*: an error, not a silent exit 0 (%d, %s)" %
          (p.returncode, p.stderr.strip()[:200]))

    # A script that execs the program (a shim): the program is traced, and
    # a probe found nowhere names the script and what it ran.
    shim = os.path.join(d, "shim")
    with open(shim, "w") as f:
        f.write("#!/bin/sh\nexec %s \"$@\"\n" % GT)
    os.chmod(shim, 0o755)
    p, s = trace_json(["--", shim, "--threads", "1", "3"])
    truth = host_truth(p.stdout)
    eq(s and rows(s)["outer"]["count"], truth["iterations"],
       "a shim's program is traced through the exec (host's count)")
    p = run([SPTRACE, "--query", "nosuch:begin,nosuch:end,name=arg0", "--",
             shim, "1"])
    check(p.returncode == 1 and "(a script, #!/bin/sh, that ran %s)" % GT
          in p.stderr, "a probe not found names the script and the program "
          "it ran: %s" % p.stderr.strip()[:300])
    # bench's and diff's verdict options (cli__verdict_option): a bad value
    # is one line, before any run or file read.
    for cmd, rest in (("bench", ["--db", os.path.join(d, "v.db"), "--", GT, "1"]),
                      ("diff", [os.path.join(d, "a.json"), os.path.join(d, "b.json")])):
        for opt, val, word in (("--threshold", "x", "a percentage"),
                               ("--threshold", "1001", "a percentage"),
                               ("--fdr", "0", "a rate"), ("--fdr", "0.6", "a rate")):
            refused(run([SPTRACE, cmd, opt, val] + rest), "%s %s %s" % (cmd, opt, val),
                    "invalid %s '%s'" % (opt, val), word)
    check(not os.path.exists(os.path.join(d, "v.db")), "bench: no database left")
finally:
    shutil.rmtree(d, ignore_errors=True)
finish()
