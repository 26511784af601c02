# SPDX-License-Identifier: MIT
"""`sptrace report` opened in headless Chromium as a person would use it:
sort columns, open a query's histogram, read the delta cells, with real
runs of the ground-truth and hostile hosts; every figure on the page is
checked against the run's JSON summary. Screenshots are kept as artifacts
in REPORT_ARTIFACTS (the build's meson-logs)."""
import http.server
import json
import os
import threading
import time

from sptest import (SPTRACE, check, close, eq, finish, host_truth, require,
                    require_bpf, rows, run, tmpfile, trace_json)
import webdriver

GT = os.environ["GT_HOST"]
HOSTILE = os.environ["HOSTILE_HOST"]
MEM_LIBC = os.environ["MEM_LIBC_HOST"]
ARTIFACTS = os.environ.get("REPORT_ARTIFACTS", ".")
PAYLOAD = "</script><img src=x onerror=window.__pwned=1>"

require_bpf()
require(webdriver.available(), "%s and %s (Debian: chromium, "
        "chromium-driver)" % (webdriver.CHROMIUM, webdriver.CHROMEDRIVER))

_cleanup = []


def tmp(suffix):
    path = tmpfile(suffix)
    _cleanup.append(path)
    return path


def fmt_ns(ns):
    """text__fmt_ns(): 3 significant digits, rounded half up."""
    if ns < 1000:
        return "%dns" % ns
    e = len(str(ns)) - 1
    scale = 10 ** (e - 2)
    m = ns // scale + (1 if ns % scale >= scale // 2 else 0)
    if m == 1000:
        m, e = 100, e + 1
    u = 0 if e < 6 else 1 if e < 9 else 2
    unit = ("us", "ms", "s")[u]
    ip = e - 3 * (u + 1)
    if ip == 0:
        return "%d.%02d%s" % (m // 100, m % 100, unit)
    if ip == 1:
        return "%d.%d%s" % (m // 10, m % 10, unit)
    return "%d%s" % (m * 10 ** (ip - 2), unit)


def delta_class(b, n, floor):
    """docs/report.md: coloured when >= 5% of the base and >= the floor."""
    mag = abs(n - b)
    if mag == 0 or mag < floor or (b and mag * 100.0 < 5.0 * b):
        return "neutral"
    return "down" if n < b else "up"


def report(args, what):
    out = tmp(".html")
    p = run([SPTRACE, "report", "-o", out] + args)
    eq(p.returncode, 0, "%s: exit 0 (%s)" % (what, p.stderr.strip()[:300]))
    return out


# What the page shows, read in one call: header columns, then per row
# (Total first) each cell's text, data-v, class, title and the delta
# cells' data-base/data-new.
READ_TABLE = """
var t = document.getElementById('queries');
var cols = Array.prototype.map.call(t.tHead.rows[0].cells, function (th) {
  return {key: th.getAttribute('data-col'), sort: th.getAttribute('aria-sort'),
          ind: th.querySelector('.ind').textContent};
});
var out = [];
for (var b = 0; b < t.tBodies.length; b++)
  for (var r = 0; r < t.tBodies[b].rows.length; r++) {
    var cells = t.tBodies[b].rows[r].cells, row = {};
    for (var c = 0; c < cells.length; c++)
      row[cols[c].key] = {text: cells[c].textContent,
        v: cells[c].getAttribute('data-v'), cls: cells[c].className,
        title: cells[c].getAttribute('title'),
        base: cells[c].getAttribute('data-base'),
        new: cells[c].getAttribute('data-new')};
    out.push(row);
  }
return {cols: cols, rows: out, tbody0: t.tBodies[0].className};
"""

READ_PANEL = """
var p = document.getElementById('panel'), r = {hidden: p.hidden,
  name: document.getElementById('panel-name').textContent, bars: {}, stats: {}};
['new', 'base'].forEach(function (k) {
  r.bars[k] = Array.prototype.map.call(
    document.querySelectorAll('#panel-hist rect.bar.' + k), function (e) {
      return [Number(e.getAttribute('data-lo')), Number(e.getAttribute('data-count'))];
    });
});
Array.prototype.forEach.call(document.querySelectorAll('#panel-stats td'),
  function (td) {
    r.stats[td.getAttribute('data-side') + '.' + td.getAttribute('data-k')] =
      [Number(td.getAttribute('data-v')), td.textContent];
  });
return r;
"""

ROW_BY_NAME = """
var rs = document.getElementById('rows').rows;
for (var i = 0; i < rs.length; i++)
  if (rs[i].cells[0].textContent === arguments[0]) return rs[i];
return null;
"""


def read_table(b):
    t = b.js(READ_TABLE)
    return t, {r["name"]["text"]: r for r in t["rows"][1:]}


def check_figures(label, shown, truth):
    """Every figure of every query as data-v, and its text."""
    eq(sorted(shown), sorted(truth), label + ": one row per query")
    total_self = sum(q["self_ns"] for q in truth.values())
    for name, q in truth.items():
        r = shown.get(name)
        if not r:
            continue
        got = {k: int(r[k]["v"]) for k in ("count", "self", "total",
               "cache_hits", "blocked", "incr_load", "p50", "p90", "p99",
               "max")}
        want = {"count": q["count"], "self": q["self_ns"],
                "total": q["total_ns"], "cache_hits": q["cache_hits"],
                "blocked": q["blocked_ns"], "incr_load": q["incr_load_ns"],
                "p50": q["p50_ns"], "p90": q["p90_ns"], "p99": q["p99_ns"],
                "max": q["max_ns"]}
        eq(got, want, "%s: %r figures" % (label, name))
        eq(r["self"]["text"], fmt_ns(q["self_ns"]),
           "%s: %r self shown human-scaled" % (label, name))
        eq(r["self_pct"]["text"], "%.2f" % (q["self_ns"] * 100.0 / total_self),
           "%s: %r self %% of total" % (label, name))


# Each header's sort state as a person sees it: aria-sort, the indicator
# text, and what CSS draws after an empty indicator (a glyph on every
# header would say nothing about the order).
READ_MARKS = """
return Array.prototype.map.call(document.querySelectorAll('#queries thead th'),
  function (th) {
    var ind = th.querySelector('.ind'),
        after = getComputedStyle(ind, '::after').content;
    return [th.getAttribute('data-col'), th.getAttribute('aria-sort'),
            ind.textContent, after === 'none' || after === 'normal' ? '' : after];
  });
"""


def check_initial_order(b, label, base):
    """Before any click the page says how the rows are ordered, and only the
    column they are sorted by carries an arrow."""
    marks = b.js(READ_MARKS)
    marked = [m for m in marks if m[1] or m[2] or m[3]]
    order = b.js("return document.getElementById('order').textContent")
    if base:
        eq(marked, [], "%s: no column marked before a click" % label)
        check("self-time change" in order,
              "%s: the order is said: %r" % (label, order))
    else:
        eq(marked, [["self", "descending", "\u25bc", ""]],
           "%s: only Self marked (descending) before a click" % label)
        check("self time, largest first" in order,
              "%s: the order is said: %r" % (label, order))
        t, _ = read_table(b)
        vals = [float(r["self"]["v"]) for r in t["rows"][1:]]
        check(vals == sorted(vals, reverse=True),
              "%s: rows really by self time, descending: %s" % (label, vals))


def check_fits(b, label):
    """At the window's width (1400 px) the whole table is in view: every
    header's box ends inside the window and inside its scroll box, and
    nothing scrolls sideways. A cut-off column fails here."""
    r = b.js("""
var w = document.querySelector('.tablewrap'),
    vw = document.documentElement.clientWidth, wr = w.getBoundingClientRect();
return {vw: vw, inner: window.innerWidth, sw: w.scrollWidth, cw: w.clientWidth,
  page: document.documentElement.scrollWidth,
  cut: Array.prototype.filter.call(document.querySelectorAll('#queries th'),
    function (th) { var r = th.getBoundingClientRect();
      return r.right > Math.min(vw, wr.right) + 0.5 || r.left < 0; })
    .map(function (th) { return th.getAttribute('data-col'); })};""")
    eq(r["inner"], 1400, "%s: the window is 1400 px wide" % label)
    eq(r["cut"], [], "%s: no column cut off at %d px" % (label, r["vw"]))
    check(r["sw"] <= r["cw"] and r["page"] <= r["vw"],
          "%s: no sideways scrolling (table %d/%d px, page %d/%d px)" %
          (label, r["sw"], r["cw"], r["page"], r["vw"]))


def check_undefined(label, shown, truth):
    """A query that never completed has no percentiles or max: '-'."""
    zero = [n for n, q in truth.items() if q["count"] == 0]
    check(zero, "%s: some rows have count 0 (%s)" % (label, zero))
    for name in zero:
        r = shown.get(name)
        if r:
            eq([r[k]["text"] for k in ("p50", "p90", "p99", "max")],
               ["-"] * 4, "%s: %r (count 0): p50..max are '-'" % (label, name))


def check_sorting(b, label, initial=None):
    for key, first in (("self", "descending"), ("count", "descending"),
                       ("p99", "descending"), ("name", "ascending")):
        if key == initial:
            first = "ascending"
        th = b.find('#queries thead th[data-col="%s"]' % key)
        for click, order in enumerate(
                (first, "ascending" if first == "descending" else "descending")):
            b.click(th)
            t, _ = read_table(b)
            col = [c for c in t["cols"] if c["key"] == key][0]
            eq((col["sort"], col["ind"]),
               (order, "\u25bc" if order == "descending" else "\u25b2"),
               "%s: sort by %s, click %d: aria-sort and indicator" %
               (label, key, click + 1))
            others = [c["key"] for c in t["cols"]
                      if c["key"] != key and (c["sort"] or c["ind"])]
            eq(others, [], "%s: sort by %s: no other column marked" %
               (label, key))
            eq((t["tbody0"], t["rows"][0]["name"]["text"]), ("total", "Total"),
               "%s: sort by %s %s: Total stays first" % (label, key, order))
            if key == "name":
                vals = [r[key]["text"] for r in t["rows"][1:]]
            else:
                vals = [float(r[key]["v"]) for r in t["rows"][1:]]
            check(vals == sorted(vals, reverse=order == "descending"),
                  "%s: sort by %s %s: rows in order %s" %
                  (label, key, order, vals[:6]))


READ_HIST = """
var h = document.getElementById('panel-hist');
return {
  pl: Array.prototype.map.call(h.querySelectorAll('line.pl'), function (l) {
    return [l.getAttribute('class'), l.getAttribute('data-p'),
            Number(l.getAttribute('data-v'))]; }),
  xt: Array.prototype.map.call(h.querySelectorAll('text.xt, text.yt'),
    function (t) { return t.textContent; }),
  xl: h.querySelectorAll('text.xl').length,
  yl: Array.prototype.map.call(h.querySelectorAll('text.yl'),
    function (t) { return t.textContent; }),
  // Each bar's filled area as drawn on screen, in CSS pixels: its
  // geometry (no stroke, no title) through the SVG's scale.
  bars: Array.prototype.map.call(h.querySelectorAll('rect.bar'),
    function (r) {
      var b = r.getBBox(), m = r.getScreenCTM();
      return [b.width * Math.abs(m.a), b.height * Math.abs(m.d)]; })};
"""


def check_panel(b, label, name, new, base):
    top = b.js("return document.getElementById('queries')"
               ".getBoundingClientRect().top + window.scrollY")
    b.click(b.js(ROW_BY_NAME, name))
    eq(b.js("return document.getElementById('queries')"
            ".getBoundingClientRect().top + window.scrollY"), top,
       "%s: opening %r does not move the table" % (label, name))
    h = b.js(READ_HIST)
    want = []
    for side, q in (("new", new), ("base", base)):
        if q is not None:
            want += [["pl " + side, p, q[p + "_ns"]] for p in ("p50", "p90", "p99")]
    eq(sorted(h["pl"]), sorted(want),
       "%s: %r: a dashed line at each run's p50/p90/p99" % (label, name))
    eq(h["xt"], ["latency (log scale)", "invocations (log scale)"],
       "%s: %r: both axes titled" % (label, name))
    check(h["xl"] >= 2 and h["yl"][:2] == ["1", "10"],
          "%s: %r: labelled log axes (%d latency ticks, counts %s)" %
          (label, name, h["xl"], h["yl"]))
    # Hairline bars (the issue) fail here: every bar drawn at least
    # 1.5 px wide and 1.5 px tall on screen, and there are bars to measure.
    minw = min([w for w, _ in h["bars"]] or [0])
    minh = min([t for _, t in h["bars"]] or [0])
    check(minw >= 1.49 and minh >= 1.49,
          "%s: %r: %d bars, each at least 1.5 px wide and tall on screen "
          "(narrowest %.2f px, lowest %.2f px)" %
          (label, name, len(h["bars"]), minw, minh))
    p = b.js(READ_PANEL)
    eq((p["hidden"], p["name"]), (False, name),
       "%s: click %r: its panel opens" % (label, name))
    for side, q in (("new", new), ("base", base)):
        if q is None:
            eq(p["bars"][side], [], "%s: %r: no %s bars" % (label, name, side))
            continue
        eq(sum(c for _, c in p["bars"][side]), q["count"],
           "%s: %r %s histogram bars sum to its count" % (label, name, side))
        eq(sorted(p["bars"][side]),
           sorted([h["lo_ns"], h["count"]] for h in q["hist"]),
           "%s: %r %s bars are its histogram's buckets" % (label, name, side))
        k = "n" if side == "new" else "b"
        for stat, key in (("count", "count"), ("min", "min_ns"),
                          ("p50", "p50_ns"), ("p90", "p90_ns"),
                          ("p99", "p99_ns"), ("max", "max_ns")):
            got = p["stats"].get(k + "." + stat)
            want = q[key]
            eq(got, [want, str(want) if stat == "count" else fmt_ns(want)],
               "%s: %r %s %s in the panel" % (label, name, side, stat))


def check_deltas(label, shown, base, new):
    """Each delta cell against the two runs' figures; returns the classes."""
    classes = {}
    for name in sorted(set(base) | set(new)):
        r = shown.get(name)
        if not r:
            continue
        for col, key, ns in (("d_self", "self_ns", True),
                             ("d_total", "total_ns", True),
                             ("d_count", "count", False)):
            b = base[name][key] if name in base else 0
            n = new[name][key] if name in new else 0
            fmt = fmt_ns if ns else str
            cls = delta_class(b, n, 1000 if ns else 1)
            title = "from %s -> to %s" % (fmt(b), fmt(n))
            mag = abs(n - b)
            text = ("" if not mag else "-" if n < b else "+") + fmt(mag)
            if b:
                pct = (float(n) - float(b)) * 100.0 / b
                ptext = "0.00%" if abs(pct) < 0.005 else "%+.2f%%" % pct
            else:
                ptext = "new" if n else "-"
            a, pc = r[col], r[col + "_pct"]
            eq((a["base"], a["new"], a["text"], a["cls"], a["title"]),
               (str(b), str(n), text, "d " + cls, title),
               "%s: %r %s change" % (label, name, key))
            eq((pc["text"], pc["cls"], pc["title"]),
               (ptext, "d " + cls, title),
               "%s: %r %s change %%" % (label, name, key))
            classes[(name, key)] = cls
    return classes


# A frame's name from its title, "NAME: TOTAL, self SELF (P% of all)": its
# label may be cut to fit the frame (check_flame_labels()).
READ_FLAME = """
function walk(g, path, out) {
  var t = g.querySelector(':scope > title').textContent;
  var p = path.concat([t.replace(/: [^:]*, self [^:]*\\([^(]*% of all\\)$/, '')]);
  out.push([p.join(';'), Number(g.getAttribute('data-total')),
            Number(g.getAttribute('data-self'))]);
  Array.prototype.forEach.call(g.querySelectorAll(':scope > g.fr'),
    function (c) { walk(c, p, out); });
}
var out = [], root = document.querySelector('#flame svg > g.fr');
if (root)
  walk(root, [], out);
return out;
"""

# Each icicle frame: its name (title), its label, the label's rendered
# width and the frame's, in the icicle's units.
READ_LABELS = """
return Array.prototype.map.call(document.querySelectorAll('#flame g.fr'),
  function (g) {
    var t = g.querySelector(':scope > svg > text');
    return [g.querySelector(':scope > title').textContent
              .replace(/: [^:]*, self [^:]*\\([^(]*% of all\\)$/, ''),
            t.textContent, t.getComputedTextLength(),
            Number(g.querySelector(':scope > rect').getAttribute('width'))];
  });
"""

# Where the thread timeline's first bar starts, over its width (0..1).
READ_FIRST_BAR = """
var xs = Array.prototype.map.call(document.querySelectorAll('#threads rect.sl'),
  function (r) { return Number(r.getAttribute('x')); });
return xs.length ? (Math.min.apply(null, xs) - 170) / 1000 : null;
"""

READ_LANES = """
return Array.prototype.map.call(document.querySelectorAll('#threads g.lane'),
  function (g) {
    return [Number(g.getAttribute('data-tid')), Number(g.getAttribute('data-n')),
            Number(g.getAttribute('data-busy')),
            g.querySelector(':scope > text').firstChild.textContent,
            g.querySelectorAll('rect.sl').length];
  });
"""


def check_trace_sections(b, label, truth, summary, iterations):
    """The icicle and the thread timeline of a trace file against the host's
    own clock: outer's frame is outer's total time, inner's (only ever
    inside outer) inner's, the blocked frame the time the host spent
    blocked; one lane per worker, each with its outermost queries."""
    fl = {path: (tot, self_) for path, tot, self_ in b.js(READ_FLAME)}
    root = fl.get("all threads")
    eq(root and root[0], summary["total_self_ns"],
       "%s: icicle root is all the self time" % label)
    for path, key, q in (("all threads;outer", "total_ns", "outer"),
                         ("all threads;outer;inner", "total_ns", "inner"),
                         ("all threads;outer;shared [blocked]", "total_ns",
                          "shared"),
                         ("all threads;outer;codegen [incr]", "total_ns",
                          "codegen")):
        got = fl.get(path)
        check(got is not None, "%s: icicle has %s" % (label, path))
        if got:
            close(got[0], truth[key][q], "%s: icicle %s width (host clock)" %
                  (label, path))
    check("all threads;recurse;recurse;recurse" in fl,
          "%s: icicle shows recursion 3 deep" % label)
    # Labels fit their frames (issue 25: "persis", "o", "ty"): the whole
    # name, or a cut one ending in "..." with a character before it, or
    # none on a frame too narrow for that; drawn inside the frame.
    bad = [(n, t, round(tw, 1), round(w, 1))
           for n, t, tw, w in b.js(READ_LABELS)
           if not (t == display(n) or
                   (t.endswith("...") and len(t) >= 4 and
                    display(n).startswith(t[:-3])) or
                   (t == "" and w < 6 + 4 * 7)) or (t and tw > w - 3)]
    eq(bad, [], "%s: every icicle label whole, cut with ..., or none on a "
       "narrow frame, and inside its frame" % label)
    # The timeline spans the run from when counting was armed: the first
    # bar near its left end, not in the rightmost part after the BPF load
    # (issue 25). In its first quarter: before the first bar lie the host's
    # exec and start-up, 0.12 of the run for an ASan build where a system
    # call costs ~1 us (a CI run).
    first = b.js(READ_FIRST_BAR)
    check(first is not None and first < 0.25, "%s: the thread timeline's "
          "first bar starts in its first quarter (at %s)" % (label, first))
    lanes = b.js(READ_LANES)
    eq(len(lanes), truth["threads"], "%s: one lane per worker thread" % label)
    for tid, n, busy, text, nrect in lanes:
        eq(n, 2 * (iterations + 1), "%s: thread %d: its outermost queries "
           "(outer and recurse, warm round too)" % (label, tid))
        check("gt-worker" in text, "%s: lane named after the thread: %r" %
              (label, text))
        check(truth["total_ns"]["outer"] <= busy <= summary["duration_ns"]
              and nrect >= 1, "%s: thread %d busy %d ns: at least the host's "
              "outer time, at most the run, %d bars" % (label, tid, busy, nrect))


def test_compare(b):
    """Base: 5 iterations (live JSON). Run: 40 iterations (a recorded
    trace): outer and its children run 8 times as often (up; and down
    with the two runs swapped), the warm-up round runs once in both
    (its count neutral). One thread each: the machine is shared, and
    8 times the work stays more time whatever the load."""
    p, base = trace_json(["--", GT, "--threads", "1", "5"])
    eq(p.returncode, 0, "base run: exit 0")
    spt = tmp(".spt")
    p = run([SPTRACE, "record", "-o", spt, "--", GT, "--threads", "1", "40"])
    eq(p.returncode, 0, "recorded run: exit 0 (%s)" % p.stderr.strip()[:200])
    truth = host_truth(p.stdout)
    p, new = trace_json([spt], cmd="summarize")
    if base is None or new is None:
        check(False, "both runs have a JSON summary")
        return
    bjson = tmp(".json")
    with open(bjson, "w") as f:
        json.dump(base, f)
    eq(rows(new)["outer"]["count"], 40, "run: outer count (ground truth)")
    eq(rows(base)["outer"]["count"], 5, "base: outer count (ground truth)")

    # The run alone first: figures, sorting, one query's histogram.
    alone = report([spt], "report of a trace file")
    eq(os.stat(alone).st_mode & 0o777, 0o600, "report file is 0600")
    p = run([SPTRACE, "report", "-o", alone, spt])
    check(p.returncode != 0 and "exists" in p.stderr,
          "report refuses to overwrite without --force")
    b.get("file://" + alone)
    check(b.js("return document.querySelector('meta[http-equiv="
               "\"Content-Security-Policy\"]').content.indexOf("
               "\"default-src 'none'\") === 0"),
          "CSP meta forbids every fetch")
    t, shown = read_table(b)
    eq([c["key"] for c in t["cols"]],
       ["name", "count", "self", "self_pct", "total", "cache_hits", "blocked",
        "incr_load", "p50", "p90", "p99", "max"], "columns")
    tot = t["rows"][0]
    eq((tot["name"]["text"], int(tot["count"]["v"]), int(tot["self"]["v"])),
       ("Total", sum(q["count"] for q in new["queries"]), new["total_self_ns"]),
       "Total row first: count and self time summed")
    check_figures("run", shown, rows(new))
    check_initial_order(b, "run", False)
    check_fits(b, "run")
    check_undefined("run", shown, rows(new))
    check_trace_sections(b, "run", truth, new, 40)
    check_sorting(b, "run", initial="self")
    check_panel(b, "run", "inner", rows(new)["inner"], None)
    eq(b.js("return performance.getEntriesByType('resource').length"), 0,
       "run: no resource loaded")
    n = b.screenshot(os.path.join(ARTIFACTS, "report-run.png"))
    check(n > 1000, "screenshot report-run.png (%d bytes)" % n)

    # Compared with the base.
    cmp_ = report([spt, "--base", bjson], "report with --base")
    b.get("file://" + cmp_)
    t, shown = read_table(b)
    check_figures("compare", {k: v for k, v in shown.items()
                              if k in rows(new)}, rows(new))
    check_initial_order(b, "compare", True)
    check_fits(b, "compare")
    check_undefined("compare", shown, rows(new))
    cls = check_deltas("compare", shown, rows(base), rows(new))
    eq(cls.get(("outer", "count")), "up", "outer count 5 -> 40: up")
    eq(cls.get(("outer", "self_ns")), "up", "outer self time x8: up")
    eq(cls.get(("warm_outer", "count")), "neutral",
       "warm_outer count 1 -> 1: neutral")
    eq(cls.get(("shared", "count")), "neutral", "shared count 0 -> 0: neutral")
    tot = t["rows"][0]
    eq((tot["d_count"]["base"], tot["d_count"]["new"]),
       (str(sum(q["count"] for q in base["queries"])),
        str(sum(q["count"] for q in new["queries"]))), "Total count change")
    check_sorting(b, "compare")
    th = b.find('#queries thead th[data-col="d_self_pct"]')
    b.click(th)
    t, _ = read_table(b)
    vals = [float(r["d_self_pct"]["v"]) for r in t["rows"][1:]]
    check(vals == sorted(vals, reverse=True), "sort by self change %%: %s" % vals)
    check_panel(b, "compare", "inner", rows(new)["inner"], rows(base)["inner"])
    check_panel(b, "compare", "warm_outer", rows(new)["warm_outer"],
                rows(base)["warm_outer"])
    n = b.screenshot(os.path.join(ARTIFACTS, "report-compare.png"))
    check(n > 1000, "screenshot report-compare.png (%d bytes)" % n)

    # The other way round: the 40-iteration trace as the base.
    swapped = report([bjson, "--base", spt], "report of the swapped runs")
    b.get("file://" + swapped)
    _, shown = read_table(b)
    check_fits(b, "swapped")
    eq(b.js("return [document.getElementById('flame'), "
            "document.getElementById('threads')]"), [None, None],
       "swapped: a JSON run has no stacks or threads to draw")
    cls = check_deltas("swapped", shown, rows(new), rows(base))
    eq(cls.get(("outer", "count")), "down", "outer count 40 -> 5: down")
    eq(cls.get(("outer", "self_ns")), "down", "outer self time /8: down")
    eq(cls.get(("warm_outer", "count")), "neutral",
       "warm_outer count 1 -> 1: neutral")

    # The same two runs from the history database: the same page.
    db = tmp(".db")
    p = run([SPTRACE, "import", "--db", db, bjson, spt])
    eq(p.returncode, 0, "import both runs (%s)" % p.stderr.strip()[:200])
    from_db = report(["--db", db, "latest", "--base", "latest~1"],
                     "report --db")

    def body(path):
        """The table, the panel and the data; a trace file's stacks and
        threads are only in the file's report."""
        with open(path, encoding="utf-8") as f:
            html = f.read()
        html = html[html.index('<table id="queries">'):]
        for sec in ("flame", "threads"):
            if '<section id="%s">' % sec in html:
                a = html.index('<section id="%s">' % sec)
                html = html[:a] + html[html.index("</section>\n", a) + 11:]
        return html
    check(body(from_db) == body(cmp_),
          "report --db latest --base latest~1: the same table and data as "
          "from the files")
    with open(from_db, encoding="utf-8") as f:
        check(db in f.read(), "report --db names the database run")


class Catcher(http.server.BaseHTTPRequestHandler):
    hits = []

    def do_GET(self):
        Catcher.hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def display(name):
    """The display form of a name, as the terminal table and the page show
    it (common/text.h, text__display()): controls, DEL, C1, bidi and line
    separators as \\xHH per byte, a backslash doubled."""
    out = []
    for ch in name:
        c = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif (c < 0x20 or 0x7f <= c <= 0x9f or c in (0x61c, 0x200e, 0x200f)
              or 0x2028 <= c <= 0x202e or 0x2066 <= c <= 0x2069):
            out.append("".join("\\x%02x" % x for x in ch.encode()))
        else:
            out.append(ch)
    return "".join(out)


def test_hostile(b):
    p, base = trace_json(["--", HOSTILE])
    eq(p.returncode, 0, "hostile run: exit 0")
    if base is None:
        return
    # The run: one name made a script/markup payload, one more row named
    # with every HTML-special character (a JSON summary may come from
    # anywhere).
    new = json.loads(json.dumps(base))
    ok = [q for q in new["queries"] if q["name"] == "ok"][0]
    ok2 = dict(ok, name="\"'&<>")
    ok["name"] = PAYLOAD
    new["queries"].append(ok2)
    new["total_self_ns"] += ok2["self_ns"]
    bj, nj = tmp(".json"), tmp(".json")
    for path, data in ((bj, base), (nj, new)):
        with open(path, "w") as f:
            json.dump(data, f)
    page = report([nj, "--base", bj, "--title", PAYLOAD], "hostile report")

    srv = http.server.HTTPServer(("127.0.0.1", 0), Catcher)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        b.get("file://" + page)
        names = {display(n) for n in set(rows(new)) | set(rows(base))}
        t, shown = read_table(b)
        eq(sorted(shown), sorted(names),
           "hostile: every name in the table in the terminal's display form, "
           "no raw control (%d names)" % len(names))
        for name, q in rows(new).items():
            if display(name) in shown:
                eq(int(shown[display(name)]["count"]["v"]), q["count"],
                   "hostile: %r count" % name)
        eq(b.js("return document.title"), PAYLOAD, "hostile: title literal")
        b.click(b.js(ROW_BY_NAME, PAYLOAD))
        eq(b.js("return document.getElementById('panel-name').textContent"),
           PAYLOAD, "hostile: payload literal in the panel")
        b.click(b.js(ROW_BY_NAME, display("new\nline")))
        eq(b.js("return [typeof window.__pwned, document.images.length, "
                "document.scripts.length, document.querySelectorAll("
                "'[onerror]').length]"), ["undefined", 0, 2, 0],
           "hostile: nothing ran, no element injected")
        n = b.screenshot(os.path.join(ARTIFACTS, "report-hostile.png"))
        check(n > 1000, "screenshot report-hostile.png (%d bytes)" % n)
        # The policy holds: a fetch the page's own script would make is
        # refused, and the server sees nothing.
        url = "http://127.0.0.1:%d/leak" % srv.server_address[1]
        b.js("window.__csp = 0; document.addEventListener("
             "'securitypolicyviolation', function () { window.__csp++; });"
             "var i = document.createElement('img'); i.src = arguments[0];"
             "document.body.appendChild(i); fetch(arguments[0]).catch("
             "function () {});", url)
        for _ in range(50):
            if b.js("return window.__csp") >= 2:
                break
            time.sleep(0.1)
        n = b.js("return window.__csp")
        check(n >= 2, "CSP blocks an image and a fetch (%d violations)" % n)
        eq(Catcher.hits, [], "the local server received no request")
        eq(b.js("return performance.getEntriesByType('resource')"
                ".filter(function (e) { return e.transferSize > 0; }).length"),
           0, "hostile: nothing transferred")
    finally:
        srv.shutdown()
        srv.server_close()


def test_memory(b):
    """The timeline of a real `sptrace mem --interval` run as a chart:
    one polyline point per timeline point, peaks as in the JSON."""
    mem = tmp(".json")
    p = run([SPTRACE, "mem", "--interval", "2", "--no-stacks", "-f", "json",
             "-o", mem, "--", MEM_LIBC, "loop", "300000"])
    eq(p.returncode, 0, "mem --interval: exit 0 (%s)" % p.stderr.strip()[:200])
    with open(mem) as f:
        tl = json.load(f).get("timeline", [])
    check(len(tl) >= 2, "mem run has a timeline (%d points)" % len(tl))
    p, runj = trace_json(["--", GT, "--threads", "1", "3"])
    rj = tmp(".json")
    with open(rj, "w") as f:
        json.dump(runj, f)
    page = report([rj, "--mem", mem], "report --mem")
    b.get("file://" + page)
    lines = b.js("""
return Array.prototype.map.call(
  document.querySelectorAll('#memory svg polyline'), function (l) {
    return [l.getAttribute('class'), l.points.numberOfItems,
            Number(l.getAttribute('data-peak'))];
  });""")
    peak = {k: max(pt[f] for pt in tl) for k, f in
            (("s-rss", "rss_bytes"), ("s-heap", "heap_live_bytes"),
             ("s-typed", "typed_live_bytes"))}
    want = [[k, len(tl), peak[k]] for k in ("s-rss", "s-heap", "s-typed")
            if peak[k]]
    eq(lines, want, "timeline chart: a line per series with data, a point "
       "per timeline point, the JSON's peaks")
    check(any(k == "s-rss" for k, _, _ in lines), "timeline chart: RSS drawn")
    # On a linear axis the heap line (KiB) sits on zero beside RSS (MiB):
    # every series' peak must stand in the upper half of the plot.
    tops = b.js("""
return Array.prototype.map.call(document.querySelectorAll('#memory polyline'),
    function (l) {
  var base = Number(l.ownerSVGElement.querySelector('line.axis')
                     .getAttribute('y1')), m = Infinity;
  for (var i = 0; i < l.points.numberOfItems; i++)
    m = Math.min(m, l.points.getItem(i).y);
  return [l.getAttribute('class'), (base - m) / (base - 12)];
});""")
    check(all(h > 0.5 for _, h in tops),
          "timeline chart: each series' peak in the upper half (own axis): %r"
          % tops)
    eq(len(read_table(b)[1]), len(runj["queries"]),
       "report --mem: the run's queries too")
    n = b.screenshot(os.path.join(ARTIFACTS, "report-memory.png"))
    check(n > 1000, "screenshot report-memory.png (%d bytes)" % n)
    # Only the memory run: its chart, no queries.
    page = report(["--mem", mem], "report --mem alone")
    b.get("file://" + page)
    eq(b.js("return [document.querySelectorAll('#memory polyline').length > 0,"
            " document.getElementById('rows').rows.length]"), [True, 0],
       "report --mem alone: chart and an empty table")
    # The same timeline stored by `mem --db` and drawn by `report --db`: the
    # chart has one point per row of the database's mem_timeline table.
    db = tmp(".db")
    p = run([SPTRACE, "mem", "--interval", "2", "--no-stacks", "--db", db,
             "-o", tmp(".txt"), "--", MEM_LIBC, "loop", "300000"])
    eq(p.returncode, 0, "mem --db: exit 0 (%s)" % p.stderr.strip()[:200])
    q = run(["sqlite3", db, "SELECT count(*) FROM mem_timeline"])
    npoints = int(q.stdout.strip() or 0)
    check(npoints >= 2, "mem --db stored a timeline (%d points)" % npoints)
    page = report(["--db", db, "latest"], "report --db of a mem run")
    b.get("file://" + page)
    got = b.js("""
return Array.prototype.map.call(
  document.querySelectorAll('#memory svg polyline'), function (l) {
    return [l.getAttribute('class'), l.points.numberOfItems];
  });""")
    check(any(k == "s-rss" for k, _ in got) and
          all(n == npoints for _, n in got),
          "report --db: the stored timeline as a chart, a point per stored "
          "point (%r, %d points)" % (got, npoints))
    p = run([SPTRACE, "report", "-o", tmp(".html"), rj, "--mem", rj])
    check(p.returncode == 1 and "no memory timeline" in p.stderr,
          "report --mem of a file without a timeline: error (%s)" %
          p.stderr.strip())


try:
    with webdriver.Browser(width=1400) as browser:
        test_compare(browser)
        test_hostile(browser)
        test_memory(browser)
except webdriver.WebDriverError as e:
    check(False, "WebDriver: %s" % e)
finally:
    for path in _cleanup:
        if os.path.exists(path):
            os.unlink(path)
finish()
