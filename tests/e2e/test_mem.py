# SPDX-License-Identifier: MIT
"""sptrace mem and sptrace --mem against hosts whose allocations are known:
typed SP_ALLOC/SP_FREE probes (tests/hosts/mem_typed.c) and the libc
allocator of a program without probes (tests/hosts/mem_libc.c). Every
count, byte, live and peak figure is exact; allocation sites name the
function that allocated."""
import csv
import io
import json
import os
import re
import subprocess
import time

from sptest import (SPTRACE, check, eq, finish, require_bpf, run, tmpfile,
                    trace_json)

TYPED = os.environ["MEM_TYPED_HOST"]
LIBC = os.environ["MEM_LIBC_HOST"]
NOFP = os.environ["MEM_NOFP_HOST"]
GT = os.environ["GT_HOST"]
STATIC = os.environ["MEM_STATIC_HOST"]
STRIPPED = os.environ["MEM_STATIC_STRIPPED"]
# Possible CPUs: the per-CPU maps have one slot for each.
with open("/sys/devices/system/cpu/possible") as _f:
    NCPUS = sum(int(b) - int(a) + 1 for a, _, b in
                (r.partition("-") if "-" in r else (r, "-", r)
                 for r in _f.read().strip().split(",")))

require_bpf()


def mem_json(args, cmd="mem", timeout=300):
    return trace_json(args, cmd=cmd, timeout=timeout)


def fig(d):
    return {k: d[k] for k in ("allocs", "alloc_bytes", "frees", "free_bytes",
                              "live", "live_bytes", "peak_live_bytes")}


def F(allocs, alloc_bytes, frees, free_bytes, live, live_bytes, peak):
    return dict(allocs=allocs, alloc_bytes=alloc_bytes, frees=frees,
                free_bytes=free_bytes, live=live, live_bytes=live_bytes,
                peak_live_bytes=peak)


def inner(site):
    """Function name of a site's innermost frame."""
    return site["stack"][0].split("+")[0] if site["stack"] else ""


def sites_of(s, func, typ="*"):
    """Sums the sites whose innermost frame is in `func`."""
    tot = dict(n=0, allocs=0, alloc_bytes=0, live=0, live_bytes=0)
    for site in s["sites"]:
        if inner(site) == func and (typ == "*" or site["type"] == typ):
            tot["n"] += 1
            for k in ("allocs", "alloc_bytes", "live", "live_bytes"):
                tot[k] += site[k]
    return tot


TYPED_TRUTH = {
    "Widget": F(100, 4800, 60, 2880, 40, 1920, 4800),
    "Gadget": F(50, 10000, 20, 4000, 30, 6000, 10000),
    "Buffer": F(12, 6900, 10, 5500, 2, 1400, 5500),
}

