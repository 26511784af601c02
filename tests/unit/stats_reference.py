# SPDX-License-Identifier: MIT
"""An independent reference of the statistics of `sptrace diff`'s verdicts,
written from docs/numbers.md ("Repeated runs and verdicts") with Python's
standard library only, none of sptrace's code: exact fractions and big
integers where the C code uses doubles, the Mann-Whitney null distribution
counted by rank sums (and, for small samples, by listing every ordering)
where the C code uses another recurrence, plain sorting where it selects.

It computes every figure of fixed data sets and writes them as a C header,
tests/unit/stats_expected.h, which tests/unit/test_stats.c compares with
sptrace's own arithmetic (userspace/model/stats.c, verdict.c):

    stats_reference.py > tests/unit/stats_expected.h     (regenerate)
    stats_reference.py --check tests/unit/stats_expected.h   (unit test)

The check fails when the header is not what this file writes, so the
expected values cannot drift from their source."""
import itertools
import math
import sys
from fractions import Fraction

Z975 = 1.959963984540054   # the 97.5% point of the standard normal
EXACT_MAX = 50             # exact distribution up to this many runs a side
ALPHA_HALF = Fraction(1, 40)   # 0.025: two-sided 95% intervals


# ---- one sample -------------------------------------------------------------

def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def median_rank(n):
    """The largest k with P(Bin(n, 1/2) <= k - 1) <= 0.025, exactly."""
    k, cum = 0, Fraction(0)
    while k < n:
        pk = Fraction(math.comb(n, k), 2 ** n)
        if cum + pk > ALPHA_HALF:
            break
        cum += pk
        k += 1
    return k


def describe(v):
    n = len(v)
    s = sorted(v)
    mean = math.fsum(s) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    med = median(s)
    k = median_rank(n)
    lo, hi = (s[k - 1], s[n - k]) if k else (math.nan, math.nan)
    mad = median([abs(x - med) for x in s])
    return dict(n=n, mean=mean, median=med, sd=sd, mad=mad, min=s[0],
                max=s[-1], ci_lo=lo, ci_hi=hi)


# ---- two samples --------------------------------------------------------------

def u_counts(n, m):
    """Number of orderings of n x's and m y's for each U (pairs y > x),
    from the rank sums of the y's: choose m ranks out of 1..n+m."""
    N = n + m
    # ways[j][s]: j ranks chosen out of those seen, summing to s.
    ways = [dict() for _ in range(m + 1)]
    ways[0][0] = 1
    for r in range(1, N + 1):
        for j in range(min(r, m), 0, -1):
            for s, c in ways[j - 1].items():
                ways[j][s + r] = ways[j].get(s + r, 0) + c
    base = m * (m + 1) // 2
    out = [0] * (n * m + 1)
    for s, c in ways[m].items():
        out[s - base] += c
    return out


def u_counts_brute(n, m):
    """The same by listing every ordering (small samples only)."""
    out = [0] * (n * m + 1)
    for ys in itertools.combinations(range(n + m), m):
        u = sum(sum(1 for x in range(n + m) if x not in ys and x < y)
                for y in ys)
        out[u] += 1
    return out


