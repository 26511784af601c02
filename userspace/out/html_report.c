// SPDX-License-Identifier: MIT
/*
 * The HTML report (html_report.h): one file that works offline, forever.
 * Everything is inline and a Content-Security-Policy forbids any fetch, so
 * opening a report from an untrusted run cannot reach the network.
 *
 * Names never reach a script: the table rows are written here with HTML
 * escaping, and the <script type="application/json"> block that the page's
 * script reads holds only numbers and labels this file formats (durations,
 * bucket bounds), so no name can close the script element or run as code.
 * The page's script copies a name into the query panel with textContent.
 *
 * With a base run the rows are diff__build()'s join (queries matched by
 * their name as JSON writes it); each side's rows of one name are merged
 * into a summary of their own so that a query's histogram and percentiles
 * come from the same summary arithmetic as everywhere else.
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "html_report.h"
#include "html_trace.h"
#include "html_verdicts.h"
#include "json_writer.h"
#include "mem_writer.h"
#include "text.h"

#ifndef SPTRACE_VERSION
#define SPTRACE_VERSION "unknown"
#endif

/* Room for any text__fmt_ns() result. */
#define NS_BUF 24

static const char css[] =
	"body { font: 14px/1.4 system-ui, sans-serif; margin: 1em; color: #222; }\n"
	"h1 { font-size: 1.4em; margin: 0 0 .3em; }\n"
	"h2 { font-size: 1.15em; margin: 1.2em 0 .4em; }\n"
	".meta { margin: 0 0 1em; color: #444; }\n"
	".meta div { margin: .1em 0; }\n"
	".warn { color: #8a4b00; }\n"
	".runname { font-family: ui-monospace, monospace; white-space: pre-wrap; }\n"
	"table { border-collapse: collapse; }\n"
	/* The table scrolls sideways inside its box, never the page, and the
	 * names stay in view while it does. */
	".tablewrap { overflow-x: auto; max-width: 100%; }\n"
	"#order { color: #444; margin: 0 0 .3em; }\n"
	"#queries { font-size: 13px; }\n"
	"#queries th, #queries td { padding: .2em .45em; border-bottom: 1px solid #ddd; white-space: nowrap; }\n"
	"#queries td { text-align: right; font-variant-numeric: tabular-nums; }\n"
	"#queries .name { position: sticky; left: 0; z-index: 1; background: #fff; box-shadow: 1px 0 0 #ddd; }\n"
	"#queries td.name { text-align: left; font-family: ui-monospace, monospace; white-space: pre; max-width: 22em; overflow: hidden; text-overflow: ellipsis; }\n"
	/* Headers wrap at their spaces ("Cache hits"): the figures, not the
	 * titles, set a column's width. */
	"#queries thead th { background: #f3f3f3; cursor: pointer; user-select: none; text-align: right; white-space: normal; vertical-align: bottom; }\n"
	"#queries thead th.name { text-align: left; z-index: 2; }\n"
	"#queries thead th:hover, #queries thead th:focus { background: #e2e8f0; }\n"
	"#queries thead th[aria-sort] { background: #dbe6f5; }\n"
	/* Empty unless sorted: it keeps no room that would wrap a title. */
	".ind { color: #1a56a6; margin-left: .15em; }\n"
	"tbody.total td { font-weight: 600; background: #fafafa; border-bottom: 2px solid #999; }\n"
	"#rows tr { cursor: pointer; }\n"
	"#rows tr:hover td { background: #f5f8fc; }\n"
	"#rows tr[aria-selected=true] td { background: #e6effa; }\n"
	"td.d.up { color: #b3261e; background: #fdecea; }\n"
	"td.d.down { color: #1b6e20; background: #e8f5e9; }\n"
	"td.d.neutral { color: #777; }\n"
	"#queries thead th.d { background: #eaeaf4; }\n"
	"#panel { border: 1px solid #bcc8d8; border-radius: 4px; padding: .6em 1em; margin: 1em 0; background: #fcfdff; }\n"
	"#panel h2 { font-size: 1.1em; margin: 0 0 .4em; }\n"
	"#panel-name { font-family: ui-monospace, monospace; white-space: pre-wrap; }\n"
	"#panel-stats th, #panel-stats td { padding: .15em .6em; text-align: right; }\n"
	"#panel-close { float: right; }\n"
	"svg text { font: 11px system-ui, sans-serif; fill: #333; }\n"
	"svg .axis { stroke: #888; stroke-width: 1; }\n"
	"svg .grid { stroke: #eee; stroke-width: 1; }\n"
	"svg .xl, svg .xt { text-anchor: middle; }\n"
	"svg .yl { text-anchor: end; }\n"
	"svg .yt { text-anchor: middle; }\n"
	"svg .bar.new { fill: #3b73c4; fill-opacity: .85; }\n"
	"svg .bar.base { fill: #f0a030; fill-opacity: .85; }\n"
	"svg .pl { stroke-dasharray: 4 3; stroke-width: 1.5; }\n"
	"svg .pl.new { stroke: #1a3f7a; } svg .pt.new { fill: #1a3f7a; }\n"
	"svg .pl.base { stroke: #b35f00; } svg .pt.base { fill: #b35f00; }\n"
	".legend span { display: inline-block; margin-right: 1.2em; }\n"
	".key { display: inline-block; width: .9em; height: .9em; vertical-align: middle; margin-right: .3em; }\n"
	".k-new { background: #3b73c4; } .k-base { background: #f0a030; }\n"
	"svg .s-rss { stroke: #3b73c4; } svg .s-heap { stroke: #c0392b; } svg .s-typed { stroke: #27ae60; }\n"
	"svg polyline { fill: none; stroke-width: 1.5; }\n"
	".k-rss { background: #3b73c4; } .k-heap { background: #c0392b; } .k-typed { background: #27ae60; }\n"
	"svg.icicle, svg.threads { width: 100%; height: auto; }\n"
	"svg .fr > rect { stroke: #fff; stroke-width: .5; }\n"
	"svg .fr.k0 > rect { fill: #f2b66d; } svg .fr.k1 > rect { fill: #eb9a4f; } svg .fr.k2 > rect { fill: #f5cf8a; } svg .fr.k3 > rect { fill: #e68a3c; }\n"
	"svg .fr.root > rect { fill: #ccc; }\n"
	/* Monospace: html_trace.c fits each label to its frame by cells. */
	"svg .fr text { font: 11px ui-monospace, monospace; }\n"
	"svg .lane text { font-size: 11px; }\n"
	"svg .sl { fill: #3b73c4; fill-opacity: .8; }\n"
	"svg .sl:nth-of-type(2n) { fill: #6b93d4; }\n"
	"footer { margin-top: 2em; color: #777; font-size: .9em; }\n";

