// SPDX-License-Identifier: MIT
/*
 * The verdicts of `sptrace diff` over sets of runs as a table, JSON or CSV
 * (verdict_writer.h). The figures come from model/verdict.c as they are;
 * only their form is chosen here.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_writer.h"
#include "stats_writer.h"
#include "text.h"
#include "text_table.h"
#include "verdict_writer.h"

#define NS_BUF 24
#define CELL 96

static const char *const status_names[] = {
	[DIFF_BOTH] = "both", [DIFF_NEW] = "new", [DIFF_GONE] = "gone",
};

/* A percentage of change, two decimals under 10%, one above. */
static void fmt_change(char *buf, size_t len, double pct)
{
	if (fabs(pct) < 0.005)
		snprintf(buf, len, "0.00%%");
	else if (fabs(pct) < 10)
		snprintf(buf, len, "%+.2f%%", pct);
	else
		snprintf(buf, len, "%+.1f%%", pct);
}

void verdict__fmt_ratio(char *buf, size_t len, double ratio)
{
	if (isinf(ratio))
		snprintf(buf, len, "new");
	else
		fmt_change(buf, len, (ratio - 1) * 100);
}

void verdict__fmt_interval(char *buf, size_t len, const struct verdicts *v,
			   const struct verdict_fig *f)
{
	char a[CELL], b[CELL];

	if (v->mode == VERDICT_HISTORY) {
		if (isnan(f->fence))
			snprintf(buf, len, "-");
		else
			snprintf(buf, len, "\xc2\xb1%.2f%%",
				 (exp(f->fence) - 1) * 100);
		return;
	}
	if (isnan(f->lo) || f->lo <= 0 || isinf(f->hi)) {
		snprintf(buf, len, "-");
		return;
	}
	/* Both ends with the decimals of the wider one. */
	if (fabs(f->lo - 1) >= 0.1 || fabs(f->hi - 1) >= 0.1) {
		snprintf(a, sizeof(a), "%+.1f%%", (f->lo - 1) * 100);
		snprintf(b, sizeof(b), "%+.1f%%", (f->hi - 1) * 100);
	} else {
		verdict__fmt_ratio(a, sizeof(a), f->lo);
		verdict__fmt_ratio(b, sizeof(b), f->hi);
	}
	snprintf(buf, len, "%s .. %s", a, b);
}

/* "1.00ms ±0.3%": the median and the spread (MAD) in percent of it. */
static void fmt_typical(char *buf, size_t len, const struct stats_desc *d)
{
	char ns[NS_BUF];

	text__fmt_ns(ns, sizeof(ns), (uint64_t)llround(d->median));
	if (d->median > 0 && d->n > 1)
		snprintf(buf, len, "%s \xc2\xb1%.1f%%", ns,
			 d->mad * 100 / d->median);
	else
		snprintf(buf, len, "%s", ns);
}

/* A count's values: "10", or "9..11" when the runs differ. */
static void fmt_counts(char *buf, size_t len, const struct stats_desc *d)
{
	if (d->min == d->max)
		snprintf(buf, len, "%.0f", d->min);
	else
		snprintf(buf, len, "%.0f..%.0f", d->min, d->max);
}

void verdict__fmt_counts(char *buf, size_t len, const struct verdict_fig *f)
{
	char b[40], n[40];

	fmt_counts(b, sizeof(b), &f->base);
	fmt_counts(n, sizeof(n), &f->new);
	if (f->changed)
		snprintf(buf, len, "%s -> %s", b, n);
	else
		snprintf(buf, len, "%s", n);
}

static void fmt_effect(char *buf, size_t len, double ns)
{
	char num[NS_BUF];

	text__fmt_ns(num, sizeof(num), (uint64_t)llround(fabs(ns)));
	snprintf(buf, len, "%s%s", llround(ns) > 0 ? "+" :
		 llround(ns) < 0 ? "-" : "", num);
}

enum col {
	C_NAME, C_STATUS, C_VERDICT, C_BASE, C_NEW, C_CHANGE, C_INTERVAL,
	C_EFFECT, C_COUNT, NCOLS,
};

/* Left out first when the table is too wide: the base, the effect. */
static const unsigned int drop_order[] = { C_BASE, C_EFFECT };

