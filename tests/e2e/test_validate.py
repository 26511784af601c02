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

    # Writing to a device: /dev/null works, /dev/full says why, once.
    p = run([SPTRACE, "-o", "/dev/null", "--", GT, "1"])
    eq(p.returncode, 0, "-o /dev/null: exit 0 (%s)" % p.stderr.strip()[:200])
    p = run([SPTRACE, "-o", "/dev/full", "-f", "json", "--", GT, "1"])
    ls = [l for l in lines(p) if "warning" not in l]
    eq((p.returncode, ls), (1, ["sptrace: /dev/full: write failed: No space "
                                "left on device"]), "-o /dev/full: one line")

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
finally:
    shutil.rmtree(d, ignore_errors=True)
finish()