static const char script[] =
	"(function () {\n"
	"'use strict';\n"
	"var data = JSON.parse(document.getElementById('sp-data').textContent);\n"
	"var table = document.getElementById('queries');\n"
	"var head = table.tHead.rows[0].cells;\n"
	"var body = document.getElementById('rows');\n"
	"var panel = document.getElementById('panel');\n"
	"var order = document.getElementById('order');\n"
	"/* The order the file wrote the rows in: the column marked aria-sort, if\n"
	" * any (the caption says what it is otherwise). */\n"
	"var sorted = -1, dir = 0, i;\n"
	"\n"
	"for (i = 0; i < head.length; i++)\n"
	"	if (head[i].hasAttribute('aria-sort')) {\n"
	"		sorted = i;\n"
	"		dir = head[i].getAttribute('aria-sort') === 'descending' ? -1 : 1;\n"
	"	}\n"
	"\n"
	"function val(td, num) {\n"
	"	return num ? parseFloat(td.getAttribute('data-v')) : td.textContent;\n"
	"}\n"
	"\n"
	"/* Numbers sort descending first, names ascending; a second click turns\n"
	" * the order round. Ties keep the file's order. */\n"
	"function sortBy(c) {\n"
	"	var th = head[c], num = th.getAttribute('data-type') === 'num';\n"
	"	var d = c === sorted ? -dir : (num ? -1 : 1);\n"
	"	var rows = Array.prototype.slice.call(body.rows);\n"
	"	var i;\n"
	"\n"
	"	rows.sort(function (a, b) {\n"
	"		var x = val(a.cells[c], num), y = val(b.cells[c], num);\n"
	"		if (x < y)\n"
	"			return -d;\n"
	"		if (x > y)\n"
	"			return d;\n"
	"		return a.getAttribute('data-i') - b.getAttribute('data-i');\n"
	"	});\n"
	"	rows.forEach(function (r) { body.appendChild(r); });\n"
	"	for (i = 0; i < head.length; i++) {\n"
	"		head[i].removeAttribute('aria-sort');\n"
	"		head[i].querySelector('.ind').textContent = '';\n"
	"	}\n"
	"	th.setAttribute('aria-sort', d < 0 ? 'descending' : 'ascending');\n"
	"	th.querySelector('.ind').textContent = d < 0 ? '\\u25bc' : '\\u25b2';\n"
	"	order.textContent = 'Rows by ' + th.getAttribute('data-title') + ', ' +\n"
	"		(num ? (d < 0 ? 'largest first' : 'smallest first') :\n"
	"		 (d < 0 ? 'Z to A' : 'A to Z')) +\n"
	"		'; click a column to sort, a query for its histogram.';\n"
	"	sorted = c;\n"
	"	dir = d;\n"
	"}\n"
	"\n"
	"function el(tag, cls, text) {\n"
	"	var e = document.createElement(tag);\n"
	"	if (cls)\n"
	"		e.className = cls;\n"
	"	if (text !== undefined)\n"
	"		e.textContent = text;\n"
	"	return e;\n"
	"}\n"
	"\n"
	"/* The label of m * 10^k ns: \"2ms\", \"50us\", \"100s\". */\n"
	"function tick(m, k) {\n"
	"	var u = ['ns', 'us', 'ms', 's'];\n"
	"	return k < 9 ? m * Math.pow(10, k % 3) + u[Math.floor(k / 3)] :\n"
	"		m * Math.pow(10, k - 9) + 's';\n"
	"}\n"
	"\n"
	"function lg(v) {\n"
	"	return Math.log(Math.max(v, 1)) / Math.LN10;\n"
	"}\n"
	"\n"
	"/* The histogram as SVG markup: numbers and our own labels only, never a\n"
	" * name. Both axes are logarithmic: latency buckets are 3% wide whatever\n"
	" * their size, and a bucket of 1 must show beside one of 100,000. */\n"
	"function histSvg(n, b) {\n"
	"	var W = 760, H = 280, L = 64, R = 16, T = 40, B = 46;\n"
	"	var all = (n ? n.bins : []).concat(b ? b.bins : []);\n"
	"	var lo = Infinity, hi = 0, top = 0, bw = Infinity, s, k, d0, d1, ytop;\n"
	"\n"
	"	if (!all.length)\n"
	"		return '<p class=\"empty\">No completed invocations.</p>';\n"
	"	all.forEach(function (x) {\n"
	"		lo = Math.min(lo, x[0]);\n"
	"		hi = Math.max(hi, x[1]);\n"
	"		top = Math.max(top, x[2]);\n"
	"		if (x[0] >= 64)\n"
	"			bw = Math.min(bw, lg(x[1]) - lg(x[0]));\n"
	"	});\n"
	"	if (!isFinite(bw))\n"
	"		bw = 0.0128;\n"
	"	/* At least 24 buckets across, so a bar is a bar and not a hairline;\n"
	"	 * and at least 0.72 decade, so two ticks at least: ticks at 1, 2\n"
	"	 * and 5 times powers of ten, powers only when wide. */\n"
	"	d0 = lg(lo);\n"
	"	d1 = lg(hi);\n"
	"	k = Math.max(2 * bw, (Math.max(24 * bw, 0.72) - (d1 - d0)) / 2);\n"
	"	d0 -= k;\n"
	"	d1 += k;\n"
	"	/* Counts from 0.5 (the baseline) to the next power of ten. */\n"
	"	ytop = Math.max(1, Math.ceil(lg(top) + 1e-9));\n"
	"	function X(v) { return L + (lg(v) - d0) / (d1 - d0) * (W - L - R); }\n"
	"	function Y(c) {\n"
	"		return T + (H - T - B) * (1 - (Math.log(c) / Math.LN10 + 0.30103) /\n"
	"					  (ytop + 0.30103));\n"
	"	}\n"
	"	s = '<svg class=\"hist\" viewBox=\"0 0 ' + W + ' ' + H + '\" width=\"' + W +\n"
	"		'\" height=\"' + H + '\" role=\"img\" aria-label=\"latency histogram\">';\n"
	"	for (k = 0; k <= ytop; k++) {\n"
	"		var y = Y(Math.pow(10, k)).toFixed(1);\n"
	"		s += '<line class=\"grid\" x1=\"' + L + '\" y1=\"' + y + '\" x2=\"' + (W - R) +\n"
	"			'\" y2=\"' + y + '\"/><text class=\"yl\" x=\"' + (L - 6) + '\" y=\"' +\n"
	"			(+y + 4) + '\">' + Math.pow(10, k) + '</text>';\n"
	"	}\n"
	"	s += '<line class=\"axis\" x1=\"' + L + '\" y1=\"' + (H - B) + '\" x2=\"' +\n"
	"		(W - R) + '\" y2=\"' + (H - B) + '\"/>';\n"
	"	s += '<line class=\"axis\" x1=\"' + L + '\" y1=\"' + T + '\" x2=\"' + L +\n"
	"		'\" y2=\"' + (H - B) + '\"/>';\n"
	"	for (k = Math.floor(d0); k <= Math.ceil(d1); k++) {\n"
	"		(d1 - d0 > 3 ? [1] : [1, 2, 5]).forEach(function (m) {\n"
	"			var v = m * Math.pow(10, k), x;\n"
	"			if (lg(v) < d0 || lg(v) > d1)\n"
	"				return;\n"
	"			x = X(v).toFixed(1);\n"
	"			s += '<line class=\"axis\" x1=\"' + x + '\" y1=\"' + (H - B) +\n"
	"				'\" x2=\"' + x + '\" y2=\"' + (H - B + 5) +\n"
	"				'\"/><text class=\"xl\" x=\"' + x + '\" y=\"' + (H - B + 18) +\n"
	"				'\">' + tick(m, k) + '</text>';\n"
	"		});\n"
	"	}\n"
	"	s += '<text class=\"xt\" x=\"' + ((L + W - R) / 2) + '\" y=\"' + (H - 6) +\n"
	"		'\">latency (log scale)</text><text class=\"yt\" transform=\"translate(14 ' +\n"
	"		((T + H - B) / 2) + ') rotate(-90)\">invocations (log scale)</text>';\n"
	"	/* With both runs, each bucket is split: base left, run right. */\n"
	"	function bars(side, cls, half) {\n"
	"		side.bins.forEach(function (x) {\n"
	"			var x0 = X(x[0]), w = Math.max(X(x[1]) - x0 - 1, 3), y = Y(x[2]);\n"
	"			if (half) {\n"
	"				w /= 2;\n"
	"				if (cls === 'new')\n"
	"					x0 += w;\n"
	"			}\n"
	"			s += '<rect class=\"bar ' + cls + '\" x=\"' + x0.toFixed(2) +\n"
	"				'\" y=\"' + y.toFixed(2) + '\" width=\"' + w.toFixed(2) +\n"
	"				'\" height=\"' + (H - B - y).toFixed(2) + '\" data-count=\"' +\n"
	"				x[2] + '\" data-lo=\"' + x[0] + '\" data-hi=\"' + x[1] +\n"
	"				'\"><title>' + x[3] + ' to ' + x[4] + ': ' + x[2] +\n"
	"				(cls === 'base' ? ' (base)' : '') + '</title></rect>';\n"
	"		});\n"
	"	}\n"
	"	/* Each run's p50, p90 and p99 as dashed lines in its colour, labelled\n"
	"	 * above the plot: the run's to the right of its line, the base's to\n"
	"	 * the left, one row per percentile. */\n"
	"	function pcts(side, cls) {\n"
	"		['p50', 'p90', 'p99'].forEach(function (p, i) {\n"
	"			var v = side.st[i + 1][0], x = X(v);\n"
	"			s += '<line class=\"pl ' + cls + '\" data-p=\"' + p + '\" data-v=\"' + v +\n"
	"				'\" x1=\"' + x.toFixed(1) + '\" y1=\"' + (T - 4) + '\" x2=\"' +\n"
	"				x.toFixed(1) + '\" y2=\"' + (H - B) + '\"><title>' +\n"
	"				(cls === 'base' ? 'base ' : '') + p + ' ' + side.st[i + 1][1] +\n"
	"				'</title></line><text class=\"pt ' + cls + '\" x=\"' +\n"
	"				(cls === 'base' ? x - 3 : x + 3).toFixed(1) + '\" y=\"' +\n"
	"				(11 * (i + 1)) + '\"' + (cls === 'base' ?\n"
	"				' text-anchor=\"end\"' : '') + '>' + p + '</text>';\n"
	"		});\n"
	"	}\n"
	"	if (b)\n"
	"		bars(b, 'base', !!n);\n"
	"	if (n)\n"
	"		bars(n, 'new', !!b);\n"
	"	if (n)\n"
	"		pcts(n, 'new');\n"
	"	if (b)\n"
	"		pcts(b, 'base');\n"
	"	return s + '</svg>';\n"
	"}\n"
	"\n"
	"var STATS = ['min', 'p50', 'p90', 'p99', 'max'];\n"
	"\n"
	"function statRow(label, side, key) {\n"
	"	var tr = el('tr');\n"
	"	tr.appendChild(el('th', '', label));\n"
	"	var td = el('td', '', side ? side.cs : '-');\n"
	"	td.setAttribute('data-side', key);\n"
	"	td.setAttribute('data-k', 'count');\n"
	"	td.setAttribute('data-v', side ? side.c : 0);\n"
	"	tr.appendChild(td);\n"
	"	STATS.forEach(function (k, i) {\n"
	"		td = el('td', '', side ? side.st[i][1] : '-');\n"
	"		td.setAttribute('data-side', key);\n"
	"		td.setAttribute('data-k', k);\n"
	"		td.setAttribute('data-v', side ? side.st[i][0] : 0);\n"
	"		tr.appendChild(td);\n"
	"	});\n"
	"	return tr;\n"
	"}\n"
	"\n"
	"/* \"Zoom\" into one query: its figures and histogram, with the base run's\n"
	" * beside them when there is one. The panel sits below the table, so\n"
	" * opening it never moves the row that was clicked. */\n"
	"function show(tr) {\n"
	"	var r = data.rows[+tr.getAttribute('data-i')];\n"
	"	var st = document.getElementById('panel-stats');\n"
	"	var hr = el('tr'), i;\n"
	"\n"
	"	if (!r)\n"
	"		return;\n"
	"	document.getElementById('panel-name').textContent = tr.cells[0].textContent;\n"
	"	while (st.firstChild)\n"
	"		st.removeChild(st.firstChild);\n"
	"	hr.appendChild(el('th', '', ''));\n"
	"	hr.appendChild(el('th', '', 'count'));\n"
	"	STATS.forEach(function (k) { hr.appendChild(el('th', '', k)); });\n"
	"	st.appendChild(hr);\n"
	"	st.appendChild(statRow(data.base ? 'run' : '', r.n, 'n'));\n"
	"	if (data.base)\n"
	"		st.appendChild(statRow('base', r.b, 'b'));\n"
	"	document.getElementById('panel-hist').innerHTML = histSvg(r.n, r.b);\n"
	"	for (i = 0; i < body.rows.length; i++)\n"
	"		body.rows[i].setAttribute('aria-selected',\n"
	"					  body.rows[i] === tr ? 'true' : 'false');\n"
	"	panel.hidden = false;\n"
	"}\n"
	"\n"
	"for (i = 0; i < head.length; i++) {\n"
	"	head[i].addEventListener('click', sortBy.bind(null, i));\n"
	"	head[i].addEventListener('keydown', function (c, e) {\n"
	"		if (e.key === 'Enter' || e.key === ' ') {\n"
	"			e.preventDefault();\n"
	"			sortBy(c);\n"
	"		}\n"
	"	}.bind(null, i));\n"
	"}\n"
	"body.addEventListener('click', function (e) {\n"
	"	var tr = e.target.closest('tr');\n"
	"	if (tr)\n"
	"		show(tr);\n"
	"});\n"
	"body.addEventListener('keydown', function (e) {\n"
	"	var tr = e.target.closest('tr');\n"
	"	if (tr && e.key === 'Enter')\n"
	"		show(tr);\n"
	"});\n"
	"document.getElementById('panel-close').addEventListener('click', function () {\n"
	"	panel.hidden = true;\n"
	"});\n"
	"})();\n";

