# SPDX-License-Identifier: MIT
"""Hostile query names (quotes, commas, newlines, control bytes, invalid
UTF-8, HTML, formula injection): every output stays valid for a strict
parser, and every name keeps its row and its exact count."""
import csv
import io
import json
import os

from sptest import SPTRACE, check, eq, finish, require_bpf, run

HOST = os.environ["HOSTILE_HOST"]
N = 12      # names; the i-th runs i + 1 times

require_bpf()
p = run([SPTRACE, "-f", "json", "--", HOST])
eq(p.returncode, 0, "json: exit 0")
try:
    s = json.loads(p.stdout, strict=True)
    ok = True
except ValueError as e:
    ok = check(False, "json: strict parse: %s" % e)
if ok:
    check(True, "json: strict parse")
    counts = sorted(q["count"] for q in s["queries"])
    eq(counts, list(range(1, N + 1)), "json: every hostile name its own row, exact counts")
    names = {q["name"] for q in s["queries"]}
    check('quote"name' in names and "new\nline" in names and
          "<script>alert(1)</script>" in names, "json: names round-trip")
    check(any("\ufffd" in n for n in names), "json: invalid UTF-8 shown as U+FFFD")

p = run([SPTRACE, "-f", "csv", "--", HOST])
try:
    rows = list(csv.DictReader(io.StringIO(p.stdout.encode("utf-8", "strict").decode("utf-8"))))
    eq(sorted(int(r["count"]) for r in rows), list(range(1, N + 1)), "csv: rows and counts")
    check(any(r["name"] == "comma,name" for r in rows) and
          any(r["name"] == "new\nline" for r in rows), "csv: quoting keeps names whole")
except (UnicodeError, csv.Error) as e:
    check(False, "csv: valid: %s" % e)

p = run([SPTRACE, "--", HOST])
table = [l for l in p.stdout.splitlines() if l.startswith("|")]
eq(len(table), 1 + 1 + N, "table: one line per row (header, Total, %d names)" % N)
check("\x1b" not in p.stdout and "\a" not in p.stdout, "table: no raw control bytes")
widths = {len(l) for l in table}
check(len(widths) == 1, "table: rows aligned (%s)" % sorted(widths))
finish()
