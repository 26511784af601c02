# SPDX-License-Identifier: MIT
"""The `history` tables and the `mem` tables fit 120 characters by default
(names cut with "...", columns left out by the documented order and named
under the table), and show everything with --wide
(docs/formats.md#fitting-120-characters). The data is made wide on purpose: a
100-character label and a command line of 200 characters in the history
database; the widest memory figures are a unit test's (unit_table_fit)."""
import os
import shutil
import tempfile

from sptest import SPTRACE, check, eq, finish, require_bpf, run

SPEC_HOST = os.environ["SPEC_HOST"]
TYPED = os.environ["MEM_TYPED_HOST"]


def widest(text):
    return max((len(l) for l in text.splitlines()), default=0)


require_bpf()
d = tempfile.mkdtemp(prefix="sptest-width-")
try:
    db = os.path.join(d, "h.db")
    label = "release-candidate-" + "x" * 82
    longarg = "a" * 200
    for args in (["1", longarg], ["2"]):
        # A --query line gives the run its sph:outer row (a command with
        # no probe at all is refused before tracing).
        p = run([SPTRACE, "--db", db, "--label", label, "-o", os.devnull,
                 "--query", "sph:outer__start,sph:outer__done,name=sph:outer",
                 "--", SPEC_HOST] + args)
        eq(p.returncode, 0, "stored a run (%s)" % p.stderr.strip()[:200])

    p = run([SPTRACE, "history", "--db", db])
    eq(p.returncode, 0, "history: exit 0 (%s)" % p.stderr.strip()[:200])
    check(widest(p.stdout) <= 120, "history: every line <= 120 characters "
          "(widest %d):\n%s" % (widest(p.stdout), p.stdout))
    check(label[:20] in p.stdout and "..." in p.stdout and
          label not in p.stdout, "history: the label shown, cut with ...")
    p = run([SPTRACE, "history", "--db", db, "--wide"])
    check(p.returncode == 0 and label in p.stdout and longarg in p.stdout,
          "history --wide: label and command whole (%s)" % p.stdout[:300])
    check(widest(p.stdout) > 120, "history --wide: wider than 120 (%d)"
          % widest(p.stdout))

    p = run([SPTRACE, "history", "--db", db, "sph:outer"])
    check(p.returncode == 0 and widest(p.stdout) <= 120 and "..." in p.stdout,
          "history QUERY: every line <= 120 characters (widest %d):\n%s"
          % (widest(p.stdout), p.stdout))
    p = run([SPTRACE, "history", "--db", db, "--wide", "sph:outer"])
    check(p.returncode == 0 and label in p.stdout,
          "history QUERY --wide: the label whole")

    # mem: --wide is accepted and shows every column of both tables.
    titles = ["Allocs", "Frees", "Live", "Peak live bytes", "Avg size", "TID"]
    for wide in (False, True):
        p = run([SPTRACE, "mem", "--per-thread"] + (["--wide"] if wide else [])
                + ["--", TYPED])
        what = "mem --per-thread" + (" --wide" if wide else "")
        eq(p.returncode, 0, "%s: exit 0 (%s)" % (what, p.stderr.strip()[:200]))
        check(widest(p.stdout) <= 120 or wide, "%s: every line <= 120 "
              "characters (widest %d)" % (what, widest(p.stdout)))
        check(all(t in p.stdout for t in titles) and "left out" not in p.stdout,
              "%s: every column (its figures fit)" % what)
finally:
    shutil.rmtree(d, ignore_errors=True)
finish()
