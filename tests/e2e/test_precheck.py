# SPDX-License-Identifier: MIT
"""--query probes and privileges in the one pass of checks before tracing
(docs/cli.md "Checked before tracing"): a spec whose probe is in none of
the files the target will have is refused with every other problem of the
command line, before any BPF is loaded or any command runs:

- -p PID: the files it maps; -b FILE: the file itself (a probe in a library
  it needs is named); -- CMD: its program and DT_NEEDED closure, a "#!"
  script followed to its interpreter.
- Not refused when the program can load more (it imports dlopen or an exec
  function, or --follow): a shim that execs the real program and a host
  that dlopen()s the library with the probes keep working.
- No privileges and a bad -o: both said, by one invocation.
- The targets themselves (issue 25): a -b file, a -p process or a command
  without sp probes, a kernel thread, a zombie, a process whose files are
  not ours to read: refused with the reason before the BPF object is
  loaded. Run under deny_bpf (every bpf() call fails), the reason is still
  the only line: nothing reached bpf() before it."""
import json
import os
import shutil
import subprocess
import tempfile
import time

from sptest import (SPTRACE, check, eq, finish, host_truth, require_bpf, rows,
                    run)

SPEC_HOST = os.environ["SPEC_HOST"]
ENABLED = os.environ["ENABLED_HOST"]
THROW = os.environ["THROW_HOST"]
DLOPEN = os.environ["DLOPEN_HOST"]
DENY = os.environ["DENY_BPF"]
GT = os.environ["GT_HOST"]
EPERM = "1"
NOPE = "nope:x__start,nope:x__done,name=x"


def err_lines(p):
    return [l for l in p.stderr.splitlines() if l.startswith("sptrace: ")]


def refused(p, what, *words, n):
    """Exit 1, exactly n `sptrace:` lines naming words, nothing else on
    stderr, and the host never ran (it prints to stdout when it does)."""
    ls = err_lines(p)
    others = [l for l in p.stderr.splitlines() if l.strip() and l not in ls]
    ok = (p.returncode == 1 and len(ls) == n and not others and
          all(w in p.stderr for w in words) and not p.stdout.strip())
    return check(ok, "%s: refused before tracing, %d lines naming %s: exit "
                 "%d, %r, stdout %r" % (what, n, words, p.returncode,
                                        p.stderr.strip()[:600], p.stdout[:80]))


