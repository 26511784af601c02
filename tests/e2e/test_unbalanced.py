# SPDX-License-Identifier: MIT
"""Unbalanced events and full maps are counted exactly, reported in JSON
and in the table, and never corrupt other rows."""
import os

from sptest import SPTRACE, check, eq, finish, require_bpf, rows, run, trace_json

HOST = os.environ["UNBALANCED_HOST"]

require_bpf()
p, s = trace_json(["--", HOST, "events"])
eq(p.returncode, 0, "events: exit 0")
if check(s is not None, "JSON summary written (test_unbalanced.py:13)"):
    r, e = rows(s), s["errors"]
    eq(r["good"]["count"], 10, "good row exact among unbalanced events")
    eq(e["end_without_begin"], 3, "END without BEGIN counted")
    eq(e["end_mismatch"], 2, "END closing a later frame counted")
    eq(r["outer_a"]["count"], 2, "the mismatched END still closes its query")
    check("never_closed" not in r or r["never_closed"]["count"] == 0,
          "discarded frames are not invocations")
    eq(e["stack_overflow"], 2, "frames beyond 128 counted")
    eq(r["deep"]["count"], 128, "the 128 kept frames of deep recursion timed")
    eq(e["thread_exit_open"], 2, "thread exiting with open queries counted")
    eq(e["unbalanced"], 3 + 2 + 2 + 2, "unbalanced is the sum")
    eq(e["map_full"], 0, "no map full")

p = run([SPTRACE, "--", HOST, "events"])
for word in ("end_without_begin", "end_mismatch", "stack_overflow",
             "thread_exit_open"):
    check(word in p.stdout + p.stderr, "table run reports %s" % word)

# 40 distinct queries, 3 times each, into a map of 16 rows.
p, s = trace_json(["--max-queries", "16", "--", HOST, "many", "40", "3"])
eq(p.returncode, 0, "map full: exit 0")
if check(s is not None, "JSON summary written (test_unbalanced.py:35)"):
    r = rows(s)
    eq(len(r), 16, "map full: 16 rows kept")
    check(all(q["count"] == 3 for q in s["queries"]),
          "map full: the rows kept are exact")
    eq(s["errors"]["queries_map_full"], (40 - 16) * 3,
       "map full: every lost interval counted")
    eq(s["errors"]["map_full"], (40 - 16) * 3, "map_full is the sum")
finish()
