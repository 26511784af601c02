# SPDX-License-Identifier: MIT
"""Rust programs instrumented with the sp-probe crate (probes/rust), traced
exactly like C ones, batched: the Rust query engine example under
`sptrace -- CMD` and `sptrace -p` (counts exact, times within 3% of the
program's own clock readings), the Rust ground-truth host with every first
interval exact, `sptrace list`, the red zone of a Rust leaf function, a
mixed C+Rust binary (one semaphore per name, one table, queries nested
across the two languages' rings both ways), a forking host, TracedAlloc
under `sptrace mem` against the program's own counter, `sptrace mem` on
Rust programs without a false warning, BEGIN and END in two crates, a
thread that exits with queries open, and a pair after a thread's ring was
released (per-event, counted as batch_fallback)."""
import json
import os
import re
import subprocess
import sys

from sptest import (SPTRACE, check, close, eq, finish, host_truth,
                    require_bpf, retry_timing, rows, run, trace_json,
                    wait_detached)

HOSTS = os.environ.get("RUST_HOSTS_DIR", "")
if not HOSTS:
    if os.environ.get("CI") == "true":
        print("FAIL: cargo not found: the Rust hosts were not built (CI=true: must not skip)")
        sys.exit(1)
    print("SKIP: cargo not found: the Rust hosts were not built")
    sys.exit(77)
require_bpf()

QE = os.path.join(HOSTS, "query_engine_rs")
RZ = os.path.join(HOSTS, "rs_redzone")
OPEN = os.path.join(HOSTS, "rs_open")
ALLOC = os.path.join(HOSTS, "rs_alloc")
MIXED = os.path.join(HOSTS, "sp-mixed")
GT = os.path.join(HOSTS, "rs_groundtruth")
FORK = os.path.join(HOSTS, "rs_fork")
QE_ARGS = ["--truth", "-n", "64", "-j", "2", "-s", "0.5"]
# Times are compared for rows of at least this much total time: a row of a
# few microseconds (load_dep_graph) is dominated by the one-time cost of its
# sites' first hit, as the C ground-truth host's warm-up round explains.
MIN_TIMED_NS = 2e6


def check_qe(s, stdout, label):
    t = host_truth(stdout)
    r = rows(s)
    for name in t["count"]:
        q = r.get(name)
        if not check(q is not None, "%s: row %s present" % (label, name)):
            continue
        eq(q["count"], t["count"][name], "%s: %s count" % (label, name))
        eq(q["cache_hits"], t["cache_hits"][name], "%s: %s cache hits" % (label, name))
        eq(q["incr_loads"], t["incr_loads"][name], "%s: %s incr loads" % (label, name))
        eq(q["blocked_count"], t["blocked"][name], "%s: %s blocked" % (label, name))
        if t["total_ns"][name] >= MIN_TIMED_NS:
            close(q["total_ns"], t["total_ns"][name], "%s: %s total" % (label, name))
            close(q["self_ns"], t["self_ns"][name], "%s: %s self" % (label, name))
        for k, kt in (("incr_load_ns", "incr_load_ns"), ("blocked_ns", "blocked_ns")):
            if t[kt][name] >= MIN_TIMED_NS:
                close(q[k], t[kt][name], "%s: %s %s" % (label, name, k))
    m = re.search(r"queries=(\d+) cache_hits=(\d+)", stdout)
    eq(sum(q["count"] for q in s["queries"]), int(m.group(1)) if m else None,
       label + ": the Total count is the program's queries=")
    for k, v in s["errors"].items():
        eq(v, 0, "%s: errors.%s" % (label, k))


def test_launch():
    p, s = trace_json(["--", QE] + QE_ARGS)
    eq(p.returncode, 0, "launch: exit 0 (%s)" % p.stderr.strip()[-200:])
    if check(s is not None, "launch: JSON written"):
        check_qe(s, p.stdout, "launch")


