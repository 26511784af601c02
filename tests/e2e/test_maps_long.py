# SPDX-License-Identifier: MIT
"""/proc/PID/maps lines longer than 4 KiB: an instrumented library opened
from a directory path of about 4,100 bytes (the line is longer than a page,
the path still fits PATH_MAX) and of about 6,000 bytes (longer than
PATH_MAX: no system call can open it by name). Attached with -p, its
probes count exactly in both cases. (Paths with spaces and " (deleted)":
tests/e2e/test_dlopen.py and test_binary.py.)"""
import json
import os
import shutil
import signal
import subprocess
import tempfile

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, tmpfile

LIFE = os.environ["LIFE_HOST"]
LIB = os.environ["LIFE_LIB"]
K = 777


def deep_copy(top, length):
    """Copies LIB into nested directories under top until the file's path
    is at least `length` bytes; returns that path (never opened whole)."""
    comp = "d" * 200
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    path = top
    while len(path) + len("/liblifelib.so") < length:
        os.mkdir(comp, dir_fd=fd)
        nfd = os.open(comp, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd, path = nfd, path + "/" + comp
    with open(LIB, "rb") as src:
        data = src.read()
    out = os.open("liblifelib.so", os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                  0o755, dir_fd=fd)
    os.write(out, data)
    os.close(out)
    os.close(fd)
    return path + "/liblifelib.so"


def maps_line_len(pid, needle):
    with open("/proc/%d/maps" % pid, "rb") as f:
        return max((len(l) for l in f if needle in l), default=0)


require_bpf()
top = tempfile.mkdtemp(prefix="sptest-long-")
try:
    for length in (4100, 6000):
        what = "%d-byte path" % length
        os.mkdir(os.path.join(top, str(length)))
        lib = deep_copy(os.path.join(top, str(length)), length)
        host = subprocess.Popen([LIFE, "dlopen", str(K), lib],
                                stdout=subprocess.PIPE, text=True)
        out = tmpfile(".json")
        try:
            check(host.stdout.readline().startswith("ready"),
                  "%s: host loaded the library" % what)
            n = maps_line_len(host.pid, b"liblifelib.so")
            check(n > 4096, "%s: its maps line is %d bytes (> 4 KiB)" % (what, n))
            tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f",
                                       "json", "-o", out],
                                      stderr=subprocess.PIPE, text=True)
            line = tracer.stderr.readline()
            check("Ctrl-C to stop" in line, "%s: attached (%r)" % (what, line))
            host.send_signal(signal.SIGUSR1)
            truth = json.loads(host.stdout.readline())
            host.wait(timeout=30)
            err = tracer.communicate(timeout=30)[1]
            eq(tracer.returncode, 0, "%s: sptrace exit status" % what)
            check(not err.strip(), "%s: no warning (%r)" % (what, err))
            with open(out) as f:
                s = json.load(f)
            eq(rows(s).get("life_lib", {}).get("count"),
               truth["queries"]["life_lib"], "%s: probes counted exactly" % what)
            eq(s["errors"]["unbalanced"], 0, "%s: nothing unbalanced" % what)
        finally:
            if host.poll() is None:
                host.kill()
                host.wait()
            if os.path.exists(out):
                os.unlink(out)
finally:
    shutil.rmtree(top)
finish()
