# SPDX-License-Identifier: MIT
"""Probes in a library dlopen()ed after attaching are traced: exactly, in
launch mode (the loader stops the command until they are attached); in a
running process (never stopped) from shortly after the dlopen, with a
warning saying so."""
import os
import signal
import subprocess

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, tmpfile
import json

HOST = os.environ["DLOPEN_HOST"]
PLUGIN = os.environ["DL_PLUGIN"]

require_bpf()

out = tmpfile(".json")
p = subprocess.run([SPTRACE, "-f", "json", "-o", out, "--", HOST, PLUGIN, "50"],
                   capture_output=True, text=True, timeout=60)
eq(p.returncode, 0, "launch: exit 0 (%s)" % p.stderr.strip()[-200:])
with open(out) as f:
    s = json.load(f)
    r = rows(s)
os.unlink(out)
# A dlopen()ed library keeps only a pointer in TLS (sp_probe.h): batched.
eq(s.get("events"), "batched", "launch: batched events, the plugin too")
eq(r.get("plugin_query", {}).get("count"), 50, "launch: every call of the dlopen()ed plugin")
eq(r.get("before_dlopen", {}).get("count"), 1, "launch: the executable's own query")

host = subprocess.Popen([HOST, PLUGIN, "50", "--wait"], stdout=subprocess.PIPE,
                        text=True)
check(host.stdout.readline().startswith("ready"), "pid: host ready")
out = tmpfile(".json")
tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json", "-o", out],
                          stderr=subprocess.PIPE, text=True)
check("tracing" in tracer.stderr.readline(), "pid: attached")
host.send_signal(signal.SIGUSR1)
host.wait(timeout=30)
err = tracer.stderr.read()
eq(tracer.wait(timeout=30), 0, "pid: sptrace ends with the target")
with open(out) as f:
    r = rows(json.load(f))
os.unlink(out)
eq(r.get("plugin_query", {}).get("count"), 50, "pid: the late library's queries counted")
check("a library it loaded" in err and "attached now" in err, "pid: warning about the late library (%r)" % err.strip())
finish()
