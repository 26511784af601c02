# SPDX-License-Identifier: MIT
"""Privileges and kernel features: each missing piece is one line naming
it, never a libbpf dump (libbpf's own messages only with -v).

- Capabilities dropped from root with setpriv (bounding set): CAP_BPF,
  CAP_PERFMON, and CAP_SYS_ADMIN, which stands in for both.
- Kernel lockdown, a kernel without BTF, a kernel without bpf(): made real
  for one process without touching the machine. A seccomp filter
  (tests/hosts/deny_bpf) makes every bpf() call fail with the errno that
  kernel gives, and a private mount namespace puts the matching
  /sys/kernel/security/lockdown in place, or hides /sys/kernel/btf.
- sptrace needs no kernel BTF: with /sys/kernel/btf hidden it traces
  exactly."""
import json
import os
import signal
import subprocess

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, run, tmpfile

SOAK = os.environ["SOAK_HOST"]
DENY = os.environ["DENY_BPF"]
CMD = ["-d", "5", "--", SOAK, "--iterations", "1000", "--rate", "0"]
EPERM, ESRCH, ENOSYS = 1, 3, 38


def one_clear_line(p, what, *words, absent=()):
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    ok = (p.returncode != 0 and len(lines) == 1 and
          lines[0].startswith("sptrace: ") and
          all(w in lines[0] for w in words) and
          not any(w in lines[0] for w in absent))
    return check(ok, "%s: exit %d, one line naming %s: %r" % (
        what, p.returncode, words, p.stderr.strip()))


def without_caps(caps, args):
    return run(["setpriv", "--bounding-set=" + ",".join("-" + c for c in caps),
                "--inh-caps=-all", SPTRACE] + args)


def in_mount_ns(setup, args):
    """sptrace ARGS in a private mount namespace after the shell SETUP."""
    return run(["unshare", "--mount", "sh", "-c", setup + ' && exec "$@"',
                "sh"] + args)


require_bpf()

one_clear_line(without_caps(["bpf", "sys_admin"], CMD), "no CAP_BPF",
               "CAP_BPF", absent=("CAP_PERFMON",))
one_clear_line(without_caps(["perfmon", "sys_admin"], CMD), "no CAP_PERFMON",
               "CAP_PERFMON", absent=("CAP_BPF ",))
one_clear_line(without_caps(["bpf", "perfmon", "sys_admin"], CMD),
               "none of the three", "CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN")

# CAP_BPF and CAP_PERFMON without CAP_SYS_ADMIN are enough for -p.
host = subprocess.Popen([SOAK, "--wait", "--rate", "0", "--iterations",
                         "1000"], stdout=subprocess.PIPE, text=True)
out = tmpfile(".json")
try:
    check(host.stdout.readline().startswith("ready"), "no SYS_ADMIN: host ready")
    tracer = subprocess.Popen(["setpriv", "--bounding-set=-sys_admin",
                               "--inh-caps=-all", SPTRACE, "-p", str(host.pid),
                               "-f", "json", "-o", out],
                              stderr=subprocess.PIPE, text=True)
    check("Ctrl-C to stop" in tracer.stderr.readline(),
          "no SYS_ADMIN: attached with CAP_BPF and CAP_PERFMON")
    host.send_signal(signal.SIGUSR1)
    truth = json.loads(host.stdout.readline())
    host.wait(timeout=30)
    eq(tracer.wait(timeout=30), 0, "no SYS_ADMIN: exit status")
    with open(out) as f:
        r = rows(json.load(f))
    for name, n in truth["queries"].items():
        eq(r.get(name, {}).get("count"), n, "no SYS_ADMIN: %s exact" % name)
finally:
    for p in (host,):
        if p.poll() is None:
            p.kill()
            p.wait()
    if os.path.exists(out):
        os.unlink(out)

# Lockdown: bpf() fails with EPERM and the kernel says confidentiality.
LOCKDOWN = ("mount -t tmpfs sptest /sys/kernel/security && "
            "echo 'none integrity [confidentiality]' > "
            "/sys/kernel/security/lockdown")
p = in_mount_ns(LOCKDOWN, [DENY, str(EPERM), SPTRACE] + CMD)
one_clear_line(p, "lockdown", "kernel lockdown (confidentiality)",
               absent=("libbpf",))
p = in_mount_ns(LOCKDOWN, [DENY, str(EPERM), SPTRACE, "-v"] + CMD)
check("libbpf: " in p.stderr and "kernel lockdown" in p.stderr,
      "lockdown -v: libbpf's messages, and the explanation")
p = in_mount_ns("mount -t tmpfs sptest /sys/kernel/security",
                [DENY, str(EPERM), SPTRACE] + CMD)
one_clear_line(p, "EPERM without lockdown", "Operation not permitted",
               "CAP_BPF", absent=("lockdown",))

# No BTF: sptrace does not need it, and explains when a load fails for it.
NO_BTF = "mount -t tmpfs sptest /sys/kernel/btf"
p = in_mount_ns(NO_BTF, [SPTRACE, "-f", "json"] + CMD)
eq(p.returncode, 0, "no BTF: traces")
lines = p.stdout.splitlines()
if len(lines) >= 2:
    truth, s = json.loads(lines[0]), json.loads("".join(lines[1:]))
    for name, n in truth["queries"].items():
        eq(rows(s).get(name, {}).get("count"), n, "no BTF: %s exact" % name)
else:
    check(False, "no BTF: host and sptrace output (%r)" % p.stdout)
p = in_mount_ns(NO_BTF, [DENY, str(ESRCH), SPTRACE] + CMD)
one_clear_line(p, "no BTF", "no BTF", "CONFIG_DEBUG_INFO_BTF",
               absent=("libbpf",))

# No bpf() at all.
p = run([DENY, str(ENOSYS), SPTRACE] + CMD)
one_clear_line(p, "no bpf()", "no bpf() system call", "CONFIG_BPF_SYSCALL")
finish()