static int table_row(struct text_table *t, const struct verdicts *v,
		     const struct verdict_row *r)
{
	const struct verdict_fig *s = &r->f[FIG_SELF], *c = &r->f[FIG_COUNT];
	char cells[NCOLS][CELL];
	const char *text[NCOLS];
	unsigned int i;

	for (i = 0; i < NCOLS; i++) {
		cells[i][0] = 0;
		text[i] = cells[i];
	}
	text[C_NAME] = r->name;
	text[C_STATUS] = r->status == DIFF_BOTH ? "" : status_names[r->status];
	text[C_VERDICT] = verdict__name(r->v);
	fmt_typical(cells[C_BASE], CELL, &s->base);
	fmt_typical(cells[C_NEW], CELL, &s->new);
	verdict__fmt_ratio(cells[C_CHANGE], CELL, s->ratio);
	verdict__fmt_interval(cells[C_INTERVAL], CELL, v, s);
	fmt_effect(cells[C_EFFECT], CELL, r->effect_ns);
	verdict__fmt_counts(cells[C_COUNT], CELL, c);
	return text_table__add_row(t, text);
}

/* How the verdicts were reached: the footer says it every time, so that a
 * table pasted into a review carries its own method. */
static void write_method(FILE *out, const struct verdicts *v)
{
	double t = v->o.threshold * 100;

	if (v->mode == VERDICT_HISTORY) {
		fprintf(out,
			"Verdicts on self time: the new run against %u earlier runs: a change from their\n"
			"median counts when it is beyond the query's noise fence (Q3 + 3 x IQR of its\n"
			"run-to-run changes in the history, as perf.rust-lang.org does) and at least %g%%\n"
			"(--threshold); too noisy to say: the fence is wider than %g%%. No correction\n"
			"across queries: the fence lies about 5 standard deviations of normal noise out.\n"
			"Counts compared exactly.\n", v->nbase, t, t);
		return;
	}
	fprintf(out,
		"Verdicts on self time: Mann-Whitney test per query on log times, p-values\n"
		"adjusted across the %u queries tested by Benjamini-Hochberg: of the rows flagged\n"
		"regressed or improved, at most %g%% are expected to be false (--fdr). Changes\n"
		"under %g%% count as unchanged (--threshold); too noisy to say: the 95%% interval\n"
		"is wider than +-%g%%. Change: Hodges-Lehmann estimate of new/base, 95%% interval\n"
		"(exact up to %u runs a side without ties). Counts compared exactly.\n",
		v->ntested, v->o.fdr * 100, t, t, STATS_EXACT_MAX);
}

