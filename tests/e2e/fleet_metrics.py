# SPDX-License-Identifier: MIT
"""Helpers of the `sptrace serve` tests: start serve and find its port,
scrape /metrics, and parse the exposition strictly (every line must be a
comment or a sample; label values unescaped); a process's labels from its
own /proc, and from the exposition's sptrace_process_info."""
import os
import re
import signal
import subprocess
import urllib.request

from sptest import SPTRACE, check

_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')


def unescape(v):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def parse(text):
    """[(name, {label: value}, float)]; raises ValueError on a bad line."""
    out = []
    for line in text.split("\n")[:-1]:
        if line.startswith("# "):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError("bad line: %r" % line[:200])
        labels = {}
        body = m.group(3) or ""
        pos = 0
        while pos < len(body):
            lm = _LABEL.match(body, pos)
            if not lm:
                raise ValueError("bad labels: %r" % line[:200])
            labels[lm.group(1)] = unescape(lm.group(2))
            pos = lm.end()
        out.append((m.group(1), labels, float(m.group(4))))
    if not text.endswith("\n"):
        raise ValueError("no final newline")
    return out


def start_serve(args):
    """sptrace serve ARGS --listen 127.0.0.1:0; returns (Popen, base URL)."""
    p = subprocess.Popen([SPTRACE, "serve", "--listen", "127.0.0.1:0"] + args,
                         stderr=subprocess.PIPE, text=True)
    url = None
    lines = []
    for _ in range(20):
        line = p.stderr.readline()
        if not line:
            break
        lines.append(line)
        if "serving http://" in line:
            url = line.split("serving ")[1].strip().rsplit("/metrics", 1)[0]
            break
    check(url is not None, "serve started: %r" % "".join(lines)[-300:])
    return p, url


def stop_serve(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return p.returncode


def scrape(url, openmetrics=False, timeout=30):
    """(status, content type, text)."""
    req = urllib.request.Request(url + "/metrics")
    if openmetrics:
        req.add_header("Accept", "application/openmetrics-text; version=1.0.0")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def value(samples, name, **labels):
    """The one sample `name` with these labels (None if absent)."""
    got = [v for n, l, v in samples if n == name and
           all(l.get(k) == str(w) for k, w in labels.items())]
    return got[0] if len(got) == 1 else None


def proc_facts(pid):
    """The labels of process pid as its own /proc says them: comm, the
    executable, and the title (cmdline's arguments joined by spaces,
    NUL or space padding trimmed, over 127 bytes cut to 124 and "...";
    ASCII titles only)."""
    with open("/proc/%d/comm" % pid) as f:
        comm = f.read().rstrip("\n")
    exe = os.readlink("/proc/%d/exe" % pid)
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        title = f.read().rstrip(b"\0 ").replace(b"\0", b" ").decode()
    if len(title) > 127:
        title = title[:124] + "..."
    return {"pid": str(pid), "comm": comm, "binary": exe, "title": title}


def info_of(samples, pid):
    """The labels of the one sptrace_process_info sample of pid (None if
    there is not exactly one, or its value is not 1)."""
    got = [(l, v) for n, l, v in samples
           if n == "sptrace_process_info" and l.get("pid") == str(pid)]
    return got[0][0] if len(got) == 1 and got[0][1] == 1.0 else None


def query_pids(samples):
    """The pids of the per-query series."""
    return {l.get("pid") for n, l, v in samples if n.startswith("sptrace_query_")}


def info_pids(samples):
    return [l.get("pid") for n, l, v in samples if n == "sptrace_process_info"]


def query_label_keys(samples):
    """The label names the per-query series have, `le` aside."""
    return {tuple(sorted(k for k in l if k != "le")) for n, l, v in samples
            if n.startswith("sptrace_query_")}