enum html_delta html_report__delta_class(uint64_t base, uint64_t new,
					 uint64_t floor)
{
	uint64_t mag;
	bool down = diff__delta(base, new, &mag);

	if (!mag || mag < floor)
		return HTML_NEUTRAL;
	/* |new - base| >= 5% of base, without a division. */
	if (base && (double)mag * 100.0 < HTML_DELTA_PCT * (double)base)
		return HTML_NEUTRAL;
	return down ? HTML_DOWN : HTML_UP;
}

const char *html_report__delta_name(enum html_delta d)
{
	return d == HTML_UP ? "up" : d == HTML_DOWN ? "down" : "neutral";
}

/* One row of the table: a query of the run, its base-run twin, or both. */
struct hrow {
	const char *name;
	const struct sp_query_row *n, *b;	/* NULL: not in that run */
	enum diff_status status;
};

/* What the table shows, built once for both the rows and the data block. */
struct model {
	struct hrow *rows;
	unsigned int nrows;
	struct summary mn, mb;		/* with a base: each side merged by name */
	struct diff d;
	bool base;
	bool per_pid;			/* no base: rows are (name, pid) */
	struct sp_query_stats tn, tb;	/* Total row of each side */
};

/* s's rows merged by their JSON name into m (finished, sorted by name). */
static int merge_by_name(const struct summary *s, struct summary *m)
{
	unsigned int i, j;
	char *name;
	int err = 0;

	m->duration_ns = s->duration_ns;
	for (i = 0; !err && i < s->nrows; i++) {
		const struct sp_query_row *r = &s->rows[i];

		name = diff__clean_name(r->name);
		if (!name)
			return -ENOMEM;
		err = summary__add_stats(m, name, &r->st);
		for (j = 0; !err && j < r->nbins; j++)
			err = summary__add_hist(m, name, r->bins[j].bucket,
						r->bins[j].count);
		free(name);
	}
	if (err)
		return err;
	summary__finish(m);
	summary__sort(m, SORT_NAME);
	return 0;
}

