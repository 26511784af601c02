// SPDX-License-Identifier: MIT
/*
 * The comparison view over sets of runs (html_verdicts.h). The small
 * multiple of a query is one SVG per row on the query's own scale (its
 * lowest to its highest self time): what it shows is the shape, whether
 * the new runs sit apart from the base runs, and the exact figures are in
 * the cells beside it and in each point's tooltip.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "html_verdicts.h"
#include "text.h"
#include "verdict_writer.h"

#define NS_BUF 24
#define CELL 96

const char html_verdicts__css[] =
	"#verdicts table { border-collapse: collapse; font-size: 13px; }\n"
	"#verdicts th, #verdicts td { padding: .2em .5em; border-bottom: 1px solid #ddd; white-space: nowrap; text-align: right; }\n"
	"#verdicts th { background: #f3f3f3; }\n"
	"#verdicts td.name { text-align: left; font-family: ui-monospace, monospace; white-space: pre; max-width: 22em; overflow: hidden; text-overflow: ellipsis; }\n"
	"#verdicts tr.unchanged td { color: #777; }\n"
	".badge { display: inline-block; padding: .05em .5em; border-radius: .8em; font-size: 12px; font-weight: 600; }\n"
	".badge.regressed { background: #fdecea; color: #b3261e; }\n"
	".badge.improved { background: #e8f5e9; color: #1b6e20; }\n"
	".badge.unchanged { background: #eee; color: #555; }\n"
	".badge.too_noisy { background: #fff4e0; color: #8a4b00; }\n"
	".badge.count { background: #e7eefa; color: #1a3f7a; margin-left: .3em; }\n"
	"svg.sm { vertical-align: middle; }\n"
	"svg.sm .b { fill: #f0a030; } svg.sm .n { fill: #3b73c4; }\n"
	"svg.sm .mb { stroke: #b35f00; } svg.sm .mn { stroke: #1a3f7a; }\n"
	"svg.sm line { stroke-width: 1; stroke-dasharray: 3 2; }\n";

static void fmt_typical(char *buf, size_t len, const struct stats_desc *d)
{
	char ns[NS_BUF];

	text__fmt_ns(ns, sizeof(ns), d->median > 0 ? (uint64_t)llround(d->median) : 0);
	if (d->median > 0 && d->n > 1)
		snprintf(buf, len, "%s &#177;%.1f%%", ns, d->mad * 100 / d->median);
	else
		snprintf(buf, len, "%s", ns);
}

/* The small multiple: the runs of both sets in id order. */
static void small_multiple(FILE *out, const struct html_verdicts *hv,
			   const char *name, const struct stats_desc *bd,
			   const struct stats_desc *nd)
{
	const double W = 180, H = 34, P = 4;
	const struct run_set_query *bq = run_set__find(hv->base, name);
	const struct run_set_query *nq = run_set__find(hv->new, name);
	unsigned int nb = hv->base->nruns, nn = hv->new->nruns, i = 0, j = 0, k;
	double lo = fmin(bd->min, nd->min), hi = fmax(bd->max, nd->max);
	double mid = (bd->median + nd->median) / 2;
	double x, y, xb1 = P, xn0 = P;
	char ns[NS_BUF];

	/* At least 10% of the medians from bottom to top: noise of a tenth
	 * of a percent stays a flat line, not a mountain range. */
	lo = fmin(lo, mid * 0.95);
	hi = fmax(hi, mid * 1.05);
	fprintf(out, "<svg class=\"sm\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
		"height=\"%.0f\" role=\"img\" aria-label=\"self time run by run\" "
		"data-runs=\"%u\">", W, H, W, H, nb + nn);
#define Y(v) (hi > lo ? H - P - ((v) - lo) / (hi - lo) * (H - 2 * P) : H / 2)
#define X(k) (nb + nn > 1 ? P + (double)(k) * (W - 2 * P) / (nb + nn - 1) : W / 2)
	/* Merge by run id: a history's runs come before the new one, and
	 * interleaved sets (A B A B) stay in the order they ran. */
	for (k = 0; k < nb + nn; k++) {
		bool base = j == nn || (i < nb && hv->base->ids[i] <= hv->new->ids[j]);
		const struct run_set_query *q = base ? bq : nq;
		unsigned int r = base ? i++ : j++;
		uint64_t v = q ? q->v[(size_t)r * FIG__MAX + FIG_SELF] : 0;

		x = X(k);
		y = Y((double)v);
		if (base)
			xb1 = x;
		else if (j == 1)
			xn0 = x;
		text__fmt_ns(ns, sizeof(ns), v);
		fprintf(out, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\" "
			"data-v=\"%" PRIu64 "\"><title>run %" PRId64 " (%s): %s</title>"
			"</circle>", base ? "b" : "n", x, y, v,
			base ? hv->base->ids[r] : hv->new->ids[r],
			base ? "base" : "new", ns);
	}
	fprintf(out, "<line class=\"mb\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
		P, Y(bd->median), xb1, Y(bd->median));
	fprintf(out, "<line class=\"mn\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
		xn0, Y(nd->median), W - P, Y(nd->median));
#undef X
#undef Y
	fputs("</svg>", out);
}

