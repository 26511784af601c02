// SPDX-License-Identifier: MIT
/* The statistics of repeated runs as a table, JSON or CSV (stats_writer.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_writer.h"
#include "stats_writer.h"
#include "text.h"
#include "text_table.h"

#define NS_BUF 24
#define CELL 64

void stats_writer__json_desc(struct json_writer *w, const char *name,
			     const struct stats_desc *d)
{
	jsonw__name(w, name);
	jsonw__start_object(w);
	jsonw__u64_field(w, "n", d->n);
	jsonw__double_field(w, "mean", d->mean);
	jsonw__double_field(w, "median", d->median);
	jsonw__double_field(w, "sd", d->sd);
	jsonw__double_field(w, "mad", d->mad);
	jsonw__double_field(w, "min", d->min);
	jsonw__double_field(w, "max", d->max);
	jsonw__name(w, "ci");
	if (isnan(d->ci_lo)) {
		jsonw__null(w);
	} else {
		jsonw__start_array(w);
		jsonw__double_field(w, NULL, d->ci_lo);
		jsonw__double_field(w, NULL, d->ci_hi);
		jsonw__end_array(w);
	}
	jsonw__end_object(w);
}

void stats_writer__csv_double(FILE *out, double x)
{
	if (isfinite(x))
		fprintf(out, ",%.10g", x);
	else
		fputc(',', out);
}

void stats_writer__csv_desc(FILE *out, const struct stats_desc *d)
{
	fprintf(out, ",%u", d->n);
	stats_writer__csv_double(out, d->mean);
	stats_writer__csv_double(out, d->median);
	stats_writer__csv_double(out, d->sd);
	stats_writer__csv_double(out, d->mad);
	stats_writer__csv_double(out, d->min);
	stats_writer__csv_double(out, d->max);
	stats_writer__csv_double(out, d->ci_lo);
	stats_writer__csv_double(out, d->ci_hi);
}

static void fmt_ns(char *buf, size_t len, double ns)
{
	text__fmt_ns(buf, len, ns > 0 ? (uint64_t)llround(ns) : 0);
}

enum col {
	C_NAME, C_RUNS, C_MEDIAN, C_SPREAD, C_CI, C_MEAN, C_MIN, C_MAX,
	C_TOTAL, C_COUNT, NCOLS,
};

static const unsigned int drop_order[] = { C_MEAN, C_MIN, C_MAX, C_TOTAL };

static int one_table(FILE *out, const struct run_stats_side *sd,
		     unsigned int width)
{
	static const struct text_col cols[NCOLS] = {
		[C_NAME] = { "Query", TEXT_LEFT, false, 60, 20 },
		[C_RUNS] = { "Runs", TEXT_RIGHT, false, 0, 0 },
		[C_MEDIAN] = { "Self (median)", TEXT_RIGHT, false, 0, 0 },
		[C_SPREAD] = { "Spread", TEXT_RIGHT, false, 0, 0 },
		[C_CI] = { "95% interval of the median", TEXT_RIGHT, false, 0, 0 },
		[C_MEAN] = { "Mean", TEXT_RIGHT, false, 0, 0 },
		[C_MIN] = { "Min", TEXT_RIGHT, false, 0, 0 },
		[C_MAX] = { "Max", TEXT_RIGHT, false, 0, 0 },
		[C_TOTAL] = { "Total (median)", TEXT_RIGHT, false, 0, 0 },
		[C_COUNT] = { "Count", TEXT_RIGHT, false, 0, 0 },
	};
	const struct run_stats *st = sd->st;
	char cells[NCOLS][CELL], a[NS_BUF], b[NS_BUF], *ref;
	const char *text[NCOLS];
	struct text_table t;
	unsigned int i, c, w;
	int err;

	ref = text__display(sd->ref, 200, &w);
	if (!ref)
		return -ENOMEM;
	fprintf(out, "%s: %u run%s\n", ref, st->nruns, st->nruns == 1 ? "" : "s");
	free(ref);
	err = text_table__init(&t, cols, NCOLS);
	for (i = 0; !err && i < st->nrows; i++) {
		const struct run_stats_row *r = &st->rows[i];
		const struct stats_desc *s = &r->f[FIG_SELF], *n = &r->f[FIG_COUNT];

		for (c = 0; c < NCOLS; c++) {
			cells[c][0] = 0;
			text[c] = cells[c];
		}
		text[C_NAME] = r->name;
		snprintf(cells[C_RUNS], CELL, "%u", r->present);
		fmt_ns(cells[C_MEDIAN], CELL, s->median);
		if (s->median > 0 && s->n > 1)
			snprintf(cells[C_SPREAD], CELL, "\xc2\xb1%.1f%%",
				 s->mad * 100 / s->median);
		else
			snprintf(cells[C_SPREAD], CELL, "-");
		if (isnan(s->ci_lo)) {
			snprintf(cells[C_CI], CELL, "-");
		} else {
			fmt_ns(a, sizeof(a), s->ci_lo);
			fmt_ns(b, sizeof(b), s->ci_hi);
			snprintf(cells[C_CI], CELL, "%s .. %s", a, b);
		}
		fmt_ns(cells[C_MEAN], CELL, s->mean);
		fmt_ns(cells[C_MIN], CELL, s->min);
		fmt_ns(cells[C_MAX], CELL, s->max);
		fmt_ns(cells[C_TOTAL], CELL, r->f[FIG_TOTAL].median);
		if (n->min == n->max)
			snprintf(cells[C_COUNT], CELL, "%.0f", n->min);
		else
			snprintf(cells[C_COUNT], CELL, "%.0f..%.0f", n->min,
				 n->max);
		err = text_table__add_row(&t, text);
	}
	if (!err)
		err = text_table__print_fitted(out, &t, width, drop_order,
					       sizeof(drop_order) / sizeof(drop_order[0]));
	text_table__free(&t);
	return err;
}

int run_stats__write_table(FILE *out, const struct run_stats_side *sides,
			   unsigned int n, unsigned int width)
{
	unsigned int i;
	int err = 0;

	for (i = 0; !err && i < n; i++) {
		if (i)
			fputc('\n', out);
		err = one_table(out, &sides[i], width);
	}
	if (!err)
		fputs("Spread: the median distance of a run from the median, in percent of it; the\n"
		      "interval holds the median of the program's run times with 95% confidence\n"
		      "(order statistics, exact; none below 6 runs). docs/numbers.md\n", out);
	return err ? err : text__flush(out);
}

int run_stats__write_json(FILE *out, const struct run_stats_side *sides,
			  unsigned int n)
{
	struct json_writer w;
	unsigned int i, j, f;

	jsonw__init(&w, out);
	jsonw__start_object(&w);
	jsonw__string_field(&w, "version", RUN_STATS_JSON_VERSION);
	jsonw__name(&w, "sets");
	jsonw__start_array(&w);
	for (i = 0; i < n; i++) {
		const struct run_stats *st = sides[i].st;

		jsonw__break(&w);
		jsonw__start_object(&w);
		jsonw__string_field(&w, "ref", sides[i].ref);
		jsonw__name(&w, "runs");
		jsonw__start_array(&w);
		for (j = 0; j < sides[i].nids; j++)
			jsonw__i64(&w, sides[i].ids[j]);
		jsonw__end_array(&w);
		jsonw__name(&w, "queries");
		jsonw__start_array(&w);
		for (j = 0; j < st->nrows; j++) {
			const struct run_stats_row *r = &st->rows[j];

			jsonw__break(&w);
			jsonw__start_object(&w);
			jsonw__string_field(&w, "name", r->name);
			jsonw__u64_field(&w, "present", r->present);
			jsonw__name(&w, "figures");
			jsonw__start_object(&w);
			for (f = 0; f < FIG__MAX; f++)
				stats_writer__json_desc(&w, run_fig__key(f),
							&r->f[f]);
			jsonw__end_object(&w);
			jsonw__end_object(&w);
		}
		jsonw__end_array(&w);
		jsonw__end_object(&w);
	}
	jsonw__break(&w);
	jsonw__end_array(&w);
	jsonw__end_object(&w);
	fputc('\n', out);
	return jsonw__finish(&w);
}

int run_stats__write_csv(FILE *out, const struct run_stats_side *sides,
			 unsigned int n)
{
	unsigned int i, j, f;

	fputs("set,name,present,figure,n,mean,median,sd,mad,min,max,ci_lo,ci_hi\n",
	      out);
	for (i = 0; i < n; i++) {
		const struct run_stats *st = sides[i].st;

		for (j = 0; j < st->nrows; j++) {
			const struct run_stats_row *r = &st->rows[j];

			for (f = 0; f < FIG__MAX; f++) {
				text__csv_field(out, sides[i].ref);
				fputc(',', out);
				text__csv_field(out, r->name);
				fprintf(out, ",%u,%s", r->present, run_fig__key(f));
				stats_writer__csv_desc(out, &r->f[f]);
				fputc('\n', out);
			}
		}
	}
	return text__flush(out);
}
