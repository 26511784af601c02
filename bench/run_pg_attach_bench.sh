#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run_pg_attach_bench.sh BUILD_DIR [SPEC]: how long attaching a --query
# spec to PostgreSQL takes (issue 25), against a bpftrace script attaching
# the same probes, in one run. SPEC defaults to
# examples/specs/postgresql15.spec.
#
#   sptrace --query-file SPEC -b postgres   against   bpftrace -e SCRIPT
#
# where SCRIPT has, for each of the spec's lines, its probes with the same
# work (a begin stores the time per thread, an end adds its interval to a
# histogram; a single-probe line counts). Both attach to the binary, for
# every process that maps it. What is timed is what a backend sees: from
# starting the tool until every semaphore of the spec's probes is set in
# a running postmaster (read from /proc/PID/mem: the kernel raises a
# probe's semaphore in each process as it attaches the probe there), so
# neither tool's own readiness line is trusted. ROUNDS (default 5) rounds
# alternate the tools on one throw-away cluster (private socket, removed
# whatever happens); medians. Exits 1 when sptrace / bpftrace > 1.0x.
# Needs root, PostgreSQL 15 (Debian's postgresql-15) and bpftrace. About
# 30 seconds.
set -euo pipefail

BENCH_DIE=2	# 1 is a missed target
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bench_start "BUILD_DIR [SPEC]" 1 2 "$@"
bench_root
src=$(cd "$(dirname "$0")/.." && pwd)
spec=${2:-$src/examples/specs/postgresql15.spec}
[ -r "$spec" ] || die "$spec: cannot read the spec"
command -v bpftrace >/dev/null || die "bpftrace not found (apt-get install bpftrace)"
ROUNDS=${ROUNDS:-5}
[ "$ROUNDS" -ge 5 ] 2>/dev/null || die "ROUNDS=$ROUNDS: at least 5 (the figures are medians)"

dir=$(mktemp -d /tmp/sptrace-pgattach.XXXXXX)
trap 'bench_pg_stop "$dir"' EXIT
trap 'exit 130' INT TERM
bench_pg_start "$dir"
postgres=$pgbin/postgres

rc=0
python3 - "$sptrace" "$spec" "$postgres" "$pm" "$ROUNDS" "$dir" <<'PY' || rc=$?
import os, re, signal, subprocess, sys, time

sptrace, spec, postgres, pm, rounds, tmp = sys.argv[1:7]
pm, rounds = int(pm), int(rounds)

# The spec's lines (comments and blank lines aside): each a list of probe
# names, its first the begin, the others its ends.
lines = []
with open(spec) as f:
    for l in f:
        l = l.split("#", 1)[0].strip()
        if l:
            names = re.findall(r"postgresql:(\w+)", l.split("name=", 1)[0])
            if names:
                lines.append(names)
if not lines:
    sys.exit("run_pg_attach_bench.sh: %s: no postgresql probes" % spec)
probes = sorted({n for l in lines for n in l})

# Each probe's semaphore, as an address in the postmaster.
notes = subprocess.run(["readelf", "-n", postgres], capture_output=True,
                       text=True, check=True).stdout
sem = {}
for m in re.finditer(r"Provider: postgresql\s+Name: (\w+)\s+Location: \S+, "
                     r"Base: \S+, Semaphore: (0x[0-9a-f]+)", notes):
    sem[m.group(1)] = int(m.group(2), 16)
missing = [p for p in probes if not sem.get(p)]
if missing:
    sys.exit("run_pg_attach_bench.sh: no semaphore for %s" % missing)
sections = subprocess.run(["readelf", "-SW", postgres], capture_output=True,
                          text=True, check=True).stdout
secs = []
for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]{16})\s+([0-9a-f]{6,})\s+([0-9a-f]{6,})",
                     sections):
    secs.append((int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)))


def file_offset(vaddr):
    for addr, off, size in secs:
        if addr and addr <= vaddr < addr + size:
            return vaddr - addr + off
    sys.exit("run_pg_attach_bench.sh: semaphore %#x in no section" % vaddr)


real = os.path.realpath(postgres)
maps = []
with open("/proc/%d/maps" % pm) as f:
    for l in f:
        part = l.split()
        if len(part) >= 6 and os.path.realpath(part[5]) == real:
            lo, hi = (int(x, 16) for x in part[0].split("-"))
            maps.append((lo, hi, int(part[2], 16)))


def address(vaddr):
    off = file_offset(vaddr)
    for lo, hi, moff in maps:
        if moff <= off < moff + (hi - lo):
            return lo + off - moff
    sys.exit("run_pg_attach_bench.sh: semaphore at offset %#x not mapped" % off)


addrs = [address(sem[p]) for p in probes]
mem = open("/proc/%d/mem" % pm, "rb", buffering=0)


def set_count():
    n = 0
    for a in addrs:
        mem.seek(a)
        n += int.from_bytes(mem.read(2), "little") > 0
    return n


def wait_sems(want, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if (set_count() == len(addrs)) == want:
            return time.monotonic()
        time.sleep(0.001)
    sys.exit("run_pg_attach_bench.sh: semaphores never %s" % ("all set" if want else "clear"))


P = "usdt:%s:postgresql" % postgres
script = []
for i, l in enumerate(lines):
    if len(l) == 1:
        script.append("%s:%s { @c%d = count(); }" % (P, l[0], i))
        continue
    script.append("%s:%s { @s%d[tid] = nsecs; }" % (P, l[0], i))
    for e in l[1:]:
        script.append("%s:%s /@s%d[tid]/ { @h%d = hist(nsecs - @s%d[tid]); delete(@s%d[tid]); }"
                      % (P, e, i, i, i, i))
script = "\n".join(script)


def one(cmd, label):
    err = open(os.path.join(tmp, label + ".err"), "w")
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    t1 = wait_sems(True, 120)
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(30)
    except subprocess.TimeoutExpired:
        print("note: %s ignored SIGINT for 30 s; killed" % label)
        p.kill()
        rc = p.wait()
    if rc not in (0, 130, -2, -9):
        sys.exit("run_pg_attach_bench.sh: %s failed (exit %d; see %s.err)" % (label, rc, label))
    wait_sems(False, 60)
    return t1 - t0


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


if set_count():
    sys.exit("run_pg_attach_bench.sh: a semaphore is already set: another tracer?")
sp, bt = [], []
for _ in range(rounds):
    sp.append(one([sptrace, "--query-file", spec, "-b", postgres], "sptrace"))
    bt.append(one(["bpftrace", "-e", script], "bpftrace"))
fmt = lambda v: " ".join("%.3f" % x for x in v)
print("spec: %s, %d lines, %d probes" % (os.path.basename(spec), len(lines), len(probes)))
print("--query-file -b postgres until every semaphore is set: sptrace %.3f s (median of %d: %s)"
      % (median(sp), rounds, fmt(sp)))
print("the same probes, bpftrace script: %.3f s (median of %d: %s)" % (median(bt), rounds, fmt(bt)))
r = median(sp) / median(bt)
print("sptrace / bpftrace = %.2fx (target: <= 1.0x)" % r)
sys.exit(1 if r > 1.0 else 0)
PY
[ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && { echo "$prog: target missed" >&2; exit 1; }; exit 2; }