static int by_listing(const void *a, const void *b)
{
	const struct verdict_row *const *x = a, *const *y = b;
	bool lx = verdict_row__listed(*x), ly = verdict_row__listed(*y);

	if (lx != ly)
		return lx ? -1 : 1;
	return *x < *y ? -1 : *x > *y;	/* the verdicts' own order */
}

int html_verdicts__write(FILE *out, const struct html_verdicts *hv)
{
	const struct verdicts *v = hv->v;
	bool hist = v->mode == VERDICT_HISTORY;
	const struct verdict_row **rows;
	char a[CELL], b[CELL], c[CELL], d[CELL];
	unsigned int i;

	rows = malloc((v->nrows + 1) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (i = 0; i < v->nrows; i++)
		rows[i] = &v->rows[i];
	if (v->nrows > 1)
		qsort(rows, v->nrows, sizeof(*rows), by_listing);
	fputs("<section id=\"verdicts\"><h2>Verdicts</h2>\n<p class=\"meta\">Base <span class=\"runname\">", out);
	text__html(out, hv->base_ref);
	fprintf(out, "</span> (%u run%s) against <span class=\"runname\">", v->nbase,
		v->nbase == 1 ? "" : "s");
	text__html(out, hv->new_ref);
	fprintf(out, "</span> (%u run%s): %u queries, <b>%u regressed</b>, %u improved, "
		"%u too noisy to say, %u unchanged; %u with a changed count.<br>",
		v->nnew, v->nnew == 1 ? "" : "s", v->nrows,
		v->n[VERDICT_REGRESSED], v->n[VERDICT_IMPROVED],
		v->n[VERDICT_NOISY], v->n[VERDICT_UNCHANGED], v->ncount_changed);
	if (hist)
		fprintf(out, "The new run against the history: a change counts when it "
			"is beyond the query's noise fence (Q3 + 3 &#215; IQR of its "
			"run-to-run changes, as perf.rust-lang.org) and at least %g%%; "
			"no correction across queries (the fence lies far out).",
			v->o.threshold * 100);
	else
		fprintf(out, "Mann-Whitney test per query on log self times; p-values "
			"adjusted by Benjamini-Hochberg across the %u queries tested "
			"(false discovery rate %g%%); changes under %g%% count as "
			"unchanged, and too noisy to say is an interval wider than "
			"&#177;%g%%; change: Hodges-Lehmann estimate with its 95%% "
			"interval. Counts compared exactly.", v->ntested,
			v->o.fdr * 100, v->o.threshold * 100, v->o.threshold * 100);
	fprintf(out, " Small multiples: self time run by run, "
		"<span style=\"color:#b35f00\">base</span> and "
		"<span style=\"color:#1a3f7a\">new</span>, dashed: each "
		"set's median.</p>\n<div class=\"tablewrap\"><table>\n<thead><tr>"
		"<th class=\"name\">Query</th><th>Verdict</th><th>Base self</th>"
		"<th>New self</th><th>Change</th><th>%s</th><th>Effect</th>"
		"<th>Count</th><th>Self time, run by run</th></tr></thead>\n<tbody>\n",
		hist ? "Noise fence" : "95% interval");
	for (i = 0; i < v->nrows; i++) {
		const struct verdict_row *r = rows[i];
		const struct verdict_fig *s = &r->f[FIG_SELF], *n = &r->f[FIG_COUNT];
		char ns[NS_BUF];

		fprintf(out, "<tr class=\"%s\" data-verdict=\"%s\"><td class=\"name\">",
			verdict__key(r->v), verdict__key(r->v));
		text__html_display(out, r->name, UINT_MAX);
		fprintf(out, "</td><td><span class=\"badge %s\">%s</span>",
			verdict__key(r->v), verdict__name(r->v));
		if (r->count_changed)
			fputs("<span class=\"badge count\">count changed</span>", out);
		if (r->status != DIFF_BOTH)
			fprintf(out, "<span class=\"badge count\">%s</span>",
				r->status == DIFF_NEW ? "new" : "gone");
		fmt_typical(a, sizeof(a), &s->base);
		fmt_typical(b, sizeof(b), &s->new);
		verdict__fmt_ratio(c, sizeof(c), s->ratio);
		verdict__fmt_interval(d, sizeof(d), v, s);
		fprintf(out, "</td><td>%s</td><td>%s</td><td data-v=\"%.6g\">%s</td>"
			"<td class=\"ci\" data-lo=\"%.6g\" data-hi=\"%.6g\">", a, b,
			s->ratio, c, s->lo, s->hi);
		text__html(out, d);	/* "±" and ".." only, but escaped all the same */
		text__fmt_ns(ns, sizeof(ns), (uint64_t)llround(fabs(r->effect_ns)));
		fprintf(out, "</td><td>%s%s</td>", r->effect_ns > 0.5 ? "+" :
			r->effect_ns < -0.5 ? "-" : "", ns);
		verdict__fmt_counts(a, sizeof(a), n);
		fputs("<td>", out);
		text__html(out, a);
		fputs("</td><td>", out);
		small_multiple(out, hv, r->name, &s->base, &s->new);
		fputs("</td></tr>\n", out);
	}
	fputs("</tbody></table></div></section>\n", out);
	free(rows);
	return 0;
}