def traced_gt(mode):
    """rs_groundtruth under sptrace in `mode` ("batched" or "per-event")."""
    env = dict(os.environ)
    env.pop("SPTRACE_PER_EVENT", None)
    if mode == "per-event":
        env["SPTRACE_PER_EVENT"] = "1"
    old = os.environ.copy()
    os.environ.clear()
    os.environ.update(env)
    try:
        return trace_json(["--", GT, "--threads", "4", "3"])
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_groundtruth():
    """The Rust ground-truth host, batched: counts exact, every time within
    3% of the host's own Instant readings with no warm-up round, and rare,
    whose site runs 3 times, exact in its first (longest) interval too."""
    p, s = traced_gt("batched")
    eq(p.returncode, 0, "groundtruth: exit 0 (%s)" % p.stderr.strip()[-200:])
    if not check(s is not None, "groundtruth: JSON written"):
        return
    t, r = host_truth(p.stdout), rows(s)
    eq(s.get("events"), "batched", "groundtruth: the Rust probes batched")
    eq(s.get("batch_fallback"), 0, "groundtruth: no event fell back to its per-event site")
    for k, v in s["errors"].items():
        eq(v, 0, "groundtruth: errors.%s" % k)
    for name in t["count"]:
        q = r.get(name)
        if not check(q is not None, "groundtruth: row %s" % name):
            continue
        eq(q["count"], t["count"][name], "groundtruth: %s count" % name)
        eq(q["cache_hits"], t["cache_hits"][name], "groundtruth: %s cache hits" % name)
        for k, kt in (("total_ns", "total_ns"), ("self_ns", "self_ns"),
                      ("blocked_ns", "blocked_ns"), ("incr_load_ns", "incr_load_ns"),
                      ("max_ns", "max_ns")):
            if t[kt][name]:
                close(q[k], t[kt][name], "groundtruth: %s %s" % (name, k))
    eq((r.get("shared", {}).get("blocked_count"), r.get("codegen", {}).get("incr_loads")),
       (12, 12), "groundtruth: blocked and incr-load intervals counted")
    eq(r.get("rare", {}).get("count"), 3, "groundtruth: rare's site ran 3 times")


def per_event_first_interval():
    """For the record: the same host per-event, whose sites the kernel
    patches at their first hit, inside the interval (not checked)."""
    p, s = traced_gt("per-event")
    if s is None or p.returncode:
        return
    t, r = host_truth(p.stdout), rows(s)
    for name in ("rare", "inner"):
        for k in ("max_ns", "total_ns"):
            got, want = r.get(name, {}).get(k, 0), t[k][name]
            print("note: per-event %s %s %d ns, the host measured %d ns (%+.1f%%)" %
                  (name, k, got, want, 100.0 * (got - want) / want if want else 0))


