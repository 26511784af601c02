# SPDX-License-Identifier: MIT
"""--func: plain functions (no probes) in the same table, from uprobe and
uretprobe pairs. Counts exact for nesting and recursion; frames that
longjmp() skipped are dropped (func_unwound), so the per-thread stack
never fills up and later calls stay exact. Programs that throw C++
exceptions are refused (a throw through a return probe aborts them)."""
import json
import os

from sptest import (SPTRACE, check, eq, finish, host_truth, require_bpf, rows,
                    run, tmpfile)

FUNCS = os.environ["FUNCS_HOST"]
FUNCS_CPP = os.environ["FUNCS_CPP_HOST"]
N = 1000


def trace(args):
    out = tmpfile(".json")
    p = run([SPTRACE, "-f", "json", "-o", out] + args)
    s = None
    if os.path.exists(out):
        with open(out) as f:
            s = json.load(f)
        os.unlink(out)
    return p, s


require_bpf()
p, s = trace(["--func", "fn_*", "--", FUNCS, str(N)])
eq(p.returncode, 0, "C: exit 0 (%s)" % p.stderr.strip()[-200:])
r, e = rows(s), s["errors"]
eq(r["fn_leaf"]["count"], 2 * N, "C: fn_leaf count")
eq(r["fn_outer"]["count"], N, "C: fn_outer count")
eq(r["fn_rec"]["count"], 5 * N, "C: recursion, every level")
# Times against the host's own clock: each total between the sum of the
# function's bodies and the sum of its calls, as the host read them.
t = host_truth(p.stdout)
for fn in ("fn_leaf", "fn_outer"):
    lo, hi = t[fn + "_in_ns"], t[fn + "_out_ns"]
    check(0 < lo <= r[fn]["total_ns"] <= hi,
          "C: %s total %d ns within the host's body %d and call %d ns" %
          (fn, r[fn]["total_ns"], lo, hi))
# fn_leaf is only called by fn_outer: what is not fn_outer's own time is
# exactly fn_leaf's.
eq(r["fn_outer"]["total_ns"] - r["fn_outer"]["self_ns"], r["fn_leaf"]["total_ns"],
   "C: fn_outer's total - self is its child fn_leaf's total, exactly")
eq(r["fn_leaf"]["self_ns"], r["fn_leaf"]["total_ns"], "C: a leaf's self is its total")
check("fn_jump_outer" not in r, "C: longjmp'ed functions never return")
# the last iteration's two frames are still open when the thread exits
eq((e["func_unwound"], e["thread_exit_open"]), (2 * N - 2, 2),
   "C: two frames dropped per longjmp")
eq(e["stack_overflow"], 0, "C: the stack never fills up")
eq(e["end_without_begin"], 0, "C: no unmatched return")

# C++: a return probe's hijacked return address makes the unwinder call
# std::terminate(), so sptrace refuses --func where exceptions are thrown,
# and leaves the program alone.
p, s = trace(["--func", "fn_*", "--", FUNCS_CPP, str(N)])
check(p.returncode != 0 and "C++ exceptions" in p.stderr and "done" not in p.stdout,
      "C++ with throws: refused before the program runs (%r)" % p.stderr.strip()[:120])
p, s = trace(["--func", "fn_work*", "--func-unsafe", "--", FUNCS_CPP, str(N)])
eq(p.returncode, 0, "C++ --func-unsafe on a function no exception crosses: exit 0")
eq(rows(s)["fn_work()"]["count"], N, "C++: fn_work() counted, demangled")

p, s = trace(["--func", "libc:getpid", "--func", "fn_leaf", "--", FUNCS, "10"])
eq(rows(s)["fn_leaf"]["count"], 20, "LIB:GLOB next to GLOB")

p = run([SPTRACE, "--func", "x:", "--", FUNCS, "1"])
check(p.returncode != 0 and "invalid --func" in p.stderr, "bad --func spec: clear error")
finish()
