# SPDX-License-Identifier: MIT
"""Batched TSC timestamps under an NTP-slewed clock (include/sptrace/tsc_map.h),
or, where the kernel's clock source is not the TSC, clock_gettime ones:
sptrace attaches and calibrates, then this test sets the kernel's NTP
frequency (adjtimex ADJ_FREQUENCY) to +500 ppm, later to -500 ppm, and a
host (tests/hosts/slew_host.c) runs sleeping queries timed by its own
CLOCK_MONOTONIC readings inside and around the probes. sptrace's
per-query totals must lie between the host's two readings within 20 ppm
(a map calibrated once is 500 ppm off). Queries whose BEGIN is a batched
record (TSC) and END a per-event probe (bpf_ktime_get_ns()) on the same
thread, and the reverse, must too, within 5 us per query more (a map
calibrated once is off there by the offset it drifted since load:
milliseconds). It traces with `sptrace record --summary`: the recording's
replay must equal the live figures.

It changes the clock rate of the whole machine for about 12 s: meson runs
it alone (is_parallel: false). The original frequency is restored in every
case: a finally clause, SIGTERM/SIGHUP/SIGINT handlers, and a guardian in
its own session that restores it when this one dies however it dies
(SIGKILL included). The +500 and -500 ppm phases last as long as each
other, so CLOCK_REALTIME ends about where it would have (the test prints
by how much it moved: 500 ppm of the two phases' difference).
A running time daemon (chronyd, ntpd, systemd-timesyncd, ...) would fight
the change: the test then refuses to run (skip, a failure in CI), and it
checks in any case that CLOCK_MONOTONIC really ran at the rate it set,
against CLOCK_MONOTONIC_RAW (the TSC, unslewed)."""
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

from sptest import (SPTRACE, check, finish, require, require_bpf, tmpfile,
                    wait_tracing)

HOST = os.environ["SLEW_HOST"]
PPM = 500
# Measured on the 2-vCPU test VM (docs/numbers.md, "The TSC map"): the
# kernel applies a new ADJ_FREQUENCY within its next tick (the rate against
# CLOCK_MONOTONIC_RAW was the full +-500 ppm in the first 50 ms window).
# sptrace samples again 100 ms after a sample whose rate moved, so its map
# follows within about 2.2 s of the +500 step and 3.3 s of the 1000 ppm
# swing to -500, whose offset (up to 1 ms) goes at the 500 ppm clamp
# (unit_tsc_map: worst of 20 phases of each step against the schedule).
# When each sample came a period after the last, a CI run found the plus
# phase 176 ppm off after 4 s (the map's offset had reached 963 us), so
# the test waited 7 s. At load, samples 100 and 300 ms after the 20 ms
# calibration remove its error (the map within 1 ppm from 0.4 s on, in
# the unit test, from a calibration 200 ppm off).
# The same wait after both steps, so the two phases last as long as each
# other (CLOCK_REALTIME, below): 4.5 s, 1.2 s more than the swing's worst.
SETTLE_BASE_S = 1.0
SETTLE_S = 4.5
# Each query's sptrace time must lie between the host's inner and outer
# readings (slew_host.c), within this many ppm of the inner one: the map's
# slope error. Intervals of 50 ms, so 1 ppm is 50 ns of one.
# Until the host read its clock around the probes too, a single stall of
# its thread between its clock read and the END probe (39-120 us, 3 of 360
# END windows in four runs at load average 3.5-5, the longest two during a
# parallel compile) put a phase of 20 queries of 50 ms 127 ppm high at the
# nominal rate, the map within 5 ns of the clock; runs found the +-500 ppm
# phases 240-250 ppm high the same way (always high: the stall is inside
# the probes' interval, outside the host's), and the test allowed 300 ppm.
# A 250 us busy wait there in one query of 20 gives +250 ppm in every
# phase, and passes now.
TOL_PPM = 20
# A mixed pair (one TSC, one bpf_ktime timestamp) is off by the map's
# offset from CLOCK_MONOTONIC, which is a few ns once it has converged; the
# per-event trap (5 to 40 us under load: the "45 us" mixed pairs of one run)
# lies between the host's two readings. Without recalibration the offset
# drifts 0.1-2.9 ms.
TOL_OFFSET_NS = 5000
DAEMONS = ("chronyd", "ntpd", "systemd-timesyn", "openntpd", "ntpsec",
           "timemaster", "phc2sys", "ptp4l", "vmtoolsd", "ntpdate", "sntp")