require_bpf()
d = tempfile.mkdtemp(prefix="sptest-precheck-")
bad_o = os.path.join(d, "no", "dir", "x")
try:
    # Launch: a probe in no file of the program's closure, which loads
    # nothing later, with a bad -o: both problems, the host never runs.
    p = run([SPTRACE, "-o", bad_o, "--query", NOPE, "--", SPEC_HOST, "1"])
    refused(p, "launch: bad -o and a missing probe", "-o " + bad_o,
            "no probe nope:x__start in %s" % SPEC_HOST,
            "nor nope:x__done", "(their providers: sph", n=2)

    # A script whose interpreter is such a program: refused before the run,
    # naming the script and its interpreter.
    script = os.path.join(d, "script")
    with open(script, "w") as f:
        f.write("#!%s\n" % SPEC_HOST)
    os.chmod(script, 0o755)
    p = run([SPTRACE, "--query", NOPE, "--", script])
    refused(p, "a script whose interpreter has no such probe",
            "%s (a script, #!%s, run by %s)" % (script, SPEC_HOST, SPEC_HOST),
            n=1)

    # A shim (a shell script that execs the real program): the shell can
    # exec anything, so a probe it lacks is not refused before the run; the
    # program it runs has it and is traced.
    shim = os.path.join(d, "shim")
    with open(shim, "w") as f:
        f.write("#!/bin/sh\nexec %s \"$@\"\n" % SPEC_HOST)
    os.chmod(shim, 0o755)
    out = os.path.join(d, "shim.json")
    p = run([SPTRACE, "-f", "json", "-o", out, "--query",
             "sph:key,name=arg0,kind=cache,normalize=digits", "--", shim, "3"])
    eq(p.returncode, 0, "shim: traced through its exec (%s)" % p.stderr.strip()[:300])
    with open(out) as f:
        r = rows(json.load(f))
    eq(r.get("key-?", {}).get("cache_hits"), host_truth(p.stdout)["keys"] - 1,
       "shim: the probes of the program it execs counted (host's own count)")
    # ... and a probe in neither is still an error, after the run.
    p = run([SPTRACE, "--query", NOPE, "--", shim, "1"])
    check(p.returncode == 1 and p.stdout.strip() and
          "that ran %s" % SPEC_HOST in p.stderr,
          "shim: a probe found nowhere fails after the run, naming what ran "
          "(%s)" % p.stderr.strip()[:300])

    # A host that dlopen()s the library with the probes: not in its closure
    # before it runs, not refused; attached when the library is mapped.
    libstdcxx = None
    for cand in ("/lib/x86_64-linux-gnu/libstdc++.so.6",
                 "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"):
        if os.path.exists(cand):
            libstdcxx = cand
            break
    check(libstdcxx is not None, "libstdc++.so.6 found")
    out = os.path.join(d, "dl.json")
    p = run([SPTRACE, "-f", "json", "-o", out, "--query",
             "libstdcxx:throw,name=throw,kind=cache", "--", DLOPEN,
             libstdcxx, "1"])
    # dlopen_host finds no plugin_run in libstdc++ and exits 1: its status.
    check(not any("no probe" in l for l in err_lines(p)) and os.path.exists(out),
          "dlopen: a probe of a library loaded later is not refused, the run "
          "completes (exit %d, %s)" % (p.returncode, p.stderr.strip()[:300]))

    # -b: only the file given is attached; a probe of a library it needs is
    # refused before the run, naming that library.
    p = run([SPTRACE, "-o", bad_o, "-b", THROW, "-d", "5", "--query",
             "libstdcxx:throw,name=throw,kind=cache"])
    refused(p, "-b: a probe of a library it needs", "-o " + bad_o,
            "no probe libstdcxx:throw in %s" % THROW,
            "which %s loads" % THROW, "add -b ", n=2)

    # -p: the files it maps; a bad -o in the same pass.
    live = subprocess.Popen([ENABLED], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        p = run([SPTRACE, "-o", bad_o, "-p", str(live.pid), "-d", "5",
                 "--query", NOPE])
        refused(p, "-p: bad -o and a missing probe", "-o " + bad_o,
                "no probe nope:x__start in pid %d" % live.pid, n=2)
    finally:
        live.kill()
        live.wait()

    # An argument past the probe's arguments (the USDT note says how many
    # it has): refused in the same pass, before any BPF is loaded or the
    # command runs, naming the file, the probe and its arguments; with -v
    # nothing says a site was attached. Every target kind, every option
    # that reads an argument, and a --follow run that may load more (the
    # file with the probe is attached whatever else comes).
    past = "sph:outer__start,sph:outer__done,name=arg5"
    p = run([SPTRACE, "-o", bad_o, "--query", past, "--", SPEC_HOST, "1"])
    refused(p, "launch: bad -o and name=arg5 of a 1-argument probe",
            "-o " + bad_o, "--query '%s': %s: probe sph:outer__start has 1 "
            "argument: name=arg5 names none (arg0 is its only one; sptrace "
            "list %s shows" % (past, SPEC_HOST, SPEC_HOST), n=2)
    p = run([SPTRACE, "-v", "--query", past, "--", SPEC_HOST, "1"])
    refused(p, "launch -v: name=arg5, nothing attached", "name=arg5", n=1)
    check("attached" not in p.stderr and "tracing" not in p.stderr,
          "launch -v: name=arg5 refused before attaching (%r)" % p.stderr[-300:])
    spec = os.path.join(d, "past.spec")
    with open(spec, "w") as f:
        f.write("# comment\nsph:outer__start,sph:outer__done,name=arg0\n"
                "sph:a__start,sph:a__done,name=arg0\n")
    p = run([SPTRACE, "--query-file", spec, "--", SPEC_HOST, "1"])
    refused(p, "a spec file's line 3: name=arg0 of a probe without arguments",
            "%s:3: 'sph:a__start,sph:a__done,name=arg0'" % spec,
            "probe sph:a__start has 0 arguments", "(it has none;", n=1)
    p = run([SPTRACE, "-v", "--follow", "--query",
             "sph:read,name=rel:arg0,kind=cache,if=arg2==1", "--", SPEC_HOST, "1"])
    refused(p, "--follow: if=arg2 of a 2-argument probe",
            "probe sph:read has 2 arguments: if=arg2 names none (it has arg0..arg1;",
            n=1)
    check("attached" not in p.stderr,
          "--follow -v: if=arg2 refused before attaching (%r)" % p.stderr[-300:])
    p = run([SPTRACE, "-b", SPEC_HOST, "-d", "5", "--query",
             "sph:rd__start,sph:rd__done,name=rd,hit=arg1!=0"])
    refused(p, "-b: hit=arg1 of a 1-argument END",
            "probe sph:rd__done has 1 argument: hit=arg1 names none", n=1)
    p = run([SPTRACE, "serve", "--listen", "127.0.0.1:0", "-b", SPEC_HOST,
             "--query", past], timeout=30)
    refused(p, "serve -b: name=arg5", "name=arg5 names none", n=1)
    live = subprocess.Popen([ENABLED], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        p = run([SPTRACE, "-o", bad_o, "-p", str(live.pid), "-d", "5",
                 "--query", "sp:query_begin,sp:query_end,name=arg4"])
        refused(p, "-p: bad -o and name=arg4 of a 1-argument probe",
                "-o " + bad_o, "probe sp:query_begin has 1 argument: "
                "name=arg4 names none", n=2)
    finally:
        live.kill()
        live.wait()

    # No privileges and a bad -o, as a user: both lines, for every
    # tracing command, before anything starts.
    os.chmod(d, 0o777)
    user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            "--inh-caps=-all"]
    for cmd in ([], ["record"], ["mem"], ["latency", "--from", "sp:query_begin",
                                          "--to", "sp:query_end"]):
        o = os.path.join(d, "out", "x")
        p = run(user + [SPTRACE] + cmd + ["-o", o, "--", SPEC_HOST, "1"])
        refused(p, "%s as a user with a bad -o" % (cmd[:1] or ["trace"])[0],
                "-o " + o, "CAP_BPF", n=2)
    p = run(user + [SPTRACE, "serve", "--listen", "nonsense:addr", "--",
                    SPEC_HOST, "1"])
    refused(p, "serve as a user with a bad --listen", "--listen", "CAP_BPF",
            n=2)

    # The targets, before anything is loaded: under deny_bpf the load
    # would fail with EPERM, so one line naming the target's problem means
    # the check came first. With a bad -o both lines, in one pass.
    nobpf = [DENY, EPERM, SPTRACE]
    p = run(nobpf + ["-b", "/bin/ls", "-d", "1"])
    refused(p, "-b a file without sp probes", "/bin/ls: no sp probes in "
            "this file", n=1)
    p = run(nobpf + ["-o", bad_o, "-b", "/bin/ls", "-d", "1"])
    refused(p, "-b without probes and a bad -o", "-o " + bad_o,
            "/bin/ls: no sp probes", n=2)
    # A library it needs has them: -b traces only the file given.
    lib = os.path.join(os.path.dirname(GT), "libgthost.so")
    exe = os.path.join(d, "needs_lib")
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write("unsigned long gt_lib_query(const char *, unsigned long);\n"
                "int main(void) { return (int)gt_lib_query(\"x\", 0); }\n")
    cc = run(["cc", "-o", exe, os.path.join(d, "main.c"), lib,
              "-Wl,-rpath," + os.path.dirname(lib)])
    if check(cc.returncode == 0, "a program needing libgthost.so built (%s)"
             % cc.stderr.strip()[:200]):
        p = run(nobpf + ["-b", exe, "-d", "1"])
        refused(p, "-b an exe whose library has the probes",
                "%s: no sp probes in this file" % exe,
                "%s, which it loads, has some: add -b %s" % (lib, lib), n=1)

    # A kernel thread: its reason, for tracing and for list.
    kthread = next(pid for pid in sorted(int(x) for x in os.listdir("/proc")
                                          if x.isdigit())
                   if not os.path.exists("/proc/%d/exe" % pid) and
                   int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1]
                       .split()[6]) & 0x00200000)
    p = run(nobpf + ["-p", str(kthread), "-d", "1"])
    refused(p, "-p a kernel thread", "pid %d (" % kthread,
            "a kernel thread, which runs no program", n=1)
    p = run([SPTRACE, "list", "-p", str(kthread)])
    refused(p, "list -p a kernel thread", "a kernel thread", n=1)
    check("No such process" not in p.stderr,
          "list -p a live kernel thread is not 'No such process' (%r)"
          % p.stderr.strip())

    # A zombie: exited, not reaped.
    z = subprocess.Popen(["true"])
    for _ in range(200):
        if open("/proc/%d/stat" % z.pid).read().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.01)
    p = run(nobpf + ["-p", str(z.pid), "-d", "1"])
    z.wait()
    refused(p, "-p a zombie", "pid %d (true): a zombie" % z.pid, n=1)

    # A process whose mapped files are not ours to open: root without
    # CAP_SYS_PTRACE and a root target holding it.
    live = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.1)
        p = run(["setpriv", "--bounding-set=-sys_ptrace",
                 "--inh-caps=-sys_ptrace"] + nobpf +
                ["-p", str(live.pid), "-d", "1"])
        refused(p, "-p a process whose files are not ours to read",
                "pid %d (sleep): cannot read the files it maps" % live.pid,
                "Permission denied", "needs CAP_SYS_PTRACE, which this root "
                "process lacks", n=1)
        # ... and one we may read, without sp probes.
        p = run(nobpf + ["-p", str(live.pid), "-d", "1"])
        refused(p, "-p a process without sp probes",
                "pid %d (sleep): no sp probes in its executable or "
                "libraries" % live.pid, n=1)
    finally:
        live.kill()
        live.wait()

    # A command whose program and libraries have no sp probes and load no
    # others: refused, for trace and record alike; record leaves no file.
    spt = os.path.join(d, "r.spt")
    for cmd in ([], ["record", "-o", spt]):
        p = run(nobpf + cmd + ["--", "/bin/true"])
        refused(p, "%s -- /bin/true" % (cmd[:1] or ["trace"])[0],
                "/bin/true: no sp probes in /bin/true or its libraries, "
                "and it loads no others", n=1)
    check(not os.path.exists(spt), "record -- /bin/true: no file left")
    # One that can exec (a shell): traced, and told at the end, by both.
    for cmd in ([], ["record", "-o", spt]):
        p = run([SPTRACE] + cmd + ["--", "sh", "-c", "true"])
        check(p.returncode == 0 and
              "warning: 'sh' has no sp probes in its executable or "
              "libraries" in p.stderr,
              "%s -- sh -c true: run, then the warning (exit %d, %r)"
              % ((cmd[:1] or ["trace"])[0], p.returncode,
                 p.stderr.strip()[:300]))
    # mem needs no sp probes: not refused.
    p = run([SPTRACE, "mem", "--", "/bin/true"])
    eq(p.returncode, 0, "mem -- /bin/true: not refused (%s)"
       % p.stderr.strip()[:200])
finally:
    shutil.rmtree(d, ignore_errors=True)
finish()