static int cmp_row_name(const void *key, const void *row)
{
	return strcmp(key, ((const struct sp_query_row *)row)->name);
}

static const struct sp_query_row *find_row(const struct summary *m,
					   const char *name)
{
	return bsearch(name, m->rows, m->nrows, sizeof(*m->rows),
		       cmp_row_name);
}

static void total_add(struct sp_query_stats *t, const struct sp_query_row *r)
{
	if (!r)
		return;
	t->count += r->st.count;
	t->total_ns += r->st.total_ns;
	t->self_ns += r->st.self_ns;
	t->cache_hits += r->st.cache_hits;
	t->blocked_ns += r->st.blocked_ns;
	t->incr_load_ns += r->st.incr_load_ns;
	if (r->st.max_ns > t->max_ns)
		t->max_ns = r->st.max_ns;
}

static void model_free(struct model *m)
{
	free(m->rows);
	summary__free(&m->mn);
	summary__free(&m->mb);
	diff__free(&m->d);
}

static int model_build(struct model *m, const struct summary *s,
		       const struct summary *base)
{
	unsigned int i;
	int err;

	memset(m, 0, sizeof(*m));
	summary__init(&m->mn);
	summary__init(&m->mb);
	m->base = base != NULL;
	if (!base) {
		m->per_pid = s->per_pid;
		m->rows = calloc(s->nrows ? s->nrows : 1, sizeof(*m->rows));
		if (!m->rows)
			return -ENOMEM;
		for (i = 0; i < s->nrows; i++) {
			m->rows[i] = (struct hrow){ .name = s->rows[i].name,
						    .n = &s->rows[i] };
			total_add(&m->tn, &s->rows[i]);
		}
		m->nrows = s->nrows;
		return 0;
	}
	err = diff__build(&m->d, base, s);
	if (!err)
		err = merge_by_name(s, &m->mn);
	if (!err)
		err = merge_by_name(base, &m->mb);
	if (!err) {
		m->rows = calloc(m->d.nrows ? m->d.nrows : 1, sizeof(*m->rows));
		if (!m->rows)
			err = -ENOMEM;
	}
	if (err)
		return err;
	/* diff__build() orders rows by the size of the self-time change:
	 * what a comparison is read for first. */
	for (i = 0; i < m->d.nrows; i++) {
		struct hrow *r = &m->rows[i];

		r->name = m->d.rows[i].name;
		r->status = m->d.rows[i].status;
		r->n = find_row(&m->mn, r->name);
		r->b = find_row(&m->mb, r->name);
		total_add(&m->tn, r->n);
		total_add(&m->tb, r->b);
	}
	m->nrows = m->d.nrows;
	return 0;
}