ADJ_FREQUENCY = 0x0002


class Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class Timex(ctypes.Structure):
    """struct timex of <sys/timex.h> (x86-64 layout: longs, padding by
    ctypes' natural alignment)."""
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long),
                ("freq", ctypes.c_long), ("maxerror", ctypes.c_long),
                ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                ("constant", ctypes.c_long), ("precision", ctypes.c_long),
                ("tolerance", ctypes.c_long), ("time", Timeval),
                ("tick", ctypes.c_long), ("ppsfreq", ctypes.c_long),
                ("jitter", ctypes.c_long), ("shift", ctypes.c_int),
                ("stabil", ctypes.c_long), ("jitcnt", ctypes.c_long),
                ("calcnt", ctypes.c_long), ("errcnt", ctypes.c_long),
                ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int),
                ("pad", ctypes.c_int * 11)]


libc = ctypes.CDLL(None, use_errno=True)


def adjtimex(modes=0, freq=0):
    t = Timex(modes=modes, freq=freq)
    if libc.adjtimex(ctypes.byref(t)) < 0:
        e = ctypes.get_errno()
        raise OSError(e, "adjtimex: " + os.strerror(e))
    return t


def set_freq(scaled):
    """scaled: ppm << 16, as struct timex's freq."""
    adjtimex(ADJ_FREQUENCY, scaled)


# The guardian: restores the frequency when its stdin closes, i.e. when this
# process exits for any reason; its own session, so a signal to our
# process group does not take it first.
GUARDIAN = r"""
import ctypes, sys
sys.stdin.read()
class T(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long),
                ("freq", ctypes.c_long), ("rest", ctypes.c_long * 40)]
t = T(modes=0x0002, freq=int(sys.argv[1]))
ctypes.CDLL(None).adjtimex(ctypes.byref(t))
"""


def daemons():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % pid) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in DAEMONS:
            found.append("%s (pid %s)" % (comm, pid))
    return found