def test_pid():
    host = subprocess.Popen([QE, "--wait"] + QE_ARGS, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    check(host.stdout.readline().startswith("ready"), "pid: host ready")
    out = "/tmp/sptest-rust-pid-%d.json" % host.pid
    if os.path.exists(out):
        os.unlink(out)
    tracer = subprocess.Popen([SPTRACE, "-p", str(host.pid), "-f", "json", "-o", out],
                              stderr=subprocess.PIPE, text=True)
    line = tracer.stderr.readline()
    check("tracing" in line, "pid: attached (%r)" % line.strip())
    stdout, _ = host.communicate("go\n", timeout=300)
    try:
        rc = tracer.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tracer.kill()
        rc = None
    eq(rc, 0, "pid: sptrace stops when the target exits")
    if check(os.path.exists(out), "pid: JSON written"):
        with open(out) as f:
            s = json.load(f)
        os.unlink(out)
        check_qe(s, stdout, "pid")


def test_list():
    p = run([SPTRACE, "list", QE])
    eq(p.returncode, 0, "list: exit 0")
    seen = {}
    for line in p.stdout.splitlines():
        m = re.match(r"sp:(\w+)\s+\S+\s+0x[0-9a-f]+\s+semaphore\s+args:(.*)", line)
        if m:
            seen.setdefault(m.group(1), set()).add(len(m.group(2).split()))
    want = {"query_begin": 1, "query_end": 1, "cache_hit": 1, "incr_load_begin": 1,
            "incr_load_end": 1, "blocked_begin": 1, "blocked_end": 1,
            "thread_name": 1, "alloc": 3, "free": 2}
    for name, n in want.items():
        eq(seen.get(name), {n}, "list: sp:%s shown with %d register args" % (name, n))


def red_zone_use(func):
    """(stores below %rsp, loads below %rsp after the last probe's
    semaphore test, %rsp moved) in func's disassembly."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", RZ],
                         capture_output=True, text=True).stdout
    body = re.search(r"<%s>:\n(.*?)\n\n" % func, dis, re.S)
    if not body:
        return (False, False, True)
    lines = body.group(1).splitlines()
    stores = any(re.search(r"mov\s+%\w+,-0x[0-9a-f]+\(%rsp\)", l) for l in lines)
    # The hot path's second test (the compiler may test again in a cold
    # block at the end).
    tests = [i for i, l in enumerate(lines) if "sp_thread_name_semaphore" in l]
    last = tests[1] if len(tests) > 1 else len(lines)
    loads = any(re.search(r"mov\s+-0x[0-9a-f]+\(%rsp\),%\w+", l) for l in lines[last:])
    moved = any(re.search(r"(sub|add)\s+\$0x[0-9a-f]+,%rsp|push", l) for l in lines)
    return (stores, loads, moved)


def test_redzone():
    # Whether this rustc keeps a leaf function's frame in the red zone at
    # all: rs_rz_expected is the same body without probes. rustc 1.63
    # (Debian 12) gives every function call-style stack probes
    # (__rust_probestack), and its LLVM then never uses the red zone: code
    # from it has no red-zone hazard. A newer rustc does use it, and then
    # the probes must not make it stop (the asm is nostack). The leaf's
    # probes are per-event (sp:thread_name): a batched query probe calls
    # the ring code, so its function is no leaf.
    stores, _, moved = red_zone_use("rs_rz_expected")
    hazard = stores and not moved
    if not hazard:
        print("note: this rustc never keeps a frame in the red zone (rs_rz_expected "
              "moves %rsp): no red-zone hazard in its code; the site's bytes are "
              "checked by the rust_matrix test, and the red zone with a newer rustc")
    for func in ("rs_rz_safe", "rs_rz_naive") if hazard else ():
        eq(red_zone_use(func), (True, True, False),
           "%s keeps data below %%rsp across its probes (stores, loads after "
           "the sites, %%rsp never moved)" % func)
    p = run([RZ, "safe", "100000"])
    check("wrong=0 calls=100000" in p.stdout, "redzone untraced: all right (%s)" % p.stdout.strip())
    calls = 2000000
    # Kept a trap (sptrace's guard for forked children) and as the
    # kernel's call, which writes below %rsp (SPTRACE_SITE_GUARD=direct).
    for guard in ("auto", "direct"):
        if guard == "direct":
            check(wait_detached(), "the guarded run's uprobes are gone")
        os.environ["SPTRACE_SITE_GUARD"] = guard
        p, s = trace_json(["--", RZ, "safe", str(calls)], timeout=600)
        check("wrong=0 calls=%d" % calls in p.stdout,
              "redzone traced sp-probe site (guard %s): all right (%s)" %
              (guard, p.stdout.strip()))
        if s:
            eq(rows(s).get("rz", {}).get("count"), calls,
               "redzone (guard %s): every call counted" % guard)
    if hazard:
        check(wait_detached(), "the earlier runs' uprobes are gone")
        p, s = trace_json(["--", RZ, "naive", "200000"], timeout=600)
        m = re.search(r"wrong=(\d+)", p.stdout)
        check(m and int(m.group(1)) > 0,
              "negative control: a naive nop5 site corrupts the red zone (%s)" %
              p.stdout.strip())
    os.environ.pop("SPTRACE_SITE_GUARD", None)


def test_mixed_nesting():
    """Both languages batch, each into its own ring of the thread; the
    tracer merges them by time, so queries nest across the two both ways
    (the inner one's time leaves the outer one's self time) and a query
    begun in one language ends in the other."""
    n = 40
    p, s = trace_json(["--", MIXED, str(n)])
    eq(p.returncode, 0, "mixed: exit 0")
    check("enabled rust=true c=true" in p.stdout,
          "mixed: both languages see the semaphores set (%s)" % p.stdout.strip())
    if not s:
        return
    t, r = host_truth(p.stdout), rows(s)
    eq(s.get("events"), "batched", "mixed: both languages batched")
    eq(r.get("rust_query", {}).get("count"), n, "mixed: Rust query count")
    eq(r.get("c_query", {}).get("count"), n, "mixed: C query count")
    eq((r.get("shared", {}).get("count"), r.get("shared", {}).get("cache_hits")),
       (2 * n, 2 * n), "mixed: one row for a name both languages fire")
    for name in ("rust_outer", "c_inner", "c_outer", "rs_inner", "c_to_rust", "rust_to_c"):
        eq(r.get(name, {}).get("count"), n, "mixed: %s count" % name)
        if name in r:
            close(r[name]["total_ns"], t[name], "mixed: %s total" % name)
    for outer, inner in (("rust_outer", "c_inner"), ("c_outer", "rs_inner")):
        if outer in r:
            close(r[outer]["self_ns"], t[outer] - t[inner],
                  "mixed: %s self time, %s (the other language) nested in it" % (outer, inner))
    for k, v in s["errors"].items():
        eq(v, 0, "mixed: errors.%s" % k)


def test_mixed():
    retry_timing(test_mixed_nesting)
    syms = subprocess.run(["nm", MIXED], capture_output=True, text=True).stdout
    semas = re.findall(r"^([0-9a-f]+) \w (sp_\w+_semaphore)$", syms, re.M)
    names = [n for _, n in semas]
    check(len(names) >= 4 and len(names) == len(set(names)),
          "mixed: one semaphore symbol per probe name (%s)" % sorted(names))
    notes = subprocess.run(["readelf", "-nW", MIXED], capture_output=True, text=True).stdout
    per_name = {}
    for m in re.finditer(r"Name: (\w+)\s+Location: \S+ Base: \S+ Semaphore: (0x[0-9a-f]+)", notes):
        per_name.setdefault(m.group(1), set()).add(int(m.group(2), 16))
    addr = {n: int(a, 16) for a, n in semas}
    for name, sems in per_name.items():
        eq(sems, {addr.get("sp_%s_semaphore" % name)},
           "mixed: every sp:%s note (C and Rust) names the one semaphore" % name)


def test_fork():
    """A traced Rust program that forks keeps its children: the parent runs
    every kind of probe, then forks children that run every kind again and
    must exit 0. A site the kernel has turned into a call into its
    trampoline page is a jump to nowhere in a child (Linux 6.18 does not
    copy that page): batched query probes never fire their per-event sites
    while sptrace batches ("batched": only those), and sptrace's attach
    must keep the per-event ones (sp:thread_name here) from being patched
    (every kind). The parent's batched pairs are counted exactly."""
    n = 4
    for variant in (["batched"], []):
        label = "fork (%s)" % ("batched probes" if variant else "every kind of probe")
        p, s = trace_json(["--", FORK, str(n)] + variant)
        eq(p.returncode, 0, "%s: exit 0, every child exited 0 (%s; %s)" %
           (label, p.stdout.strip(), p.stderr.strip()[-300:]))
        check("children=%d ok=%d" % (n, n) in p.stdout, "%s: children=%d ok=%d (%s)" %
              (label, n, n, p.stdout.strip()))
        if s:
            r = rows(s)
            eq(s.get("events"), "batched", label + ": batched")
            # The parent: a round, then one after each child; the
            # children are other processes (not followed).
            eq(r.get("fork_pair", {}).get("count"), 1 + n, label + ": the parent's pairs")
            eq(r.get("fork_query", {}).get("count"), 1 + n, label + ": the parent's scopes")
            if not variant:
                eq(r.get("fork_async", {}).get("count"), 1 + n,
                   label + ": the parent's async invocations (sp:query_finish)")


def test_alloc():
    p, s = trace_json(["--no-libc", "--", ALLOC], cmd="mem")
    eq(p.returncode, 0, "alloc: exit 0 (%s)" % p.stderr.strip()[-200:])
    truth = host_truth(p.stdout)
    if s:
        t = {x["name"]: x for x in s["types"]}.get("rust_heap", {})
        for k in ("allocs", "alloc_bytes", "frees", "free_bytes"):
            eq(t.get(k), truth[k], "TracedAlloc: %s exact" % k)
        eq((t.get("live"), t.get("live_bytes")),
           (truth["allocs"] - truth["frees"], truth["alloc_bytes"] - truth["free_bytes"]),
           "TracedAlloc: live exact")
        eq(s["mem_errors"]["unknown_frees"], 0, "TracedAlloc: no unknown free")


def test_mem_libc():
    """sptrace mem without --no-libc on Rust programs warns of no anomaly: no
    stale call (Rust's runtime calls pthread_getattr_np, whose
    realloc(NULL, n) glibc tail-calls into malloc) and no unknown free
    (each exiting thread's glibc teardown frees its tcache's chunks
    again), single-threaded and with 4 threads."""
    for label, cmd in (("single-threaded", [RZ, "safe", "1000"]),
                       ("4 threads", [GT, "--threads", "4", "1"])):
        p, s = trace_json(["--", ] + cmd, cmd="mem")
        eq(p.returncode, 0, "mem %s: exit 0 (%s)" % (label, p.stderr.strip()[-200:]))
        # A Rust release build keeps no frame pointers: that its stacks
        # stop at the call site is said, and is no anomaly of the heap.
        # Nor is a stack the kernel's stack map could not keep (a hash
        # collision of two of those partly random stacks: counted and
        # said, as stacks_lost; an ASan CI leg met one).
        warnings = [l for l in p.stderr.splitlines() if "warning" in l and
                    "which is no code" not in l and "stacks_lost" not in l]
        check(not warnings, "mem %s: no warning but the frame pointers' (%s)" %
              (label, warnings[-3:]))
        if s:
            eq({k: v for k, v in s["mem_errors"].items() if v and k != "stacks_lost"},
               {}, "mem %s: no heap anomaly counted" % label)
            check(s["heap"]["allocs"] > 0 and s["heap"]["frees"] > 0,
                  "mem %s: the heap traced (%s)" % (label, s["heap"]))


def test_open():
    p, s = trace_json(["--", OPEN])
    eq(p.returncode, 0, "open: exit 0")
    check("cross names equal: true" in p.stdout, "open: one address per name across crates")
    if s:
        r, e = rows(s), s["errors"]
        eq(r.get("good", {}).get("count"), 11, "open: good row exact")
        eq(r.get("late", {}).get("count"), 1,
           "open: a pair after the thread's ring was released counted (per-event)")
        eq(s.get("batch_fallback"), 2, "open: its 2 events fell back, and are counted so")
        eq(r.get("cross", {}).get("count"), 5, "BEGIN in one crate, END in another: matched")
        eq(e["thread_exit_open"], 2, "a Rust thread exiting with 2 open queries counted")
        eq(e["end_without_begin"], 0, "no END without BEGIN")
        eq(e["end_mismatch"], 0, "no mismatched END")


retry_timing(test_launch)
retry_timing(test_groundtruth)
per_event_first_interval()
retry_timing(test_pid)
test_list()
test_redzone()
test_mixed()
test_fork()
test_alloc()
test_mem_libc()
test_open()
finish()