def compare(x, y):
    n, m = len(x), len(y)
    nm = n * m
    d = sorted(b - a for a in x for b in y)
    above = sum(1 for v in d if v > 0)
    equal = sum(1 for v in d if v == 0)
    u = above + equal / 2
    groups = {}
    for v in list(x) + list(y):
        groups[v] = groups.get(v, 0) + 1
    ties = sum(t ** 3 - t for t in groups.values())
    exact = ties == 0 and n <= EXACT_MAX and m <= EXACT_MAX
    if exact:
        counts = u_counts(n, m)
        total = sum(counts)
        le = Fraction(sum(counts[:above + 1]), total)
        ge = Fraction(sum(counts[above:]), total)
        p = float(min(Fraction(1), 2 * min(le, ge)))
        k, cum = 0, Fraction(0)
        while k <= nm:
            cum += Fraction(counts[k], total)
            if cum > ALPHA_HALF:
                break
            k += 1
    else:
        N = n + m
        sigma = math.sqrt(nm / 12 * ((N + 1) - ties / (N * (N - 1))))
        p = 1.0
        if sigma > 0:
            z = (abs(u - nm / 2) - 0.5) / sigma
            p = min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))
        k = max(0, math.floor(nm / 2 - Z975 * sigma))
    shift = d[nm // 2] if nm % 2 else (d[nm // 2 - 1] + d[nm // 2]) / 2
    if k >= 1 and k - 1 <= nm - k:
        lo, hi = d[k - 1], d[nm - k]
    else:
        lo, hi = -math.inf, math.inf
    return dict(u=u, p=p, exact=exact, shift=shift, lo=lo, hi=hi)


def bh(p):
    n = len(p)
    order = sorted(range(n), key=lambda i: (p[i], i))
    adj = [0.0] * n
    run = 1.0
    for r in range(n, 0, -1):
        i = order[r - 1]
        run = min(run, p[i] * n / r)
        adj[i] = run
    return adj


def fence(x):
    if len(x) < 4:
        return None
    d = sorted(abs(x[i + 1] - x[i]) for i in range(len(x) - 1))
    k = len(d)
    h = k // 2
    q1 = median(d[:h])
    q3 = median(d[k - h:])
    return q3 + 3 * (q3 - q1)


# ---- verdicts ---------------------------------------------------------------

TIMES = ["self_ns", "total_ns", "blocked_ns", "incr_load_ns", "p50_ns", "p99_ns"]
COUNTS = ["count", "cache_hits", "blocked_count", "incr_loads"]


def ln(v):
    return math.log(max(v, 1))


def verdict_of(shift, lo, hi, flagged, t):
    """Not flagged: unchanged when the interval is at most the threshold
    wide on either side of the estimate (a change that large would have
    shown), too noisy to say when it is wider."""
    if flagged:
        return "regressed" if shift > 0 else "improved"
    T = math.log(1 + t)
    return "unchanged" if (hi - lo) / 2 <= T else "too noisy to say"


def verdicts(base, new, t=0.02, fdr=0.05):
    """base, new: {query: {figure: [value per run]}}, every figure of every
    query, zeros where a run lacks the query. Returns {query: {figure:
    result}} as docs/numbers.md defines them."""
    names = sorted(set(base) | set(new))
    nb = len(next(iter(base.values()))["self_ns"])
    nn = len(next(iter(new.values()))["self_ns"])
    zeros_b = {f: [0] * nb for f in TIMES + COUNTS}
    zeros_n = {f: [0] * nn for f in TIMES + COUNTS}
    history = nn == 1 and nb >= 2
    T = math.log(1 + t)
    out = {q: {} for q in names}
    for f in TIMES:
        tested = []
        for q in names:
            xb = base.get(q, zeros_b)[f]
            yn = new.get(q, zeros_n)[f]
            x = [ln(v) for v in xb]
            y = [ln(v) for v in yn]
            r = dict(base=describe(xb), new=describe(yn))
            out[q][f] = r
            if len(set(x + y)) == 1:
                # Every run the same (often all 0): nothing to test.
                if history:
                    r.update(ratio=1.0, fence=0.0, v="unchanged")
                else:
                    r.update(tested=False, ratio=1.0, lo=1.0, hi=1.0, p=1.0,
                             p_adj=1.0, v="unchanged")
                continue
            if history:
                change = y[0] - median(x)
                fe = fence(x)
                if fe is None:
                    r.update(ratio=math.exp(change), fence=math.nan,
                             v="too noisy to say")
                    continue
                flagged = abs(change) > fe and abs(change) >= T
                if flagged:
                    v = "regressed" if change > 0 else "improved"
                else:
                    v = "unchanged" if fe <= T else "too noisy to say"
                r.update(ratio=math.exp(change), fence=fe, v=v)
                continue
            c = compare(x, y)
            r.update(tested=True, c=c)
            tested.append(q)
        if history:
            continue
        adj = bh([out[q][f]["c"]["p"] for q in tested])
        for q, a in zip(tested, adj):
            r = out[q][f]
            c = r["c"]
            flagged = a <= fdr and abs(c["shift"]) >= T
            r.update(ratio=math.exp(c["shift"]), lo=math.exp(c["lo"]),
                     hi=math.exp(c["hi"]), p=c["p"], p_adj=a,
                     v=verdict_of(c["shift"], c["lo"], c["hi"], flagged, t))
    for f in COUNTS:
        for q in names:
            xb = base.get(q, zeros_b)[f]
            yn = new.get(q, zeros_n)[f]
            out[q][f] = dict(base=describe(xb), new=describe(yn),
                             changed=set(xb) != set(yn))
    for q in names:
        s = out[q]["self_ns"]
        if q in base and q in new:
            s["effect"] = s["base"]["median"] * (s["ratio"] - 1)
        else:
            s["effect"] = s["new"]["median"] - s["base"]["median"]
    return out


# ---- the data sets ------------------------------------------------------------

class Lcg:
    """Numerical Recipes' 32-bit LCG: the same numbers on every machine."""

    def __init__(self, seed):
        self.x = seed

    def uniform(self):
        self.x = (1664525 * self.x + 1013904223) % 2 ** 32
        return self.x / 2 ** 32


def noisy(rng, n, center, rel):
    return [int(center * (1 + rel * (rng.uniform() - 0.5))) for _ in range(n)]


def data_sets():
    rng = Lcg(2026)
    desc = [
        [5.0],
        [3.0, 1.0],
        [2.0, 7.0, 7.0, 1.0, 7.0, 3.0, 2.0],
        [float(v) for v in noisy(rng, 10, 1000000, 0.1)],
        [float(v) for v in noisy(rng, 30, 2500000, 0.3)],
    ]
    cmp = []
    cmp.append(([1.0, 4.0, 6.0], [2.0, 3.0, 5.0, 8.0]))
    cmp.append(([ln(v) for v in noisy(rng, 10, 1000000, 0.04)],
                [ln(v) for v in noisy(rng, 10, 1100000, 0.04)]))
    cmp.append(([ln(v) for v in noisy(rng, 30, 1000000, 0.2)],
                [ln(v) for v in noisy(rng, 30, 1020000, 0.2)]))
    cmp.append(([1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0],
                [2.0, 3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 7.0]))
    cmp.append(([ln(v) for v in noisy(rng, 60, 500000, 0.1)],
                [ln(v) for v in noisy(rng, 55, 490000, 0.1)]))
    cmp.append(([7.0] * 5, [7.0] * 5))
    cmp.append(([1.0, 2.0], [3.0, 4.0]))
    cmp.append(([5.5], [float(v) for v in range(1, 11)]))
    pvals = [0.0001, 0.2, 0.04, 0.03, 0.9, 0.5, 0.01, 0.0004, 0.049, 0.7,
             0.33, 0.002, 0.06, 0.8, 0.011, 0.25, 0.04, 1.0, 0.6, 0.005]
    fences = [
        [ln(v) for v in noisy(rng, 10, 1000000, 0.02)],
        [1.0, 1.5, 1.2, 1.9],
        [1.0, 2.0, 3.0],
    ]
    return desc, cmp, pvals, fences, rng


def verdict_sets(rng):
    """Queries of a small two-label comparison and a history, each case
    made to exercise one rule."""
    def q(center, n, rel=0.01, count=10, blocked=0, p50=None):
        selfv = noisy(rng, n, center, rel)
        return {
            "self_ns": selfv,
            "total_ns": [v + 1000 for v in selfv],
            "blocked_ns": [blocked] * n,
            "incr_load_ns": [0] * n,
            "p50_ns": [p50 if p50 is not None else 100000] * n,
            "p99_ns": [200000] * n,
            "count": [count] * n,
            "cache_hits": [0] * n,
            "blocked_count": [1 if blocked else 0] * n,
            "incr_loads": [0] * n,
        }
    n = 10
    base, new = {}, {}
    base["steady"], new["steady"] = q(1000000, n), q(1000000, n)
    base["slower"], new["slower"] = q(1000000, n), q(1100000, n)
    base["faster"], new["faster"] = q(2000000, n), q(1500000, n)
    base["noisy"], new["noisy"] = q(1000000, n, 0.8), q(1000000, n, 0.8)
    base["tiny"], new["tiny"] = q(1000000, n, 0.001), q(1005000, n, 0.001)
    # Real but under the threshold, with an interval that reaches past it:
    # unchanged (the interval is narrower than the threshold).
    base["edge"], new["edge"] = q(1000000, n, 0.01), q(1019000, n, 0.01)
    base["recount"], new["recount"] = q(500000, n), q(500000, n, count=11)
    base["p50moved"], new["p50moved"] = q(300000, n), q(300000, n, p50=110000)
    base["gone"] = q(400000, n)
    new["arrived"] = q(250000, n)
    # A history of 10 runs, and one new run of each kind.
    hist, one = {}, {}
    hist["steady"], one["steady"] = q(1000000, 10), q(1000000, 1)
    hist["slower"], one["slower"] = q(1000000, 10), q(1100000, 1)
    hist["noisy"], one["noisy"] = q(1000000, 10, 0.8), q(1000000, 1, 0.8)
    hist["recount"], one["recount"] = q(500000, 10), q(500000, 1, count=9)
    short = {"x": q(1000000, 3)}
    short_one = {"x": q(1300000, 1)}
    return (base, new), (hist, one), (short, short_one)


# ---- the header ---------------------------------------------------------------

def c_num(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return "%.17g" % v


def c_array(name, ctype, values):
    body = ", ".join(c_num(v) for v in values) if values else "0"
    return "static const %s %s[] = { %s };\n" % (ctype, name, body)


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def header():
    desc, cmp, pvals, fences, rng = data_sets()
    (base, new), (hist, one), (short, short_one) = verdict_sets(rng)
    # Internal check: both ways of counting the null distribution agree.
    for n, m in [(1, 1), (2, 3), (3, 4), (4, 4), (5, 3)]:
        assert u_counts(n, m) == u_counts_brute(n, m), (n, m)
    out = []
    w = out.append
    w("/* SPDX-License-Identifier: MIT */\n")
    w("/* Generated by tests/unit/stats_reference.py: do not edit (run it\n"
      " * again; unit_stats_reference fails while this file differs). */\n")
    w("#ifndef STATS_EXPECTED_H\n#define STATS_EXPECTED_H\n\n")
    w("#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n\n")
    # describe
    w("struct exp_desc {\n\tconst double *v;\n\tunsigned int n;\n"
      "\tdouble mean, median, sd, mad, min, max, ci_lo, ci_hi;\n};\n")
    for i, v in enumerate(desc):
        w(c_array("desc_v%d" % i, "double", v))
    w("static const struct exp_desc exp_desc[] = {\n")
    for i, v in enumerate(desc):
        d = describe(v)
        w("\t{ desc_v%d, %d, %s },\n" % (i, d["n"], ", ".join(
            c_num(d[k]) for k in ("mean", "median", "sd", "mad", "min", "max",
                                  "ci_lo", "ci_hi"))))
    w("};\n\n")
    # compare
    w("struct exp_cmp {\n\tconst double *x, *y;\n\tunsigned int n, m;\n"
      "\tdouble u, p;\n\tbool exact;\n\tdouble shift, lo, hi;\n};\n")
    for i, (x, y) in enumerate(cmp):
        w(c_array("cmp_x%d" % i, "double", x))
        w(c_array("cmp_y%d" % i, "double", y))
    w("static const struct exp_cmp exp_cmp[] = {\n")
    for i, (x, y) in enumerate(cmp):
        c = compare(x, y)
        w("\t{ cmp_x%d, cmp_y%d, %d, %d, %s },\n" % (i, i, len(x), len(y), ", ".join(
            c_num(c[k]) for k in ("u", "p", "exact", "shift", "lo", "hi"))))
    w("};\n\n")
    # BH
    w(c_array("bh_p", "double", pvals))
    w(c_array("bh_adj", "double", bh(pvals)))
    w("\n")
    # fences
    w("struct exp_fence {\n\tconst double *x;\n\tunsigned int n;\n"
      "\tbool ok;\n\tdouble fence;\n};\n")
    for i, x in enumerate(fences):
        w(c_array("fence_x%d" % i, "double", x))
    w("static const struct exp_fence exp_fence[] = {\n")
    for i, x in enumerate(fences):
        f = fence(x)
        w("\t{ fence_x%d, %d, %s, %s },\n" % (i, len(x), c_num(f is not None),
                                             c_num(f if f is not None else 0.0)))
    w("};\n\n")
    # verdict sets: the inputs, then per query and time figure the result.
    w("/* Figures of a query in a set, as verdict.h numbers them. */\n")
    w("#define EXP_FIGS %d\n" % (len(TIMES) + len(COUNTS)))
    w("struct exp_query {\n\tconst char *name;\n\tconst uint64_t *v;"
      "\t/* [run * EXP_FIGS + figure] */\n};\n")
    w("struct exp_result {\n\tconst char *name;\n\tconst char *verdict;"
      "\t/* self time's */\n\tdouble ratio, lo, hi, p, p_adj, fence, effect;\n"
      "\tconst char *fig_verdicts[%d];\t/* the time figures */\n"
      "\tbool changed[%d];\t/* the count figures */\n};\n" % (len(TIMES), len(COUNTS)))
    w("struct exp_set {\n\tconst struct exp_query *base, *new;\n"
      "\tunsigned int nbase_q, nnew_q, nbase, nnew;\n"
      "\tconst struct exp_result *want;\n\tunsigned int nwant;\n};\n")
    sets = [("samples", base, new), ("history", hist, one),
            ("short", short, short_one)]
    for tag, b, nw in sets:
        for side, qs in (("b", b), ("n", nw)):
            for name, figs in sorted(qs.items()):
                runs = len(figs["self_ns"])
                flat = []
                for r in range(runs):
                    flat += [figs[f][r] for f in TIMES + COUNTS]
                w(c_array("set_%s_%s_%s" % (tag, side, name), "uint64_t", flat))
            w("static const struct exp_query set_%s_%s[] = {\n" % (tag, side))
            for name in sorted(qs):
                w("\t{ %s, set_%s_%s_%s },\n" % (c_string(name), tag, side, name))
            w("};\n")
        res = verdicts(b, nw)
        w("static const struct exp_result want_%s[] = {\n" % tag)
        for name in sorted(res):
            s = res[name]["self_ns"]
            w("\t{ %s, %s, %s,\n\t  { %s },\n\t  { %s } },\n" % (
                c_string(name), c_string(s["v"]), ", ".join(c_num(s.get(k, math.nan)) for k in
                    ("ratio", "lo", "hi", "p", "p_adj", "fence", "effect")),
                ", ".join(c_string(res[name][f]["v"]) for f in TIMES),
                ", ".join(c_num(res[name][f]["changed"]) for f in COUNTS)))
        w("};\n")
    w("static const struct exp_set exp_sets[] = {\n")
    for tag, b, nw in sets:
        nbr = len(next(iter(b.values()))["self_ns"])
        nnr = len(next(iter(nw.values()))["self_ns"])
        w("\t{ set_%s_b, set_%s_n, %d, %d, %d, %d, want_%s, %d },\n" % (
            tag, tag, len(b), len(nw), nbr, nnr, tag, len(set(b) | set(nw))))
    w("};\n\n#endif\n")
    return "".join(out)


def main():
    text = header()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2]) as f:
            have = f.read()
        if have != text:
            sys.stderr.write("%s is not what stats_reference.py writes: "
                             "regenerate it (stats_reference.py > %s)\n"
                             % (sys.argv[2], sys.argv[2]))
            return 1
        print("ok: %s matches the reference" % sys.argv[2])
        return 0
    if len(sys.argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
