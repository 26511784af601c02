# SPDX-License-Identifier: MIT
"""Regression verdicts (docs/numbers.md, "Repeated runs and verdicts"), with
truth by construction: tests/hosts/verdict_host runs 20 queries of equal
work, 5 ms each by its own clock, and VERDICT_SLOW=q07:1.10 makes exactly
one of them 10% slower; VERDICT_EXTRA=q05 runs one query once more.

Real BPF, real runs, but a bounded number of them: each run loads the BPF
program afresh (seconds on a loaded 2-CPU machine), so 10 trials of 10
runs a side would take half an hour. The runs are recorded once, as a
pool in one history database (`sptrace bench`, A and B in turn, then more
A), and the trials are drawn from it at random with a fixed seed:

  - detection: 10 trials, each 10 random A runs against 10 random B runs
    (of 12): q07 must be flagged `regressed` in at least 9;
  - A/A: 10 trials, each the 20 A runs split at random into two sets of
    10: at most the stated false discovery rate (5%) of the queries may
    be flagged with the default threshold, and at most 2 of the 10 trials
    may flag any query, with it and with none (the correction alone);
  - a count one higher is always reported, in both modes;
  - history: each run judged against the 10 runs before it of its command:
    one with the slowdown is flagged; of the queries without a change (the
    last 10 A runs' and the slow run's others) at most 5% are;
  - `history` shows the run that broke q07's trend, `report` the verdicts.

Trials drawn from one pool share runs, so they are not independent; the
rates they give are printed, as the issue asks. Each run's figures are also
checked against the host's own counts and clock.

The host runs at real-time priority (chrt -f 10) and per-event probes
(SPTRACE_PER_EVENT=1, which loads fewer programs: shorter runs): this
machine is shared by other test jobs, and a query preempted by them for a
time slice takes several ms longer, on a 5 ms query a change no sample of
10 can see past. The priority keeps the known slowdown the only
difference; the statistics are distribution-free, so A/A holds either way.
"""
import csv
import io
import json
import math
import os
import random
import re
import shutil
import sqlite3
import tempfile

from sptest import SPTRACE, check, eq, finish, require, require_bpf, run

HOST = os.environ["VERDICT_HOST"]
WORK = tempfile.mkdtemp(prefix="sptest-verdicts-")
DB = os.path.join(WORK, "pool.db")
CMD = ["chrt", "-f", "10", HOST]
SLOW_Q, SLOW = "q07", 1.10
EXTRA_Q = "q05"
N, TRIALS = 10, 10
NQ = 21                 # q00..q19 and the host's warm-up query
FDR = 0.05
ENV = dict(os.environ, SPTRACE_PER_EVENT="1")
rng = random.Random(26)


def bench(args, env=None, what="bench"):
    """sptrace bench ... -o FILE; returns (host truth lines, statistics)."""
    out = os.path.join(WORK, "bench-%d.json" % rng.randrange(1 << 30))
    p = run([SPTRACE, "bench", "--db", DB, "-f", "json", "-o", out] + args,
            timeout=1200, env=env or ENV)
    eq(p.returncode, 0, "%s: exit status 0 (%s)" % (what, p.stderr.strip()[-300:]))
    truths = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    progress = re.findall(r"^sptrace: bench: run (\d+) of (\d+)", p.stderr, re.M)
    check(progress and progress[-1][0] == progress[-1][1] and
          len(progress) == int(progress[-1][1]),
          "%s: one progress line per run on stderr (%d)" % (what, len(progress)))
    with open(out) as f:
        return truths, json.load(f)


def runs_of(label):
    con = sqlite3.connect(DB)
    ids = [r[0] for r in con.execute(
        "SELECT id FROM runs WHERE label = ? ORDER BY id", (label,))]
    con.close()
    return ids


# Each stored run's self time per query by the host's own clock.
host_ns = {}