/* ---- the table ---------------------------------------------------------- */

static void td_ns(FILE *out, uint64_t v)
{
	char buf[NS_BUF];

	text__fmt_ns(buf, sizeof(buf), v);
	fprintf(out, "<td data-v=\"%" PRIu64 "\">%s</td>", v, buf);
}

static void td_u64(FILE *out, uint64_t v)
{
	fprintf(out, "<td data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", v, v);
}

static void fmt_fig(char *buf, size_t len, uint64_t v, bool ns)
{
	if (ns)
		text__fmt_ns(buf, len, v);
	else
		snprintf(buf, len, "%" PRIu64, v);
}

/*
 * Two cells for one figure's change: the absolute change and the change in
 * percent of the base, both classed up/down/neutral and titled "from X ->
 * to Y". data-v is the signed change (sorting), data-base/data-new the
 * figures themselves.
 */
static void td_delta(FILE *out, uint64_t b, uint64_t n, bool ns)
{
	const char *cls = html_report__delta_name(html_report__delta_class(
		b, n, ns ? HTML_DELTA_FLOOR_NS : HTML_DELTA_FLOOR_COUNT));
	char fb[NS_BUF], fn[NS_BUF], fd[NS_BUF];
	uint64_t mag;
	bool down = diff__delta(b, n, &mag);
	const char *sign = !mag ? "" : down ? "-" : "+";
	double pct;

	fmt_fig(fb, sizeof(fb), b, ns);
	fmt_fig(fn, sizeof(fn), n, ns);
	fmt_fig(fd, sizeof(fd), mag, ns);
	fprintf(out, "<td class=\"d %s\" data-v=\"%s%" PRIu64 "\" data-base=\"%"
		PRIu64 "\" data-new=\"%" PRIu64 "\" title=\"from %s -&gt; to %s\">"
		"%s%s</td>", cls, down ? "-" : "", mag, b, n, fb, fn, sign, fd);
	fprintf(out, "<td class=\"d %s\" ", cls);
	if (b) {
		pct = ((double)n - (double)b) * 100.0 / (double)b;
		if (fabs(pct) < 0.005)
			pct = 0.0;
		fprintf(out, "data-v=\"%.6g\" title=\"from %s -&gt; to %s\">",
			pct, fb, fn);
		if (pct == 0.0)
			fputs("0.00%", out);
		else
			fprintf(out, "%+.2f%%", pct);
	} else {
		/* No percentage of nothing: "new" sorts above any figure. */
		fprintf(out, "data-v=\"%s\" title=\"from %s -&gt; to %s\">%s",
			n ? "1e300" : "0", fb, fn, n ? "new" : "-");
	}
	fputs("</td>", out);
}

