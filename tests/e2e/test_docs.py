# SPDX-License-Identifier: MIT
"""Every command README.md and docs/cli.md show, run as written on the
bundled examples, so the docs cannot drift from the tool again.

The fenced ```sh blocks are read line by line; each command runs in a
scratch directory where `build` is this build, with `sudo` dropped and
`sptrace` meaning this build's binary. Placeholders the docs use for "your
program" become real programs: PID 4242 (and 4243) a running instrumented
host, /usr/local/bin/server the bundled query engine, /usr/lib/libengine.so
an instrumented library, ./server and its marks the latency host's,
`-d N` one second, and `bench -n N` three runs of each command (enough for
`diff --history latest` to find two earlier runs). A command that runs
until Ctrl-C gets SIGINT after it has attached. Every command must exit 0 and say nothing on standard error
that starts with `sptrace: error`-like words.

Synopsis lines (the ones with [OPTIONS], PID, FILE, ...) cannot run; for
those, `sptrace COMMAND --help` must exist and name every option the line
shows. Build, install and CI commands (meson, ninja, .ci/run, example.sh)
are what CI itself runs, and are listed as such, not run here."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

from sptest import (SPTRACE, check, eq, finish, require_bpf, run, wait_links,
                    wait_tracing)

SRC = os.environ["SOURCE_ROOT"]
BUILD = os.environ["BUILD_ROOT"]
GT = os.environ["GT_HOST"]
QE = os.environ["QE_HOST"]
LAT = os.environ["LATENCY_HOST"]
GT_LIB = os.path.join(os.path.dirname(GT), "libgthost.so")

# What CI runs itself (.ci/run builds, tests and installs): not run here.
CI_ONLY = ("./example.sh", ".ci/run", "meson ", "ninja ")


def shown_commands(doc):
    """(line number, command) of every line of every ```sh block, and of
    the `sptrace ...` lines of plain ``` blocks (synopses)."""
    out, block, lang = [], None, None
    with open(os.path.join(SRC, doc), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("```"):
                if block is None:
                    block, lang = [], line[3:].strip()
                else:
                    block = None
                continue
            if block is None:
                continue
            text = line.split("  #")[0].strip()
            if lang == "sh" and text and not text.startswith("#"):
                out.append((n, text))
            elif lang == "" and re.match(r"sptrace ([a-z]+|[\[(-])(\s|$)", text):
                out.append((n, text))
    return out


def is_synopsis(cmd):
    return bool(re.search(r"\[OPTIONS\]|\[ARGS|\(|\|.*\)|\b[A-Z]{2,}\b|"
                          r"\.\.\.", cmd.split("|")[0] if "flamegraph" in cmd
                          else cmd))


def check_synopsis(where, cmd):
    words = cmd.replace("(", " ").replace(")", " ").replace("[", " ") \
        .replace("]", " ").replace("|", " ").split()
    sub = words[1] if len(words) > 1 and not words[1].startswith("-") \
        and words[1].islower() else None
    p = run([SPTRACE] + ([sub] if sub else []) + ["--help"])
    eq(p.returncode, 0, "%s: `sptrace %s--help` exists" %
       (where, sub + " " if sub else ""))
    text = p.stdout + p.stderr
    opts = [w.split("=")[0] for w in words if w.startswith("-") and w != "--"]
    for o in opts:
        for alt in o.split("|"):
            check(re.search(r"(^|[\s,(\[])" + re.escape(alt) + r"($|[\s,=)\]])",
                            text, re.M),
                  "%s: %r: its --help names %s" % (where, cmd, alt))
    if " -- CMD" in cmd:
        check("-- CMD" in text, "%s: %r: its --help shows -- CMD" % (where, cmd))


class Targets:
    """Instrumented processes that wait (--wait) until told to work."""

    def __init__(self):
        self.procs = []

    def start(self, argv):
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError("%s did not start: %r" % (argv, line))
        self.procs.append(p)
        return p

    def release(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGUSR1)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
        self.procs = []


def substitute(cmd, targets):
    """The doc's command as argv for this build, and whether it runs until
    stopped (Ctrl-C) or until its targets are released."""
    argv = shlex.split(cmd)
    if argv[0] == "sudo":
        argv = argv[1:]
    if argv[0] == "sptrace":
        argv[0] = SPTRACE
    latency = "latency" in argv
    out = []
    for w in argv:
        if re.fullmatch(r"\d{4}(,\d{4})*", w) and w.startswith("424"):
            pids = []
            for _ in w.split(","):
                host = [LAT, "--wait", "usdt"] if latency else \
                    [GT, "--wait", "--threads", "1", "30"]
                pids.append(str(targets.start(host).pid))
            w = ",".join(pids)
        w = {"/usr/local/bin/server": QE, "/usr/lib/libengine.so": GT_LIB,
             "./server": LAT}.get(w, w)
        w = w.replace("job_enqueue", "lat_enqueue") \
             .replace("job_dequeue", "lat_dequeue") \
             .replace("myprov:", "lathost:")
        out.append(w)
    # ./server (the latency host) needs its mode.
    if latency and LAT in out and "--" in out and out[-1] == LAT:
        out.append("marks")
    for i, w in enumerate(out[:-1]):
        if w in ("-d", "--duration"):
            out[i + 1] = "1"
        if w in ("-n", "--runs") and len(out) > 1 and out[1] == "bench":
            out[i + 1] = "3"
    has_pid = any(w in ("-p", "--pid") for w in out)
    has_d = any(w in ("-d", "--duration") for w in out)
    has_b = any(w in ("-b", "--binary") for w in out)
    # -b without -d runs until Ctrl-C; -p without -d until the targets exit.
    return out, has_b and not has_d, has_pid and not has_d


def outputs(argv):
    return [argv[i + 1] for i, w in enumerate(argv[:-1])
            if w in ("-o", "--output", "--summary") and argv[i + 1] != "-"]


def run_shown(where, cmd, cwd):
    targets = Targets()
    try:
        pipe = redirect = None
        if "|" in cmd:
            cmd, pipe = [c.strip() for c in cmd.split("|", 1)]
        elif " > " in cmd:    # standard output to a file
            cmd, redirect = [c.strip() for c in cmd.split(" > ", 1)]
        argv, until_int, until_release = substitute(cmd, targets)
        # The docs show each example on its own: an earlier one's output
        # file is not this one's.
        for o in outputs(argv):
            path = os.path.join(cwd, o)
            if os.path.exists(path):
                os.unlink(path)
        if redirect:
            path = os.path.join(cwd, redirect)
            if os.path.exists(path):
                os.unlink(path)
            stdout = open(path, "w")
        else:
            stdout = subprocess.PIPE
        p = subprocess.Popen(argv, cwd=cwd, stdout=stdout,
                             stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        if redirect:
            stdout.close()
        if until_int or until_release:
            wait_links(p.pid)
            time.sleep(1)
            if until_int:
                p.send_signal(signal.SIGINT)
            targets.release()
        seen = []
        if targets.procs and not (until_int or until_release):
            # -p ... -d 1: the targets work once sptrace traces (its
            # "tracing N probe sites for 1 s" line: the second counts from
            # there). Its first link was not enough: on a loaded machine
            # the rest took longer than the targets' work, which was then
            # not recorded (an empty run.spt).
            seen = wait_tracing(p)
            targets.release()
        try:
            so, se = p.communicate(timeout=120)
            se = "".join(seen) + se
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            so, se = p.communicate()
            check(False, "%s: %r: ended within 120 s" % (where, cmd))
            return
        errs = [l for l in se.splitlines()
                if l.startswith("sptrace: ") and
                not l.startswith("sptrace: warning: ") and
                re.search(r"cannot|invalid|unknown|error|failed|refus|no such|"
                          r"not found|exists", l)]
        eq((p.returncode, errs), (0, []),
           "%s: `%s` runs as shown (as %s)" % (where, cmd, " ".join(
               os.path.basename(a) if a.startswith("/") else a
               for a in argv)))
        if pipe:
            check(so.strip() != "", "%s: `%s` writes what `| %s` reads" %
                  (where, cmd, pipe))
        if redirect:
            path = os.path.join(cwd, redirect)
            check(os.path.exists(path) and os.path.getsize(path) > 0,
                  "%s: `%s` wrote %s on its standard output" %
                  (where, cmd, redirect))
        for o in outputs(argv):
            path = os.path.join(cwd, o)
            check(os.path.exists(path) and os.path.getsize(path) > 0,
                  "%s: `%s` wrote %s" % (where, cmd, o))
    finally:
        targets.close()


def fixtures(cwd):
    """Inputs docs/cli.md's examples name without making them first: two
    runs as trace files and JSON summaries, and a database of two runs."""
    for name, args in (("base.spt", ["1"]), ("new.spt", ["2"]),
                       ("old.spt", ["1"])):
        p = run([SPTRACE, "record", "-o", os.path.join(cwd, name), "--", GT,
                 "--threads", "1"] + args)
        eq(p.returncode, 0, "fixture %s (%s)" % (name, p.stderr.strip()[:200]))
    for name, args in (("base.json", ["1"]), ("new.json", ["2"])):
        p = run([SPTRACE, "-f", "json", "-o", os.path.join(cwd, name), "--",
                 GT, "--threads", "1"] + args)
        eq(p.returncode, 0, "fixture %s" % name)
    p = run([SPTRACE, "import", "--db", os.path.join(cwd, "runs.db"),
             os.path.join(cwd, "base.spt"), os.path.join(cwd, "new.spt")])
    eq(p.returncode, 0, "fixture runs.db (%s)" % p.stderr.strip()[:200])


require_bpf()
for doc in ("README.md", "docs/cli.md"):
    cwd = tempfile.mkdtemp(prefix="sptest-docs-")
    try:
        os.symlink(BUILD, os.path.join(cwd, "build"))
        if doc != "README.md":
            fixtures(cwd)
        cmds = shown_commands(doc)
        check(len(cmds) >= 10, "%s: %d commands shown" % (doc, len(cmds)))
        for n, cmd in cmds:
            where = "%s:%d" % (doc, n)
            if any(cmd.replace("sudo ", "").startswith(c) for c in CI_ONLY):
                print("note %s: `%s` is run by CI (.ci/run), not here" %
                      (where, cmd))
                continue
            if is_synopsis(cmd):
                check_synopsis(where, cmd)
            else:
                run_shown(where, cmd, cwd)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
finish()