def host_ratio(query, new, base):
    """What a history judgement of run `new` against runs `base` must
    find by the host's clock: its self time over the base's median, taken
    as sptrace takes it (of the logarithms: for an even count, the
    geometric mean of the middle two). A machine stall that slows the
    host's busy work lands in both, so this, not the slowdown asked for,
    is the truth."""
    logs = sorted(math.log(host_ns[r][query]) for r in base)
    n = len(logs)
    mid = logs[n // 2] if n % 2 else (logs[n // 2 - 1] + logs[n // 2]) / 2
    return math.exp(math.log(host_ns[new][query]) - mid)


def check_truth(truths, ids, what):
    """Each run's rows against the host's own counts and clock: every count
    exact; every self time at least the host's busy-wait time (its clock
    is read inside the probes); and at most 2% plus the probes' cost (1 us
    an event on this VM; 20 us allowed) above it in all but 1% of them: a
    stall of the machine inside a probe lands in the interval, as it
    would in any traced program (docs/numbers.md, Time base)."""
    con = sqlite3.connect(DB)
    eq(len(truths), len(ids), "%s: one host report per stored run" % what)
    wrong, slow, n = [], [], 0
    for truth, rid in zip(truths, ids):
        host_ns[rid] = {k: q["ns"] for k, q in truth["queries"].items()}
        got = {r[0]: r[1:] for r in con.execute(
            "SELECT name, count, self_ns FROM queries WHERE run_id = ?", (rid,))}
        for name, t in truth["queries"].items():
            c, s = got.get(name, (None, 0))
            n += 1
            if c != t["count"] or s < t["ns"]:
                wrong.append((rid, name, c, t["count"], s, t["ns"]))
            elif s > t["ns"] * 1.02 + 20000 * t["count"]:
                slow.append((rid, name, s - t["ns"]))
        eq(got.get("warmup", (None,))[0], 2, "%s: run %d: the host's warm-up "
           "query, twice" % (what, rid))
    con.close()
    check(not wrong, "%s: every count as the host counted it, every self time "
          "at least its own clock's (%d off: %s)" % (what, len(wrong), wrong[:3]))
    print("%s: %d of %d self times more than 2%% + 20 us/call above the host's "
          "clock: %s" % (what, len(slow), n, slow[:5]))
    check(len(slow) <= max(1, n // 100), "%s: at most 1%% of the self times "
          "well above the host's clock (%d)" % (what, len(slow)))


def diff(base, new, *extra, fmt="json"):
    p = run([SPTRACE, "diff", "--db", DB, "-f", fmt] + list(extra) +
            ([base, new] if base else [new]))
    eq(p.returncode, 0, "diff %s %s %s: exit status 0 (%s)" % (
        " ".join(extra), base, new, p.stderr.strip()[:200]))
    if fmt == "json":
        return json.loads(p.stdout) if p.returncode == 0 else None
    return p.stdout


def ids(v):
    return ",".join(str(i) for i in sorted(v))


def flagged(v):
    return {q["name"]: q["verdict"] for q in v["queries"]
            if q["verdict"] in ("regressed", "improved")}


require_bpf()
require(shutil.which("chrt"), "chrt (util-linux)")

# ---- the pool: 12 A and 12 B in turn, then 8 more A ----------------------
truths, stats = bench(["-n", "12", "--label", "A", "--label", "B", "--"] + CMD +
                      [":::", "env", "VERDICT_SLOW=%s:%g" % (SLOW_Q, SLOW)] + CMD,
                      what="bench A ::: B")
A, B = runs_of("A"), runs_of("B")
eq((len(A), len(B)), (12, 12), "bench A ::: B: 12 runs of each, stored")
check(all(b == a + 1 for a, b in zip(A, B)), "bench A ::: B: they ran in turn, A B A B")
check_truth(truths, sorted(A + B), "bench A ::: B")
by = {s["ref"]: {q["name"]: q for q in s["queries"]} for s in stats["sets"]}
eq(sorted(by), ["label:A", "label:B"], "bench -f json: a set per label")
ratio = by["label:B"][SLOW_Q]["figures"]["self_ns"]["median"] / \
    by["label:A"][SLOW_Q]["figures"]["self_ns"]["median"]
check(abs(ratio - SLOW) < 0.01, "bench -f json: %s's median self time %.4f times "
      "as long with %s" % (SLOW_Q, ratio, "VERDICT_SLOW"))
truths, _ = bench(["-n", "8", "--label", "A", "--"] + CMD, what="bench A")
A = runs_of("A")
eq(len(A), 20, "20 runs labelled A")
check_truth(truths, A[12:], "bench A")

# ---- detection: 10 A against 10 B, 10 trials -----------------------------
hits, other = 0, 0
for t in range(TRIALS):
    v = diff(ids(rng.sample(A, N)), ids(rng.sample(B, N)))
    f = flagged(v)
    hits += f.get(SLOW_Q) == "regressed"
    other += len([q for q in f if q != SLOW_Q])
    if t == 0:
        eq((v["version"], v["mode"], v["method"]["correction"]),
           ("1.0", "samples", "benjamini_hochberg"), "diff -f json: version, mode, method")
        q7 = [q for q in v["queries"] if q["name"] == SLOW_Q][0]["figures"]["self_ns"]
        check(abs(q7["ratio"] - SLOW) < 0.01 and q7["ci"] and
              q7["ci"][0] <= q7["ratio"] <= q7["ci"][1],
              "%s's change %.4f (interval %s): the slowdown made, %g" % (
                  SLOW_Q, q7["ratio"], q7["ci"], SLOW))
print("detection: %s flagged regressed in %d of %d trials (%.0f%%); other "
      "queries flagged: %d of %d" % (SLOW_Q, hits, TRIALS, 100.0 * hits / TRIALS,
                                     other, (NQ - 1) * TRIALS))
check(hits >= 9, "a 10%% slowdown of one query is flagged in at least 9 of 10 "
      "trials (%d)" % hits)
check(other <= FDR * (NQ - 1) * TRIALS, "detection trials: other queries flagged at most "
      "at the false discovery rate (%d)" % other)

# ---- A/A: the 20 A runs split in two, 10 trials ---------------------------
for extra, what in (((), "default threshold"), (("--threshold", "0"), "no threshold")):
    total, trials_any = 0, 0
    for t in range(TRIALS):
        s = rng.sample(A, 2 * N)
        f = flagged(diff(ids(s[:N]), ids(s[N:]), *extra))
        total += len(f)
        trials_any += bool(f)
    rate = total / (float(NQ) * TRIALS)
    print("A/A (%s): %d of %d queries flagged (%.1f%%), %d of %d trials with any; "
          "stated: false discovery rate %.0f%%" % (what, total, NQ * TRIALS,
                                                  100 * rate, trials_any, TRIALS,
                                                  100 * FDR))
    # The issue's check, on what users get (the default threshold).
    # Without one (the correction alone), a trial that flags anything
    # flags many: its runs share a cause (a slow minute of the machine in
    # one set slows all of its queries alike), so this mean over 10
    # trials is one trial's count (a CI run: 16 of 21 queries in 1 trial,
    # 7.6%). What Benjamini-Hochberg promises when nothing changed is
    # that a comparison flags anything at most 5% of the time: the check
    # below, for both.
    if not extra:
        check(rate <= FDR, "A/A (%s): at most %.0f%% of queries flagged "
              "(%.1f%%)" % (what, 100 * FDR, 100 * rate))
    # Benjamini-Hochberg when nothing changed: a comparison flags anything
    # at most 5% of the time. Two trials of 10 is more than that allows
    # (1% by chance); without the correction, most trials flag a query.
    check(trials_any <= 2, "A/A (%s): at most 2 of %d trials flag any query "
          "(%d)" % (what, TRIALS, trials_any))

# ---- counts: one more invocation is always reported ------------------------
env = dict(ENV, VERDICT_EXTRA=EXTRA_Q)
truths, _ = bench(["-n", "1", "--label", "X", "--"] + CMD, env=env, what="bench X")
X = runs_of("X")
calls = truths[0]["queries"]["q00"]["count"]
eq(truths[0]["queries"][EXTRA_Q]["count"], calls + 1, "the host ran %s once more "
   "than the others" % EXTRA_Q)
check_truth(truths, X, "bench X")
v = diff("label:A", ids(X))
eq(v["mode"], "history", "one run against 20: history mode")
row = [q for q in v["queries"] if q["name"] == EXTRA_Q][0]
check(row["count_changed"] and row["listed"], "history mode: %s's count %d -> %d "
      "is reported" % (EXTRA_Q, calls, calls + 1))
eq([q["name"] for q in v["queries"] if q["count_changed"]], [EXTRA_Q],
   "history mode: only that count changed")
v = diff(ids(rng.sample(A, N)), ids(rng.sample(A, N - 1) + X))
row = [q for q in v["queries"] if q["name"] == EXTRA_Q][0]
check(row["count_changed"] and row["listed"] and
      row["figures"]["count"]["new"]["max"] == calls + 1,
      "samples mode: one run of 10 with a count one higher is reported")
print(diff("label:A", "label:B", fmt="table"))
table = diff(ids(A[:N]), ids(X), fmt="table")
check(re.search(r"\| %s .*\| +%d -> %d \|" % (EXTRA_Q, calls, calls + 1), table),
      "table: the changed count is listed, %d -> %d" % (calls, calls + 1))

# ---- history: each of the last 10 A runs against the 10 before it, then a
# run with the slowdown ------------------------------------------------------
# One run is one sample: a stall of the machine that hits one query of a run
# is a real outlier, which the fence of 10 runs may not have seen (an ASan CI
# leg flagged 3 of 21 queries of one run so). So, as for A/A, the false
# flags are a rate over trials: 10 runs without the slowdown and the 20
# other queries of the run with it, at most the rate A/A allows.
false_flags, judged, runs_any = 0, 0, 0
for rid in A[N:]:
    v = diff(None, str(rid), "--history", "--window", str(N))
    if rid == A[N]:
        eq((v["mode"], sorted(v["base"]["runs"])), ("history", A[:N]),
           "--history --window 10: the 10 runs before it of its command")
    f = flagged(v)
    if f:
        print("history, run %d without the slowdown: %d of %d queries flagged %s" % (
            rid, len(f), NQ, f))
    false_flags += len(f)
    judged += NQ
    runs_any += bool(f)
env = dict(ENV, VERDICT_SLOW="%s:%g" % (SLOW_Q, SLOW))
truths, _ = bench(["-n", "1", "--label", "H", "--"] + CMD, env=env, what="bench H")
H = runs_of("H")
check_truth(truths, H, "bench H")
v = diff(None, "latest", "--history", "--window", "10")
eq(v["new"]["runs"], H, "--history latest: the run just stored")
f = flagged(v)
eq(f.get(SLOW_Q), "regressed", "history: the run with the slowdown is flagged")
others = {k: w for k, w in f.items() if k != SLOW_Q}
print("history, the run with the slowdown: %d other queries flagged %s" % (
    len(others), others))
false_flags += len(others)
judged += NQ - 1
print("history: %d of %d judgements without a change flagged (%.1f%%), %d of %d "
      "runs without the slowdown with any" % (false_flags, judged,
                                              100.0 * false_flags / judged,
                                              runs_any, len(A) - N))
check(false_flags <= FDR * judged, "history: at most %.0f%% of the queries without "
      "a change flagged (%d of %d)" % (100 * FDR, false_flags, judged))
# Each run's self time may lie up to 2% over the host's (check_truth: the
# probes' cost, a trap each for a flush, 30-80 us on a VM where a system
# call costs ~1 us, against 6 ms of q07 a run), so the ratio of two runs
# may differ from the host's by as much (an ASan CI run: 1.0898 against
# 1.1054).
RATIO_TOL = 0.025
fig = [q for q in v["queries"] if q["name"] == SLOW_Q][0]["figures"]["self_ns"]
want = host_ratio(SLOW_Q, H[0], v["base"]["runs"])
check(abs(fig["ratio"] - want) < RATIO_TOL and fig["ratio"] - 1 > fig["fence"],
      "history: %s's change %.4f (the host's clock: %.4f), beyond its fence %.4f" % (
          SLOW_Q, fig["ratio"], want, fig["fence"]))

# ---- history and report show it --------------------------------------------
p = run([SPTRACE, "history", "--db", DB, SLOW_Q])
line = [l for l in p.stdout.splitlines() if re.match(r"\| +%d \|" % H[0], l)]
m = line and re.search(r"regressed \+([0-9.]+)%", line[0])
# The trend judges each run against the runs of its command before it.
want = host_ratio(SLOW_Q, H[0], sorted(A + X))
check(m and abs(float(m.group(1)) / 100 + 1 - want) < RATIO_TOL, "history QUERY: the run "
      "that broke the trend says so, with its change (%r; the host's clock: %+.1f%%)" % (
          line[:1], 100 * (want - 1)))
print(run([SPTRACE, "history", "--db", DB, "--trends"]).stdout)
p = run([SPTRACE, "history", "--db", DB, "--trends", "-f", "json"])
tr = {t["name"]: t for t in json.loads(p.stdout)["trends"]}
breaks = [i for i, j in zip(json.loads(p.stdout)["runs"], tr[SLOW_Q]["judged"])
          if j and j["verdict"] == "regressed"]
check(H[0] in breaks, "history --trends: run %d broke %s's trend (%s)" % (H[0], SLOW_Q, breaks))
html = os.path.join(WORK, "report.html")
p = run([SPTRACE, "report", "--db", DB, "label:B", "--base", "label:A", "-o", html])
eq(p.returncode, 0, "report over two labels: exit status 0 (%s)" % p.stderr.strip()[:200])
with open(html) as f:
    page = f.read()
rows = {name: verdict for verdict, name in re.findall(
    r'<tr class="[a-z_]+" data-verdict="([a-z_]+)"><td class="name">([^<]*)<', page)}
eq(rows.get(SLOW_Q), "regressed", "report: %s's badge says regressed" % SLOW_Q)
eq(len(rows), NQ, "report: a row per query")
check(len(re.findall(r'<svg class="sm"[^>]*data-runs="32"', page)) == NQ,
      "report: each query's small multiple has all 32 runs")
check("Content-Security-Policy" in page and not re.search(r'\ssrc=|https?://(?!www\.w3)', page),
      "report: nothing to fetch")

# ---- CSV ------------------------------------------------------------------
text = diff("label:A", "label:B", fmt="csv")
recs = list(csv.DictReader(io.StringIO(text)))
eq(len(recs), NQ * 10, "diff -f csv: a line per query and figure")
r7 = [r for r in recs if r["name"] == SLOW_Q and r["figure"] == "self_ns"][0]
eq((r7["verdict"], r7["figure_verdict"]), ("regressed", "regressed"),
   "diff -f csv: %s regressed" % SLOW_Q)

# VERDICT_KEEP=1 keeps the pool (its path printed) for a look afterwards.
if os.environ.get("VERDICT_KEEP"):
    print("kept: " + DB)
else:
    shutil.rmtree(WORK, ignore_errors=True)
finish()