enum col {
	C_NAME, C_COUNT, C_SELF, C_PCT, C_TOTAL, C_CACHE, C_BLOCKED, C_INCR,
	C_P50, C_P90, C_P99, C_MAX, NCOLS,
};

static const char *const col_titles[NCOLS] = {
	[C_NAME] = "Query", [C_COUNT] = "Count", [C_SELF] = "Self",
	[C_PCT] = "Self %", [C_TOTAL] = "Total", [C_CACHE] = "Cache hits",
	[C_BLOCKED] = "Blocked", [C_INCR] = "Incr load", [C_P50] = "p50",
	[C_P90] = "p90", [C_P99] = "p99", [C_MAX] = "Max",
};

static const char *const col_keys[NCOLS] = {
	[C_NAME] = "name", [C_COUNT] = "count", [C_SELF] = "self",
	[C_PCT] = "self_pct", [C_TOTAL] = "total", [C_CACHE] = "cache_hits",
	[C_BLOCKED] = "blocked", [C_INCR] = "incr_load", [C_P50] = "p50",
	[C_P90] = "p90", [C_P99] = "p99", [C_MAX] = "max",
};

/* The delta pairs shown with a base run. */
static const char *const delta_titles[][2] = {
	{ "d_self", "\xce\x94 self" }, { "d_self_pct", "\xce\x94 self %" },
	{ "d_total", "\xce\x94 total" }, { "d_total_pct", "\xce\x94 total %" },
	{ "d_count", "\xce\x94 count" }, { "d_count_pct", "\xce\x94 count %" },
};

/* A column header; `sorted` marks the column the rows are written in
 * (descending), so the page says its order before any click. */
static void th(FILE *out, const char *key, const char *title, bool num,
	       const char *cls, bool sorted)
{
	fprintf(out, "<th scope=\"col\" tabindex=\"0\" data-col=\"%s\" "
		"data-type=\"%s\" data-title=\"%s\"%s%s%s%s>%s<span "
		"class=\"ind\">%s</span></th>", key, num ? "num" : "text", title,
		cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "",
		sorted ? " aria-sort=\"descending\"" : "", title,
		sorted ? "\xe2\x96\xbc" : "");
}

static double pct_of(uint64_t v, uint64_t total)
{
	return total ? (double)v * 100.0 / (double)total : 0.0;
}

static const struct sp_query_row zero_row;

/* The cells of one row after its name (Total: st only, no percentiles). */
static void row_cells(FILE *out, const struct model *m,
		      const struct sp_query_stats *st, const struct sp_query_row *r,
		      const struct sp_query_stats *bst, bool total)
{
	double pct = pct_of(st->self_ns, m->tn.self_ns);

	td_u64(out, st->count);
	td_ns(out, st->self_ns);
	fprintf(out, "<td data-v=\"%.6f\">%.2f</td>", pct, pct);
	td_ns(out, st->total_ns);
	td_u64(out, st->cache_hits);
	td_ns(out, st->blocked_ns);
	td_ns(out, st->incr_load_ns);
	/* Percentiles of the Total row, and any of a query that never
	 * completed, are undefined: "-", not 0ns. */
	if (total || !st->count) {
		fputs("<td data-v=\"0\">-</td><td data-v=\"0\">-</td>"
		      "<td data-v=\"0\">-</td>", out);
	} else {
		td_ns(out, r->p50_ns);
		td_ns(out, r->p90_ns);
		td_ns(out, r->p99_ns);
	}
	if (st->count)
		td_ns(out, st->max_ns);
	else
		fputs("<td data-v=\"0\">-</td>", out);
	if (!m->base)
		return;
	td_delta(out, bst->self_ns, st->self_ns, true);
	td_delta(out, bst->total_ns, st->total_ns, true);
	td_delta(out, bst->count, st->count, false);
}

static void write_table(FILE *out, const struct model *m)
{
	static const char *const status_names[] = {
		[DIFF_BOTH] = "", [DIFF_NEW] = "new", [DIFF_GONE] = "gone",
	};
	unsigned int i, c;

	/* Without a base the rows come sorted by self time (summary__finish);
	 * with one, in diff__build()'s order, which no column holds. */
	fprintf(out, "<p id=\"order\">Rows by %s; click a column to sort, a "
		"query for its histogram.</p>\n<div class=\"tablewrap\">"
		"<table id=\"queries\">\n<thead><tr>", m->base ?
		"the size of the self-time change, largest first" :
		"self time, largest first");
	for (c = 0; c < NCOLS; c++)
		th(out, col_keys[c], col_titles[c], c != C_NAME,
		   c == C_NAME ? "name" : NULL, !m->base && c == C_SELF);
	for (c = 0; m->base && c < sizeof(delta_titles) / sizeof(delta_titles[0]); c++)
		th(out, delta_titles[c][0], delta_titles[c][1], true, "d", false);
	if (m->base)
		th(out, "status", "Status", false, NULL, false);
	if (m->per_pid)
		th(out, "pid", "PID", true, NULL, false);
	fputs("</tr></thead>\n<tbody class=\"total\"><tr data-i=\"-1\">"
	      "<td class=\"name\">Total</td>", out);
	row_cells(out, m, &m->tn, NULL, &m->tb, true);
	if (m->base || m->per_pid)
		fputs("<td></td>", out);
	fputs("</tr></tbody>\n<tbody id=\"rows\">\n", out);
	for (i = 0; i < m->nrows; i++) {
		const struct hrow *r = &m->rows[i];
		const struct sp_query_row *n = r->n ? r->n : &zero_row;
		const struct sp_query_row *b = r->b ? r->b : &zero_row;

		fprintf(out, "<tr tabindex=\"0\" data-i=\"%u\"><td class=\"name\">",
			i);
		text__html_display(out, r->name, UINT_MAX);
		fputs("</td>", out);
		row_cells(out, m, &n->st, n, &b->st, false);
		if (m->base)
			fprintf(out, "<td>%s</td>", status_names[r->status]);
		if (m->per_pid)
			fprintf(out, "<td data-v=\"%u\">%u</td>", n->pid, n->pid);
		fputs("</tr>\n", out);
	}
	fputs("</tbody>\n</table></div>\n", out);
}