int verdicts__write_table(FILE *out, const struct verdicts *v,
			  const struct verdict_side *base,
			  const struct verdict_side *new, bool all,
			  unsigned int width)
{
	struct text_col cols[NCOLS] = {
		[C_NAME] = { "Query", TEXT_LEFT, false, 60, 20 },
		[C_STATUS] = { "Status", TEXT_LEFT, false, 0, 0 },
		[C_VERDICT] = { "Verdict", TEXT_LEFT, false, 0, 0 },
		[C_BASE] = { "Base self", TEXT_RIGHT, false, 0, 0 },
		[C_NEW] = { "New self", TEXT_RIGHT, false, 0, 0 },
		[C_CHANGE] = { "Change", TEXT_RIGHT, false, 0, 0 },
		[C_INTERVAL] = { "95% interval", TEXT_RIGHT, false, 0, 0 },
		[C_EFFECT] = { "Effect", TEXT_RIGHT, false, 0, 0 },
		[C_COUNT] = { "Count", TEXT_RIGHT, false, 0, 0 },
	};
	char *bname = NULL, *nname = NULL;
	unsigned int i, shown = 0, w;
	struct text_table t;
	int err;

	if (v->mode == VERDICT_HISTORY)
		cols[C_INTERVAL].title = "Noise fence";
	cols[C_STATUS].hidden = !v->nnew_q && !v->ngone;
	err = text_table__init(&t, cols, NCOLS);
	for (i = 0; !err && i < v->nrows; i++) {
		if (!all && !verdict_row__listed(&v->rows[i]))
			continue;
		shown++;
		err = table_row(&t, v, &v->rows[i]);
	}
	if (!err) {
		bname = text__display(base->ref, 200, &w);
		nname = text__display(new->ref, 200, &w);
		if (!bname || !nname)
			err = -ENOMEM;
	}
	if (err)
		goto cleanup;
	fprintf(out, "sptrace diff: %s (%u run%s) -> %s (%u run%s), %u queries:\n"
		"%u regressed, %u improved, %u too noisy to say, %u unchanged; "
		"%u with a changed count\n", bname, v->nbase,
		v->nbase == 1 ? "" : "s", nname, v->nnew, v->nnew == 1 ? "" : "s",
		v->nrows, v->n[VERDICT_REGRESSED], v->n[VERDICT_IMPROVED],
		v->n[VERDICT_NOISY], v->n[VERDICT_UNCHANGED], v->ncount_changed);
	if (shown)
		err = text_table__print_fitted(out, &t, width, drop_order,
					       sizeof(drop_order) / sizeof(drop_order[0]));
	else
		fputs("No query changed beyond its noise.\n", out);
	if (!err && shown < v->nrows)
		fprintf(out, "%u unchanged quer%s not shown (--all shows every row).\n",
			v->nrows - shown, v->nrows - shown == 1 ? "y" : "ies");
	if (!err) {
		write_method(out, v);
		err = text__flush(out);
	}
cleanup:
	free(bname);
	free(nname);
	text_table__free(&t);
	return err;
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_pair(struct json_writer *w, const char *name, double lo,
		      double hi)
{
	jsonw__name(w, name);
	if (isnan(lo) || isnan(hi)) {
		jsonw__null(w);
		return;
	}
	jsonw__start_array(w);
	jsonw__double_field(w, NULL, lo);
	jsonw__double_field(w, NULL, hi);
	jsonw__end_array(w);
}

static void json_fig(struct json_writer *w, const struct verdicts *v,
		     const struct verdict_fig *f, enum run_fig k)
{
	jsonw__name(w, run_fig__key(k));
	jsonw__start_object(w);
	if (run_fig__is_time(k)) {
		jsonw__string_field(w, "verdict", verdict__key(f->v));
		jsonw__name(w, "tested");
		jsonw__bool(w, f->tested);
		jsonw__double_field(w, "ratio", f->ratio);
		/* No interval (too few runs): its ends are 0 and infinity,
		 * written as null. */
		if (v->mode == VERDICT_SAMPLES && f->lo > 0 && !isinf(f->hi))
			json_pair(w, "ci", f->lo, f->hi);
		else
			json_pair(w, "ci", NAN, NAN);
		jsonw__double_field(w, "p", f->p);
		jsonw__double_field(w, "p_adj", f->p_adj);
		jsonw__double_field(w, "fence", isnan(f->fence) ? NAN :
				  exp(f->fence) - 1);
	} else {
		jsonw__name(w, "changed");
		jsonw__bool(w, f->changed);
	}
	stats_writer__json_desc(w, "base", &f->base);
	stats_writer__json_desc(w, "new", &f->new);
	jsonw__end_object(w);
}

static void json_side(struct json_writer *w, const char *name,
		      const struct verdict_side *s)
{
	unsigned int i;

	jsonw__name(w, name);
	jsonw__start_object(w);
	jsonw__string_field(w, "ref", s->ref);
	jsonw__name(w, "runs");
	jsonw__start_array(w);
	for (i = 0; i < s->nids; i++)
		jsonw__i64(w, s->ids[i]);
	jsonw__end_array(w);
	jsonw__end_object(w);
}

int verdicts__write_json(FILE *out, const struct verdicts *v,
			 const struct verdict_side *base,
			 const struct verdict_side *new)
{
	bool hist = v->mode == VERDICT_HISTORY;
	struct json_writer w;
	unsigned int i, f;

	jsonw__init(&w, out);
	jsonw__start_object(&w);
	jsonw__string_field(&w, "version", VERDICTS_JSON_VERSION);
	jsonw__string_field(&w, "mode", hist ? "history" : "samples");
	jsonw__break(&w);
	json_side(&w, "base", base);
	jsonw__break(&w);
	json_side(&w, "new", new);
	jsonw__break(&w);
	jsonw__name(&w, "method");
	jsonw__start_object(&w);
	jsonw__string_field(&w, "figure", "self_ns");
	jsonw__string_field(&w, "test", hist ? "history_fence" : "mann_whitney");
	jsonw__string_field(&w, "correction", hist ? "none" : "benjamini_hochberg");
	jsonw__double_field(&w, "fdr", hist ? NAN : v->o.fdr);
	jsonw__double_field(&w, "threshold", v->o.threshold);
	jsonw__double_field(&w, "interval", hist ? NAN : 0.95);
	jsonw__end_object(&w);
	jsonw__break(&w);
	jsonw__name(&w, "summary");
	jsonw__start_object(&w);
	jsonw__u64_field(&w, "queries", v->nrows);
	for (i = 0; i < VERDICT__MAX; i++)
		jsonw__u64_field(&w, verdict__key(i), v->n[i]);
	jsonw__u64_field(&w, "count_changed", v->ncount_changed);
	jsonw__u64_field(&w, "new", v->nnew_q);
	jsonw__u64_field(&w, "gone", v->ngone);
	jsonw__u64_field(&w, "tested", v->ntested);
	jsonw__end_object(&w);
	jsonw__break(&w);
	jsonw__name(&w, "queries");
	jsonw__start_array(&w);
	for (i = 0; i < v->nrows; i++) {
		const struct verdict_row *r = &v->rows[i];

		jsonw__break(&w);
		jsonw__start_object(&w);
		jsonw__string_field(&w, "name", r->name);
		jsonw__string_field(&w, "status", status_names[r->status]);
		jsonw__string_field(&w, "verdict", verdict__key(r->v));
		jsonw__name(&w, "listed");
		jsonw__bool(&w, verdict_row__listed(r));
		jsonw__name(&w, "count_changed");
		jsonw__bool(&w, r->count_changed);
		jsonw__double_field(&w, "effect_ns", r->effect_ns);
		jsonw__name(&w, "figures");
		jsonw__start_object(&w);
		for (f = 0; f < FIG__MAX; f++)
			json_fig(&w, v, &r->f[f], f);
		jsonw__end_object(&w);
		jsonw__end_object(&w);
	}
	jsonw__break(&w);
	jsonw__end_array(&w);
	jsonw__end_object(&w);
	fputc('\n', out);
	return jsonw__finish(&w);
}

/* ---- CSV ------------------------------------------------------------------- */

static const char csv_header[] =
	"name,status,verdict,listed,effect_ns,figure,figure_verdict,changed,"
	"ratio,ci_lo,ci_hi,p,p_adj,fence,"
	"base_n,base_mean,base_median,base_sd,base_mad,base_min,base_max,"
	"base_ci_lo,base_ci_hi,"
	"new_n,new_mean,new_median,new_sd,new_mad,new_min,new_max,"
	"new_ci_lo,new_ci_hi\n";

int verdicts__write_csv(FILE *out, const struct verdicts *v)
{
	unsigned int i, f;

	fputs(csv_header, out);
	for (i = 0; i < v->nrows; i++) {
		const struct verdict_row *r = &v->rows[i];

		for (f = 0; f < FIG__MAX; f++) {
			const struct verdict_fig *g = &r->f[f];
			bool time = run_fig__is_time(f);
			bool ci = time && v->mode == VERDICT_SAMPLES &&
				  g->lo > 0 && !isinf(g->hi);

			text__csv_field(out, r->name);
			fprintf(out, ",%s,%s,%d", status_names[r->status],
				verdict__key(r->v), verdict_row__listed(r));
			stats_writer__csv_double(out, r->effect_ns);
			fprintf(out, ",%s,%s,%s", run_fig__key(f),
				time ? verdict__key(g->v) : "",
				time ? "" : g->changed ? "1" : "0");
			stats_writer__csv_double(out, time ? g->ratio : NAN);
			stats_writer__csv_double(out, ci ? g->lo : NAN);
			stats_writer__csv_double(out, ci ? g->hi : NAN);
			stats_writer__csv_double(out, time ? g->p : NAN);
			stats_writer__csv_double(out, time ? g->p_adj : NAN);
			stats_writer__csv_double(out, time && !isnan(g->fence) ?
				   exp(g->fence) - 1 : NAN);
			stats_writer__csv_desc(out, &g->base);
			stats_writer__csv_desc(out, &g->new);
			fputc('\n', out);
		}
	}
	return text__flush(out);
}