# --- 1. typed allocations ---------------------------------------------------
p, s = mem_json(["--no-libc", "--per-thread", "--", TYPED])
eq(p.returncode, 0, "typed: exit 0 (%s)" % p.stderr.strip()[-200:])
if check(s is not None, "JSON summary written (test_mem.py:65)"):
    types = {t["name"]: fig(t) for t in s["types"]}
    for name, truth in TYPED_TRUTH.items():
        eq(types.get(name), truth, "typed: %s figures exact" % name)
    eq(len(types), 3, "typed: three types")
    eq(s["heap"], None, "typed --no-libc: no heap")
    eq(s["sampled"], 1, "typed: not sampled")
    eq(s["mem_errors"]["unknown_frees"], 3, "typed: unknown frees counted")
    eq(sum(s["mem_errors"].values()), 3, "typed: no other error")
    th = {(t["thread"], t["type"]): t for t in s["threads"]}
    eq(fig(th.get(("gadget-maker", "Gadget"), {"allocs": None, "alloc_bytes": 0,
       "frees": 0, "free_bytes": 0, "live": 0, "live_bytes": 0,
       "peak_live_bytes": 0})), TYPED_TRUTH["Gadget"],
       "per-thread: SP_THREAD_NAME names the gadget thread, figures exact")
    mains = [t for t in s["threads"] if t["type"] in ("Widget", "Buffer")]
    eq(sorted((t["thread"], t["type"], t["allocs"]) for t in mains),
       [("mem_typed", "Buffer", 12), ("mem_typed", "Widget", 100)],
       "per-thread: main thread rows under its comm")
    eq(len({t["tid"] for t in mains}), 1, "per-thread: one main tid")
    check(all(t["tid"] != th[("gadget-maker", "Gadget")]["tid"] for t in mains)
          if ("gadget-maker", "Gadget") in th else False,
          "per-thread: two distinct threads")
    wl = sites_of(s, "widget_leak", "Widget")
    eq((wl["allocs"], wl["alloc_bytes"], wl["live"], wl["live_bytes"]),
       (40, 1920, 40, 1920), "sites: widget_leak leaks 40 Widgets")
    wt = sites_of(s, "widget_temp", "Widget")
    eq((wt["allocs"], wt["live"]), (60, 0), "sites: widget_temp frees all")
    bl = sites_of(s, "buffer_leak", "Buffer")
    eq((bl["allocs"], bl["live_bytes"]), (2, 1400), "sites: buffer_leak")
    gm = sites_of(s, "gadget_make", "Gadget")
    eq((gm["allocs"], gm["live"], gm["live_bytes"]), (50, 30, 6000),
       "sites: gadget_make")
    check(s["sites"] and s["sites"][0]["live_bytes"] == 6000,
          "sites: sorted by live bytes")
    g = [x for x in s["sites"] if inner(x) == "gadget_make"]
    check(g and any(f.startswith("gadget_thread+") for f in g[0]["stack"][1:3]),
          "sites: the caller follows the innermost frame")
    check(g and "(mem_typed)" in g[0]["stack"][0], "sites: frame names the file")

# The table prints the same numbers.
p = run([SPTRACE, "mem", "--no-libc", "--", TYPED])
eq(p.returncode, 0, "typed table: exit 0")
rows = {}
for line in p.stdout.splitlines():
    cells = [c.strip() for c in line.strip("|").split("|")]
    if len(cells) == 8 and cells[0] in TYPED_TRUTH:
        rows[cells[0]] = [int(c) for c in cells[1:]]