def clocks():
    """(CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC), the raw one as the midpoint
    of two readings around the other; of 25 tries the one with the
    narrowest bracket, so a preemption inside one (a CI run once measured a
    base phase 119 ppm off, 360 us over its 3 s) does not skew a rate."""
    best = None
    for _ in range(25):
        a = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        m = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        b = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        if best is None or b - a < best[0]:
            best = (b - a, (a + b) // 2, m)
    return best[1], best[2]


def rate_ppm(c0, c1):
    return ((c1[1] - c0[1]) / (c1[0] - c0[0]) - 1) * 1e6


class Host:
    def __init__(self):
        self.p = subprocess.Popen([HOST], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)

    def run(self, name, n, ms, mode):
        self.p.stdin.write("run %s %d %d %s\n" % (name, n, ms, mode))
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line.startswith("{"):
            raise RuntimeError("slew_host: %r" % line)
        return json.loads(line)

    def quit(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.close()
            except OSError:
                pass
            self.p.wait(timeout=30)


def phase(host, tag, truth, n=20, ms=50):
    """The three kinds of query in the current clock state."""
    truth[tag + "_b"] = host.run(tag + "_b", n, ms, "b")
    truth[tag + "_bp"] = host.run(tag + "_bp", n // 2, ms, "bp")
    truth[tag + "_pb"] = host.run(tag + "_pb", n // 2, ms, "pb")


def compare(summary, truth, rates):
    """Checks each query's total; False if one failed."""
    rows = {q["name"]: q for q in summary["queries"]}
    ok = True
    for name, t in sorted(truth.items()):
        if name.startswith("warm"):
            continue
        r = rows.get(name)
        if not check(r is not None and r["count"] == t["n"],
                     "%s: count %s == %d" % (name, r and r["count"], t["n"])):
            ok = False
            continue
        tag = name.split("_")[0]
        inner, outer, got = t["total_ns"], t["outer_ns"], r["total_ns"]
        # both batched: the map's slope; mixed: its offset too, per query
        slack = TOL_PPM * 1e-6 * inner
        if not name.endswith("_b"):
            slack += TOL_OFFSET_NS * t["n"]
        ok &= bool(check(
            inner - slack <= got <= outer + slack,
            "%s (clock at %+.1f ppm): sptrace %d ns between the host's %d "
            "and %d ns (%+.1f and %+.1f ppm, %+.2f and %+.2f us per query) "
            "within %.1f us" % (
                name, rates.get(tag, 0.0), got, inner, outer,
                (got - inner) / inner * 1e6, (got - outer) / inner * 1e6,
                (got - inner) / t["n"] / 1000, (got - outer) / t["n"] / 1000,
                slack / 1000)))
    return ok


def timeline(errlines, marks):
    """sptrace -vv's line per recalibration and the test's own steps, in s
    from the base phase: how soon the map followed each step."""
    t00 = marks[0][1]
    ev = [(t, "test: " + m) for m, t in marks]
    ev += [(t, l.strip()) for t, l in errlines if "TSC map" in l]
    for t, l in sorted(ev):
        print("%8.3f %s" % ((t - t00) / 1e9, l))


def intervals(truth, spt, t00):
    """Each query from the recording against the host's readings: where
    sptrace's BEGIN and END fell between them (us), for a failed check.
    The BEGIN is as stamped, before any flush it paid is taken off."""
    p = subprocess.run([SPTRACE, "export", "--csv", spt, "-o", "-"],
                       capture_output=True, text=True, timeout=120)
    seq = {}
    for line in p.stdout.splitlines()[1:]:
        f = line.split(",")
        if len(f) > 4 and f[3] in ("query_begin", "query_end"):
            seq.setdefault((f[4], f[3]), []).append(int(f[0]))
    for name, t in sorted(truth.items(), key=lambda x: x[1]["iv"][0][0]):
        bs, es = seq.get((name, "query_begin"), []), seq.get((name, "query_end"), [])
        for i, (h0, h1, hp, hq) in enumerate(t["iv"][:min(len(bs), len(es))]):
            print("%-8s %2d at %7.3f s: outer->B %6.1f B->inner %6.1f "
                  "inner->E %6.1f E->outer %6.1f us; %+7.1f us over inner" % (
                      name, i, (h0 - t00) / 1e9, (bs[i] - hp) / 1e3,
                      (h0 - bs[i]) / 1e3, (es[i] - h1) / 1e3,
                      (hq - es[i]) / 1e3,
                      ((es[i] - bs[i]) - (h1 - h0)) / 1e3))


def main():
    require_bpf()
    require(os.path.exists(HOST), "the slew host (%s)" % HOST)
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
        src = f.read().strip()
    # Elsewhere (kvm-clock on some VMs) the probes stamp records with
    # clock_gettime(CLOCK_MONOTONIC), the clock bpf_ktime_get_ns() reads:
    # no map, but the same checks hold, batched and mixed pairs alike.
    tsc = src == "tsc"
    print("clock source %s: batched records stamped with %s" %
          (src, "the TSC" if tsc else "clock_gettime"))
    d = daemons()
    require(not d, "no time daemon running (found %s: it would set the "
            "clock's frequency back while the test runs)" % ", ".join(d))
    orig = adjtimex().freq
    print("adjtimex: frequency %+.3f ppm before the test" % (orig / 65536))

    guardian = subprocess.Popen([sys.executable, "-c", GUARDIAN, str(orig)],
                                stdin=subprocess.PIPE, start_new_session=True)

    def on_signal(signo, frame):
        raise SystemExit(128 + signo)

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)

    out, spt = tmpfile(".json"), tmpfile(".spt")
    host = Host()
    sp = None
    truth, rates = {}, {}
    try:
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPTRACE_PER_EVENT", "SPTRACE_NO_TSC")}
        # record: BPF converts before the event is written, so the replay
        # of the file must give the live figures to the nanosecond
        sp = subprocess.Popen([SPTRACE, "record", "-vv", "-p", str(host.p.pid),
                               "-o", spt, "--summary", out], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        seen = wait_tracing(sp)
        errlines = []

        def reader():
            for l in sp.stderr:
                errlines.append((time.clock_gettime_ns(time.CLOCK_MONOTONIC), l))
        rd = threading.Thread(target=reader, daemon=True)
        rd.start()
        marks = []
        stamp = "TSC timestamps" if tsc else "clock_gettime timestamps"
        if not check(any(stamp in l for l in seen),
                     "sptrace says batched records are stamped with %s (%s)" %
                     (stamp, "".join(seen).strip()[-300:])):
            return
        # every site's first hit (the kernel patches a per-event site then)
        for mode in ("b", "bp", "pb"):
            host.run("warm_" + mode, 2, 5, mode)
        # The base phase, too, starts once the map has settled: a CI run
        # right after load found it 137 ppm off, which was taken for the
        # 20 ms calibration's error, but the -vv lines show that within
        # 0.03 ppm of the rate a second later in every run here, and a
        # stall of the host between its clock read and a probe does that
        # (above). Samples at 100 and 300 ms after load remove a bad one.
        time.sleep(SETTLE_BASE_S)
        c0 = clocks()
        marks.append(("base phase", c0[1]))
        phase(host, "base", truth)
        rates["base"] = rate_ppm(c0, clocks())
        # +PPM, then -PPM for as long: CLOCK_REALTIME ends where it was
        moved = 0.0
        for tag, ppm in (("plus", PPM), ("minus", -PPM)):
            set_freq(ppm << 16)     # the kernel's limit, either way
            c0 = clocks()
            marks.append(("frequency %+d ppm" % ppm, c0[1]))
            time.sleep(SETTLE_S)
            marks.append((tag + " phase", clocks()[1]))
            phase(host, tag, truth)
            c1 = clocks()
            rates[tag] = rate_ppm(c0, c1)
            moved += (ppm - orig / 65536) * 1e-6 * (c1[0] - c0[0])
        set_freq(orig)
        print("CLOCK_REALTIME moved by about %+.0f us over the two phases"
              % (moved / 1000))
        host.quit()
        sp.wait(timeout=60)
        sp = None
        rd.join(timeout=10)
        timeline(errlines, marks)
        for tag, ppm in (("plus", PPM), ("minus", -PPM)):
            want = rates["base"] + ppm - orig / 65536
            check(abs(rates[tag] - want) <= 20,
                  "CLOCK_MONOTONIC ran at %+.1f ppm of CLOCK_MONOTONIC_RAW in the %s phase, %+.1f expected (else something else sets the frequency)"
                  % (rates[tag], tag, want))
        if not check(os.path.exists(out), "sptrace wrote its summary"):
            return
        with open(out) as f:
            summary = json.load(f)
        check(summary["events"] in ("batched", "mixed"),
              "batched events (%s)" % summary["events"])
        for k, v in summary["errors"].items():
            check(v == 0, "errors.%s == 0 (%d)" % (k, v))
        if not compare(summary, truth, rates) or \
                os.environ.get("SLEW_INTERVALS"):
            intervals(truth, spt, marks[0][1])
        p = subprocess.run([SPTRACE, "summarize", "-f", "json", spt],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, "summarize: exit 0 (%s)" % p.stderr.strip())
        if p.returncode == 0:
            replay = {q["name"]: q for q in json.loads(p.stdout)["queries"]}
            diff = ["%s.%s: live %r, replayed %r" % (q["name"], k, q[k],
                                                     replay.get(q["name"], {}).get(k))
                    for q in summary["queries"]
                    for k in ("count", "total_ns", "self_ns", "min_ns", "max_ns")
                    if q[k] != replay.get(q["name"], {}).get(k)]
            check(not diff, "the recording replays to the live figures (%s)"
                  % "; ".join(diff[:3]))
    finally:
        set_freq(orig)
        now = adjtimex().freq
        check(now == orig, "adjtimex frequency restored (%+.3f ppm)" %
              (now / 65536))
        try:
            guardian.stdin.close()
            guardian.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if host.p.poll() is None:
            host.p.kill()
            host.p.wait()
        if sp is not None:
            sp.kill()
            sp.wait()
        for f in (out, spt):
            if os.path.exists(f):
                os.unlink(f)


main()
finish()