/* ---- the data block: numbers and our own labels, never a name ----------- */

/* A u64 and its human form, as the page's script reads them. */
static void json_ns_pair(struct json_writer *w, uint64_t v)
{
	char a[NS_BUF];

	text__fmt_ns(a, sizeof(a), v);
	jsonw__u64(w, v);
	jsonw__string(w, a);
}

static void json_side(struct json_writer *w, const struct sp_query_row *r)
{
	const uint64_t st[] = { r->st.count ? r->st.min_ns : 0, r->p50_ns,
				r->p90_ns, r->p99_ns, r->st.max_ns };
	uint64_t count = r->st.count;
	char cs[32];
	unsigned int i;

	snprintf(cs, sizeof(cs), "%" PRIu64, count);
	jsonw__start_object(w);
	jsonw__u64_field(w, "c", count);
	jsonw__string_field(w, "cs", cs);
	jsonw__name(w, "bins");
	jsonw__start_array(w);
	for (i = 0; i < r->nbins; i++) {
		uint64_t lo = sp_hist_bucket_lo(r->bins[i].bucket);
		uint64_t hi = sp_hist_bucket_hi(r->bins[i].bucket);
		char a[NS_BUF], b[NS_BUF];

		text__fmt_ns(a, sizeof(a), lo);
		text__fmt_ns(b, sizeof(b), hi);
		jsonw__start_array(w);
		jsonw__u64(w, lo);
		jsonw__u64(w, hi);
		jsonw__u64(w, r->bins[i].count);
		jsonw__string(w, a);
		jsonw__string(w, b);
		jsonw__end_array(w);
	}
	jsonw__end_array(w);
	jsonw__name(w, "st");
	jsonw__start_array(w);
	for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		jsonw__start_array(w);
		json_ns_pair(w, st[i]);
		jsonw__end_array(w);
	}
	jsonw__end_array(w);
	jsonw__end_object(w);
}

static void json_side_or_null(struct json_writer *w, const char *key,
			      const struct sp_query_row *r)
{
	jsonw__name(w, key);
	if (r && r->st.count)
		json_side(w, r);
	else
		jsonw__null(w);
}

/* Its strings are figures and our labels, never a name: nothing in it can
 * close the <script> element. */
static void write_data(FILE *out, const struct model *m)
{
	struct json_writer w;
	unsigned int i;

	fputs("<script type=\"application/json\" id=\"sp-data\">", out);
	jsonw__init(&w, out);
	jsonw__start_object(&w);
	jsonw__name(&w, "base");
	jsonw__bool(&w, m->base);
	jsonw__name(&w, "rows");
	jsonw__start_array(&w);
	for (i = 0; i < m->nrows; i++) {
		jsonw__break(&w);
		jsonw__start_object(&w);
		json_side_or_null(&w, "n", m->rows[i].n);
		json_side_or_null(&w, "b", m->rows[i].b);
		jsonw__end_object(&w);
	}
	jsonw__end_array(&w);
	jsonw__end_object(&w);
	fputs("</script>\n", out);
}

/* ---- the memory timeline ------------------------------------------------ */

static uint64_t point_value(const struct mem_point *p, unsigned int which)
{
	return which == 0 ? p->rss_bytes
	       : which == 1 ? p->heap_live_bytes : p->typed_live_bytes;
}

/*
 * The memory timeline: one chart per series, each on its own axis from 0
 * to its peak. RSS is often a thousand times the live heap; on one shared
 * axis the heap and typed lines sit invisible on zero.
 */
static void write_timeline(FILE *out, const struct mem_report *mr)
{
	static const char *const keys[] = { "rss", "heap", "typed" };
	static const char *const labels[] = { "RSS", "heap live", "typed live" };
	const double W = 760, H = 150, L = 76, R = 16, T = 12, B = 30;
	const struct mem_timeline *tl = &mr->tl;
	uint64_t tmax = 1, peak[3] = { 0 };
	char a[NS_BUF], b[NS_BUF];
	unsigned int i, k, j;
	double y;

	for (i = 0; i < tl->n; i++) {
		if (tl->v[i].t_ns > tmax)
			tmax = tl->v[i].t_ns;
		for (k = 0; k < 3; k++)
			if (point_value(&tl->v[i], k) > peak[k])
				peak[k] = point_value(&tl->v[i], k);
	}
	text__fmt_ns(a, sizeof(a), tmax);
	fputs("<section id=\"memory\"><h2>Memory over time</h2>\n", out);
	for (k = 0; k < 3; k++) {
		/* Nothing typed or no heap traced: no flat line at 0. */
		if (!peak[k])
			continue;
		mem_report__fmt_bytes(b, sizeof(b), peak[k]);
		fprintf(out, "<div class=\"legend\"><span><span class=\"key k-%s\">"
			"</span>%s, peak %s</span></div>\n", keys[k], labels[k], b);
		fprintf(out, "<svg class=\"timeline\" viewBox=\"0 0 %.0f %.0f\" "
			"width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\""
			"%s over time\" data-points=\"%u\">", W, H, W, H, labels[k],
			tl->n);
		fprintf(out, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
			"y2=\"%.0f\"/><line class=\"axis\" x1=\"%.0f\" y1=\"%.0f\" "
			"x2=\"%.0f\" y2=\"%.0f\"/>", L, H - B, W - R, H - B, L, T, L,
			H - B);
		for (j = 0; j <= 2; j++) {
			y = T + (H - T - B) * (1.0 - j / 2.0);
			mem_report__fmt_bytes(b, sizeof(b), peak[k] / 2 * j +
					      (j == 2 ? peak[k] % 2 : 0));
			fprintf(out, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" "
				"x2=\"%.0f\" y2=\"%.1f\"/><text class=\"yl\" x=\"%.0f\" "
				"y=\"%.1f\">%s</text>", L + 1, y, W - R, y, L - 6,
				y + 4, j ? b : "0");
		}
		fprintf(out, "<text class=\"xl\" x=\"%.0f\" y=\"%.0f\">0s</text>"
			"<text class=\"yl\" x=\"%.0f\" y=\"%.0f\">%s</text>", L,
			H - B + 16, W - R, H - B + 16, a);
		fprintf(out, "<polyline class=\"s-%s\" data-peak=\"%" PRIu64
			"\" points=\"", keys[k], peak[k]);
		for (i = 0; i < tl->n; i++) {
			const struct mem_point *p = &tl->v[i];

			fprintf(out, "%s%.1f,%.1f", i ? " " : "",
				L + (W - L - R) * (double)p->t_ns / (double)tmax,
				T + (H - T - B) * (1.0 - (double)point_value(p, k) /
							 (double)peak[k]));
		}
		fputs("\"/></svg>\n", out);
	}
	fputs("</section>\n", out);
}