for name, t in TYPED_TRUTH.items():
    eq(rows.get(name), [t["allocs"], t["alloc_bytes"], t["frees"], t["live"],
                        t["live_bytes"], t["peak_live_bytes"],
                        t["alloc_bytes"] // t["allocs"]],
       "typed table: %s row" % name)
check("widget_leak+" in p.stdout, "typed table: leaking site named")
check("3 unknown_frees" in p.stderr, "typed table: unknown frees warned")

# --- 2. the libc allocator, no probes in the host ----------------------------
# The figures are the host's own calls (tests/hosts/mem_libc.c), and
# nothing else: the host checks with mallinfo2() that libc allocated
# nothing before main and reports it on stderr, so no allocation of libc's
# own can hide in them (and no sptrace run is subtracted).
p, s = mem_json(["--per-thread", "--", LIBC, "basic"])
eq(p.returncode, 0, "libc basic: exit 0 (%s)" % p.stderr.strip()[-200:])
eq(re.findall(r"premain_heap_bytes=(\d+)", p.stderr), ["0"],
   "libc: the host's own mallinfo2(): no heap in use before main")
if check(s is not None, "libc basic: JSON summary written"):
    th = s.get("threads", [])
    eq([(t["type"], t["thread"]) for t in th], [(None, "mem_libc")],
       "libc --per-thread: one heap row, the comm names the thread")
    check(th and s["heap"] and fig(th[0]) == fig(s["heap"]),
          "libc --per-thread: the only thread has every figure")
    h = s["heap"]
    check(h is not None, "libc: heap traced")
    if h:
        eq(fig(h), F(48, 10480, 36, 8968, 12, 1512, 6000),
           "libc: heap figures exact (realloc, calloc overflow, memalign)")
    e = s["mem_errors"]
    eq((e["unknown_frees"], e["stale_calls"], e["calls_map_full"],
        e["stacks_lost"]), (0, 0, 0, 0), "libc: no unknown free, no stale call")
    ls = sites_of(s, "leak_site")
    eq((ls["allocs"], ls["alloc_bytes"], ls["live"], ls["live_bytes"]),
       (10, 1000, 10, 1000), "libc sites: leak_site leaks 10 x 100 B")
    check(s["sites"] and inner(s["sites"][0]) == "leak_site",
          "libc sites: the biggest leak first")
    ms = sites_of(s, "memalign_site")
    eq((ms["allocs"], ms["alloc_bytes"], ms["live"], ms["live_bytes"]),
       (4, 1024, 2, 512), "libc sites: posix_memalign, 2 of 4 freed")
    rc = sites_of(s, "realloc_chain")
    eq((rc["n"], rc["allocs"], rc["alloc_bytes"], rc["live"]), (3, 3, 5060, 0),
       "libc sites: realloc NULL/grow/shrink/0 = 3 allocations, all freed")
    cs = sites_of(s, "calloc_site")
    eq((cs["allocs"], cs["alloc_bytes"]), (5, 1500),
       "libc sites: overflowing calloc not counted")
    al = sites_of(s, "aligned_site")
    eq((al["allocs"], al["alloc_bytes"], al["live"]), (5, 576, 0),
       "libc sites: aligned_alloc and memalign (aliases) counted once")
    rf = sites_of(s, "realloc_fail")
    eq((rf["allocs"], rf["alloc_bytes"], rf["live"]), (1, 40, 0),
       "libc sites: a failed realloc changes nothing")
    ts = sites_of(s, "temp_site")
    eq((ts["allocs"], ts["live"]), (20, 0), "libc sites: temp_site")

# --- 3. thread churn: per-thread call slots go with their threads ------------
p, s = mem_json(["--max-threads", "64", "--", LIBC, "threads", "2000"])
eq(p.returncode, 0, "churn: exit 0 (%s)" % p.stderr.strip()[-200:])
if check(s is not None, "JSON summary written (test_mem.py:170)"):
    ta = sites_of(s, "thread_alloc")
    eq((ta["allocs"], ta["alloc_bytes"], ta["live"]), (2000, 64000, 0),
       "churn: 2000 threads' malloc+free, exact")
    eq(s["mem_errors"]["calls_map_full"], 0,
       "churn: 2000 threads through a 64-slot call map (cleared on exit)")
    eq(s["mem_errors"]["stale_calls"], 0, "churn: no stale entry state")
    # Each exiting thread's glibc teardown frees its tcache's chunks again
    # and the tcache (allocated through _int_malloc, not malloc): libc's
    # own frees from __call_tls_dtors on, not counted (bpf/mem.bpf.c).
    eq(s["mem_errors"]["unknown_frees"], 0,
       "churn: libc's thread teardown is no unknown free")

# --- 4. -p: attach to a running process that exits mid-run ------------------
out = tmpfile(".json")
host = subprocess.Popen([LIBC, "wait", "basic"], stdin=subprocess.PIPE,
                        text=True)
tracer = subprocess.Popen([SPTRACE, "mem", "-f", "json", "-o", out, "-p",
                           str(host.pid)], stderr=subprocess.PIPE, text=True)
ready = tracer.stderr.readline()
check("tracing" in ready, "-p: tracer ready (%r)" % ready)
host.stdin.write("go\n")
host.stdin.flush()
host.wait(timeout=60)
try:
    tracer.wait(timeout=60)
except subprocess.TimeoutExpired:
    tracer.kill()
eq(tracer.returncode, 0, "-p: tracer ends with its target, exit 0")
if os.path.exists(out):
    with open(out) as f:
        s = json.load(f)
    os.unlink(out)
    eq(fig(s["heap"]), F(48, 10480, 36, 8968, 12, 1512, 6000),
       "-p: heap figures exact for what ran while attached")
    ls = sites_of(s, "leak_site")
    eq((ls["allocs"], ls["live_bytes"]), (10, 1000), "-p: leak_site named")
else:
    check(False, "-p: report written")

# --- 5. static executables ---------------------------------------------------
p, s = mem_json(["--", STATIC])
eq(p.returncode, 0, "static with symbols: exit 0 (%s)" % p.stderr.strip())
if check(s is not None, "JSON summary written (test_mem.py:212)"):
    ss = sites_of(s, "static_site")
    eq((ss["allocs"], ss["alloc_bytes"], ss["live"]), (5, 615, 5),
       "static with symbols: its own malloc traced")
p = run([SPTRACE, "mem", "--", STRIPPED])
check(p.returncode != 0, "static stripped: fails")
lines = [l for l in p.stderr.splitlines() if l.strip()]
eq(len(lines), 1, "static stripped: one line (%r)" % p.stderr)
check(lines and "statically linked" in lines[0] and "malloc" in lines[0],
      "static stripped: says why")

# --- 6. sampling ------------------------------------------------------------
N = 200000
p, s = mem_json(["--sample", "10", "--", LIBC, "loop", str(N)])
eq(p.returncode, 0, "sample: exit 0")
if check(s is not None, "JSON summary written (test_mem.py:227)"):
    eq(s["sampled"], 10, "sample: marked in JSON")
    # One counter per CPU, every 10th allocation on a CPU sampled, scaled
    # by 10: each CPU leaves fewer than 10 unsampled (the host's only other
    # allocation, stdout's buffer, comes after the loop).
    lp = sites_of(s, "loop")
    lo = N - 9 * NCPUS
    check(lo <= lp["allocs"] <= N and lp["allocs"] % 10 == 0,
          "sample: scaled allocs %d in [%d, %d], a multiple of 10" %
          (lp["allocs"], lo, N))
    eq(lp["alloc_bytes"], lp["allocs"] * 64, "sample: bytes scaled too")
    eq(s["mem_errors"]["unknown_frees"], 0,
       "sample: frees of unsampled pointers are not unknown")
p = run([SPTRACE, "mem", "--sample", "10", "--", LIBC, "none"])
check("Sampled: every 10-th allocation" in p.stdout, "sample: marked in table")

# --- 7. memory over time -----------------------------------------------------
p, s = mem_json(["--interval", "1", "--no-stacks", "--", LIBC, "loop",
                 "3000000"])
eq(p.returncode, 0, "timeline: exit 0")
if check(s is not None, "JSON summary written (test_mem.py:242)"):
    tl = s["timeline"]
    check(2 <= len(tl) <= 1024, "timeline: bounded (%d points)" % len(tl))
    check(all(a["t_ns"] < b["t_ns"] for a, b in zip(tl, tl[1:])),
          "timeline: time increases")
    check(all(x["rss_bytes"] >= x["rss_anon_bytes"] > 0 for x in tl),
          "timeline: RSS and its anon part sampled")
    # One 64 B block at most, and stdout's buffer once it prints.
    check(all(x["heap_live_bytes"] <= 64 + 8192 for x in tl),
          "timeline: live heap of a malloc/free loop stays tiny")
    check(s["timeline_step_ns"] >= 1000000,
          "timeline: step (%d ns) >= interval" % s["timeline_step_ns"])
    dur = s["duration_ns"]
    if dur > 1100 * 1000000 * 1.5:
        check(s["timeline_step_ns"] >= 2000000,
              "timeline: merged and step doubled over a %.1f s run" % (dur / 1e9))
p = run([SPTRACE, "mem", "--interval", "20", "--", LIBC, "loop", "300000"])
m = re.search(r"Memory over time \((\d+) points", p.stdout)
sparks = re.findall(r"^  (?:RSS|heap live) +([\u2581-\u2588]+)  min ",
                    p.stdout, re.M)
# One block per point, at most 64 (SPARK_WIDTH: then each block is the
# maximum of its share of the points).
check(m and len(sparks) == 2 and
      all(len(x) == min(int(m.group(1)), 64) for x in sparks),
      "timeline: RSS and heap sparklines, one block per point up to 64 (%r)" %
      p.stdout[p.stdout.find("Memory over"):][:300])
check(any(l.strip().startswith("RSS ") for l in p.stdout.splitlines()),
      "timeline: RSS row")

# --- 8. CSV -----------------------------------------------------------------
p = run([SPTRACE, "mem", "--no-libc", "-f", "csv", "--", TYPED])
eq(p.returncode, 0, "csv: exit 0")
rd = list(csv.DictReader(io.StringIO(p.stdout)))
ct = {r["name"]: r for r in rd if r["kind"] == "type"}
for name, t in TYPED_TRUTH.items():
    eq({k: int(ct[name][k]) for k in t} if name in ct else None, t,
       "csv: %s row" % name)
eq([int(r["count"]) for r in rd if r["kind"] == "error" and
    r["name"] == "unknown_frees"], [3], "csv: error rows")

# --- 9. sptrace --mem: query and memory in one run ---------------------------
p, s = mem_json(["--mem", "--", TYPED],
                cmd=None)
eq(p.returncode, 0, "--mem: exit 0 (%s)" % p.stderr.strip()[-200:])
if check(s is not None, "JSON summary written (test_mem.py:279)"):
    check("queries" in s and "errors" in s, "--mem: query summary fields")
    types = {t["name"]: fig(t) for t in s.get("types", [])}
    for name, truth in TYPED_TRUTH.items():
        eq(types.get(name), truth, "--mem: %s exact in the same object" % name)
    # The host's own 162 malloc()s (100 Widgets, 50 Gadgets, 12 Buffers),
    # each at its site; anything else may only come from the loader or
    # libc themselves (pthread_create's thread-local storage).
    own = sum(x["allocs"] for x in s.get("sites", []) if x["type"] is None
              and "(mem_typed)" in (x["stack"] or [""])[0])
    eq(own, 162, "--mem: the heap has the host's 162 malloc()s")
    other = [x for x in s.get("sites", []) if x["type"] is None and
             "(mem_typed)" not in (x["stack"] or [""])[0]]
    check(s.get("heap") and s["heap"]["allocs"] == 162 + sum(
        x["allocs"] for x in other) and all(
        re.match(r"(ld-linux|libc)", x["stack"][0]) for x in other if x["stack"])
        and sum(x["allocs"] for x in other) <= 2,
          "--mem: the heap total is those and at most 2 from ld.so/libc "
          "(%r)" % [(x["stack"][:1], x["allocs"]) for x in other])
p = run([SPTRACE, "--mem", "--", TYPED])
check("Memory by type" in p.stdout and "Item" in p.stdout,
      "--mem table: both tables")
p = run([SPTRACE, "--mem", "-f", "csv", "--", TYPED])
check(p.returncode != 0 and "--mem" in p.stderr, "--mem -f csv refused")

# --- 10. report --mem: the memory of the same program, or a word ----------
# The memory JSON says whose memory it is; report refuses another
# program's (one line) and warns when one side cannot say.
memj, spt_same, spt_other, summ, old, db = (
    tmpfile(".json"), tmpfile(".spt"), tmpfile(".spt"), tmpfile(".json"),
    tmpfile(".json"), tmpfile(".db"))
# The programs traced and recorded have sp probes (mem_typed, groundtruth):
# one without any is refused before anything runs (test_precheck.py).
p = run([SPTRACE, "mem", "--interval", "2", "--no-stacks", "-f", "json",
         "-o", memj, "--", TYPED])
eq(p.returncode, 0, "mem -f json: exit 0 (%s)" % p.stderr.strip()[-200:])
with open(memj) as f:
    mdoc = json.load(f)
eq(mdoc.get("command"), TYPED, "mem -f json: the traced command line")
p, s = mem_json(["--mem", "--", LIBC, "loop", "3000"], cmd=None)
eq((s or {}).get("command"), "%s loop 3000" % LIBC,
   "--mem -f json: the traced command line")
for path, cmd in ((spt_same, [TYPED]), (spt_other, [GT, "1"])):
    p = run([SPTRACE, "record", "-o", path, "--"] + cmd)
    eq(p.returncode, 0, "record: exit 0 (%s)" % p.stderr.strip()[-200:])
p = run([SPTRACE, "trace", "--db", db, "-o", tmpfile(".txt"), "--", GT, "1"])
eq(p.returncode, 0, "trace --db: exit 0 (%s)" % p.stderr.strip()[-200:])
p = run([SPTRACE, "-f", "json", "-o", summ, "--", TYPED])
eq(p.returncode, 0, "-f json: exit 0 (%s)" % p.stderr.strip()[-200:])
with open(old, "w") as f:
    json.dump({k: v for k, v in mdoc.items() if k != "command"}, f)


def report_mem(run_args, mem):
    out = tmpfile(".html")
    p = run([SPTRACE, "report", "-o", out] + run_args + ["--mem", mem])
    return p, os.path.exists(out)


p, made = report_mem([spt_same], memj)
check(p.returncode == 0 and made and p.stderr == "",
      "report --mem, same program: silent (%r)" % p.stderr)
for args, what in (([spt_other], "trace file"),
                   (["--db", db, "latest"], "database run")):
    p, made = report_mem(args, memj)
    lines = p.stderr.splitlines()
    check(p.returncode == 1 and not made and len(lines) == 1 and
          lines[0].startswith("sptrace: report: ") and
          "'%s'" % TYPED in lines[0] and "'%s 1'" % GT in lines[0],
          "report --mem of another program's %s: refused in one line (%r)"
          % (what, p.stderr))
for args, mem, what in (([summ], memj, "a JSON summary"),
                        ([spt_other], old, "a memory file without command")):
    p, made = report_mem(args, mem)
    check(p.returncode == 0 and made and
          "sptrace: warning: report: cannot tell" in p.stderr,
          "report --mem with %s: drawn, with a warning (%r)" % (what, p.stderr))
# --- 11. the mem table fits 120 columns, as the main table does ----------
# mem_typed's sites are three frames of ~30 cells each: 131 wide uncut.
p = run([SPTRACE, "mem", "--", TYPED])
widest = max((len(l) for l in p.stdout.splitlines()), default=0)
check(p.returncode == 0 and widest <= 120 and
      "Allocation sites" in p.stdout and "..." in p.stdout,
      "mem table: at most 120 characters wide, long stacks cut with ... "
      "(widest line %d)" % widest)
# --- 12. a program without frame pointers --------------------------------
# The kernel walks stacks by frame pointers; mem_nofp's %rbp holds data, so
# the walk past each allocation's call site reads 0x3fd3333333333333 (the
# double 0.3) for a return address. Shown as the call site alone, with one
# warning saying why; never that number as a frame.
out = tmpfile(".json")
for fmt in ("json", "table"):
    p = run([SPTRACE, "mem", "-f", fmt, "-o", out, "--", NOFP])
    with open(out) as f:
        text = f.read()
    os.unlink(out)
    warns = [l for l in p.stderr.splitlines() if "no frame pointers" in l]
    check(p.returncode == 0 and len(warns) == 1 and
          "0x3fd3333333333333, which is no code" in warns[0] and
          "nofp_site+" in warns[0] and "-fno-omit-frame-pointer" in warns[0],
          "no frame pointers (%s): one warning naming the call site and the "
          "address (%r)" % (fmt, p.stderr.strip()[-400:]))
    check("3fd3333333333333" not in text, "no frame pointers (%s): the "
          "garbage address is no frame of the report" % fmt)
    if fmt == "json":
        s = json.loads(text)
        nofp = [x for x in s["sites"] if inner(x) == "nofp_site"]
        eq([(x["stack"], x["allocs"], x["live_bytes"]) for x in nofp],
           [(["nofp_site+0x%x (mem_nofp)" % int(
               nofp[0]["stack"][0].split("+0x")[1].split(" ")[0], 16)]
             if nofp else [], 7, 7 * 48)],
           "no frame pointers: its site is its call site alone, with the "
           "host's 7 allocations of 48 bytes")
# With frame pointers (mem_libc): no such warning.
p = run([SPTRACE, "mem", "-o", "/dev/null", "--", LIBC, "basic"])
check(p.returncode == 0 and "no frame pointers" not in p.stderr,
      "with frame pointers: no warning (%r)" % p.stderr.strip()[-300:])
for path in (memj, spt_same, spt_other, summ, old, db):
    if os.path.exists(path):
        os.unlink(path)
finish()
