# SPDX-License-Identifier: MIT
"""--func: plain functions (no probes) in the same table, from uprobe and
uretprobe pairs. Counts exact for nesting and recursion; frames that
longjmp() skipped are dropped (func_unwound), so the per-thread stack
never fills up and later calls stay exact. Programs that throw C++
exceptions are refused (a throw through a return probe aborts them)."""
import json
import os

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, run, tmpfile

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
check(r["fn_outer"]["self_ns"] < r["fn_outer"]["total_ns"], "C: nested time is not self time")
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