/* ---- the page ----------------------------------------------------------- */

static void write_run_meta(FILE *out, const char *what,
			   const struct html_run *r)
{
	const struct summary *s = r->s;
	char dur[NS_BUF], self[NS_BUF];

	text__fmt_ns(dur, sizeof(dur), s->duration_ns);
	text__fmt_ns(self, sizeof(self), s->total_self_ns);
	fprintf(out, "<div>%s: <span class=\"runname\">", what);
	text__html_display(out, r->name ? r->name : "-", UINT_MAX);
	fprintf(out, "</span>, duration %s, %u queries, self time %s",
		dur, s->nrows, self);
	if (r->info) {
		fputs(", <span class=\"runname\">", out);
		text__html_display(out, r->info, UINT_MAX);
		fputs("</span>", out);
	}
	fputs("</div>\n", out);
	if (summary__unbalanced(s) || summary__map_full(s) || s->lost)
		fprintf(out, "<div class=\"warn\">%s: %" PRIu64 " unbalanced, %"
			PRIu64 " map-full, %" PRIu64 " lost events: its figures "
			"undercount</div>\n", what, summary__unbalanced(s),
			summary__map_full(s), s->lost);
}

static int write_page(FILE *out, const char *title, const struct html_run *run,
		      const struct html_run *base, const struct html_verdicts *hv)
{
	struct model m;
	int err;

	if (!run->s->finished || (base && !base->s->finished))
		return -EINVAL;
	err = model_build(&m, run->s, base ? base->s : NULL);
	if (err) {
		model_free(&m);
		return err;
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      /* Nothing may be fetched: no image, font, frame or request. */
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
	      "'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
	      "base-uri 'none'; form-action 'none'\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width\">\n"
	      "<meta name=\"generator\" content=\"sptrace " SPTRACE_VERSION "\">\n"
	      "<title>", out);
	text__html_display(out, title, UINT_MAX);
	fprintf(out, "</title>\n<style>\n%s%s</style>\n</head>\n<body>\n<h1>",
		css, hv ? html_verdicts__css : "");
	text__html_display(out, title, UINT_MAX);
	fputs("</h1>\n", out);
	if (hv) {
		err = html_verdicts__write(out, hv);
		if (err) {
			model_free(&m);
			return err;
		}
		fputs("<h2>The newest run of the new set</h2>\n", out);
	}
	fputs("<div class=\"meta\">\n", out);
	write_run_meta(out, "Run", run);
	if (base)
		write_run_meta(out, "Base", base);
	if (base)
		fprintf(out, "<div>Changes: up/down when at least %.0f%% of the "
			"base and at least %uus or %u invocation; "
			"hover for the two figures.</div>\n", HTML_DELTA_PCT,
			HTML_DELTA_FLOOR_NS / 1000, HTML_DELTA_FLOOR_COUNT);
	fputs("</div>\n", out);
	write_table(out, &m);
	fputs("<section id=\"panel\" hidden><button type=\"button\" id=\"panel-close\">"
	      "Close</button><h2>Query <span id=\"panel-name\"></span></h2>"
	      "<table id=\"panel-stats\"></table><div id=\"panel-hist\"></div>", out);
	fputs("<div class=\"legend\"><span><span class=\"key k-new\"></span>"
	      "run</span>", out);
	if (base)
		fputs("<span><span class=\"key k-base\"></span>base</span>", out);
	fputs("<span>dashed lines: p50, p90, p99 of each run</span></div>"
	      "</section>\n", out);
	if (run->mr && run->mr->timeline_on && run->mr->tl.n)
		write_timeline(out, run->mr);
	if (run->trace) {
		err = html_trace__write(out, run->trace, run->s->duration_ns);
		if (err) {
			model_free(&m);
			return err;
		}
	}
	write_data(out, &m);
	fprintf(out, "<footer>sptrace " SPTRACE_VERSION "</footer>\n<script>\n%s"
		"</script>\n</body>\n</html>\n", script);
	model_free(&m);
	return text__flush(out);
}

int html_report__write(FILE *out, const char *title, const struct html_run *run,
		       const struct html_run *base)
{
	return write_page(out, title, run, base, NULL);
}

int html_report__write_verdicts(FILE *out, const char *title,
				const struct html_run *run,
				const struct html_verdicts *hv)
{
	return write_page(out, title, run, NULL, hv);
}
