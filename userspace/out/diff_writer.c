// SPDX-License-Identifier: MIT
/*
 * The diff of two summaries (model/diff.c) written as a boxed table or as
 * JSON (diff_writer.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff_writer.h"
#include "json_writer.h"
#include "text.h"
#include "text_table.h"

#define NAME_MAX_WIDTH 60
/* Room for any text__fmt_ns() result ("18400000000s"). */
#define NS_BUF 24
/* A sign plus an NS_BUF figure, or a percentage (up to 1.8e21%). */
#define CELL_BUF 32

/* "+1.50ms", "-300ns", or "0ns" for no change. */
static void fmt_delta_ns(char *buf, size_t len, uint64_t base, uint64_t new)
{
	char num[NS_BUF];
	uint64_t mag;
	bool neg = diff__delta(base, new, &mag);

	text__fmt_ns(num, sizeof(num), mag);
	snprintf(buf, len, "%s%s", mag ? (neg ? "-" : "+") : "", num);
}

static void fmt_delta_u64(char *buf, size_t len, uint64_t base, uint64_t new)
{
	uint64_t mag;
	bool neg = diff__delta(base, new, &mag);

	snprintf(buf, len, "%s%" PRIu64, mag ? (neg ? "-" : "+") : "", mag);
}

/* Two decimals; a change that rounds to 0.00 carries no sign. */
static void fmt_pct(char *buf, size_t len, double pct, const char *suffix)
{
	if (fabs(pct) < 0.005)
		snprintf(buf, len, "0.00%s", suffix);
	else
		snprintf(buf, len, "%+.2f%s", pct, suffix);
}

enum col {
	C_ITEM, C_STATUS, C_SELF, C_SELF_D, C_SELF_PCT, C_TIME, C_TIME_D,
	C_COUNT, C_COUNT_D, C_CACHE, C_CACHE_D, C_BLOCKED, C_BLOCKED_D,
	C_INCR, C_INCR_D, NCOLS,
};

static const char *const col_titles[NCOLS] = {
	[C_ITEM] = "Item",
	[C_STATUS] = "Status",
	[C_SELF] = "Self time",
	[C_SELF_D] = "Self change",
	[C_SELF_PCT] = "Self change %",
	[C_TIME] = "Time",
	[C_TIME_D] = "Time change",
	[C_COUNT] = "Item count",
	[C_COUNT_D] = "Count change",
	[C_CACHE] = "Cache hits",
	[C_CACHE_D] = "Hits change",
	[C_BLOCKED] = "Blocked time",
	[C_BLOCKED_D] = "Blocked change",
	[C_INCR] = "Incr. load time",
	[C_INCR_D] = "Incr. change",
};

static const char *const status_names[] = {
	[DIFF_BOTH] = "both", [DIFF_NEW] = "new", [DIFF_GONE] = "gone",
};

static int table_row(struct text_table *t, const struct diff_row *r,
		     bool total)
{
	char bufs[NCOLS][CELL_BUF];
	const char *text[NCOLS];
	const struct diff_figs *b = &r->base, *n = &r->new;
	unsigned int c;
	double pct;

	for (c = 0; c < NCOLS; c++) {
		bufs[c][0] = '\0';
		text[c] = bufs[c];
	}
	text[C_ITEM] = r->name;
	if (!total && r->status != DIFF_BOTH)
		text[C_STATUS] = status_names[r->status];
	text__fmt_ns(bufs[C_SELF], CELL_BUF, n->self_ns);
	fmt_delta_ns(bufs[C_SELF_D], CELL_BUF, b->self_ns, n->self_ns);
	if (diff__self_pct(r, &pct))
		fmt_pct(bufs[C_SELF_PCT], CELL_BUF, pct, "%");
	else
		text[C_SELF_PCT] = n->self_ns ? "new" : "-";
	text__fmt_ns(bufs[C_TIME], CELL_BUF, n->total_ns);
	fmt_delta_ns(bufs[C_TIME_D], CELL_BUF, b->total_ns, n->total_ns);
	snprintf(bufs[C_COUNT], CELL_BUF, "%" PRIu64, n->count);
	fmt_delta_u64(bufs[C_COUNT_D], CELL_BUF, b->count, n->count);
	snprintf(bufs[C_CACHE], CELL_BUF, "%" PRIu64, n->cache_hits);
	fmt_delta_u64(bufs[C_CACHE_D], CELL_BUF, b->cache_hits, n->cache_hits);
	text__fmt_ns(bufs[C_BLOCKED], CELL_BUF, n->blocked_ns);
	fmt_delta_ns(bufs[C_BLOCKED_D], CELL_BUF, b->blocked_ns, n->blocked_ns);
	text__fmt_ns(bufs[C_INCR], CELL_BUF, n->incr_load_ns);
	fmt_delta_ns(bufs[C_INCR_D], CELL_BUF, b->incr_load_ns,
		     n->incr_load_ns);
	return text_table__add_row(t, text);
}

/*
 * Fitting `width` characters (120 by default, docs/formats.md), decided on
 * titles, not figures, as for the summary table: each shown column counts
 * as its title plus 3, the Item column as DIFF_FIT_ITEM; while wider,
 * leave out (pairs together) incremental load, blocked, cache hits, then
 * Time change, Count change, Self change %. The Item column gets the rest.
 */
#define DIFF_FIT_ITEM 24

static unsigned int diff_fit(struct text_col *cols, unsigned int width,
			     const char **dropped)
{
	static const int order[][2] = {
		{ C_INCR, C_INCR_D }, { C_BLOCKED, C_BLOCKED_D },
		{ C_CACHE, C_CACHE_D }, { C_TIME_D, -1 }, { C_COUNT_D, -1 },
		{ C_SELF_PCT, -1 },
	};
	unsigned int total = 1 + DIFF_FIT_ITEM + 3, c, i, k, n = 0;

	for (c = C_ITEM + 1; c < NCOLS; c++)
		if (!cols[c].hidden)
			total += (unsigned int)strlen(col_titles[c]) + 3;
	for (i = 0; total > width && i < sizeof(order) / sizeof(order[0]); i++) {
		for (k = 0; k < 2 && order[i][k] >= 0; k++) {
			c = (unsigned int)order[i][k];
			if (cols[c].hidden)
				continue;
			cols[c].hidden = true;
			total -= (unsigned int)strlen(col_titles[c]) + 3;
			dropped[n++] = col_titles[c];
		}
	}
	c = width > total ? DIFF_FIT_ITEM + (width - total) : DIFF_FIT_ITEM;
	cols[C_ITEM].max_width = c < NAME_MAX_WIDTH ? c : NAME_MAX_WIDTH;
	return n;
}

int diff__write_table(FILE *out, const struct diff *d, const char *base_name,
		      const char *new_name)
{
	return diff__write_table_fit(out, d, base_name, new_name, 0);
}

int diff__write_table_fit(FILE *out, const struct diff *d,
			  const char *base_name, const char *new_name,
			  unsigned int width)
{
	const char *dropped[NCOLS];
	unsigned int ndropped = 0;
	const struct diff_figs *tb = &d->total.base, *tn = &d->total.new;
	char bdur[CELL_BUF], ndur[CELL_BUF];
	char *bname = NULL, *nname = NULL;
	struct text_col cols[NCOLS];
	struct text_table t;
	unsigned int i, c, w;
	int err;

	for (c = 0; c < NCOLS; c++) {
		cols[c] = (struct text_col){
			.title = col_titles[c],
			.align = c <= C_STATUS ? TEXT_LEFT : TEXT_RIGHT,
			.max_width = c == C_ITEM ? NAME_MAX_WIDTH : 0,
		};
	}
	/* Optional pairs as in the summary table: shown when any query has
	 * a non-zero figure in either run, i.e. when a total is non-zero. */
	cols[C_STATUS].hidden = !d->nnew && !d->ngone;
	cols[C_CACHE].hidden = cols[C_CACHE_D].hidden =
		!tb->cache_hits && !tn->cache_hits;
	cols[C_BLOCKED].hidden = cols[C_BLOCKED_D].hidden =
		!tb->blocked_ns && !tn->blocked_ns;
	cols[C_INCR].hidden = cols[C_INCR_D].hidden =
		!tb->incr_load_ns && !tn->incr_load_ns;
	if (width)
		ndropped = diff_fit(cols, width, dropped);
	err = text_table__init(&t, cols, NCOLS);
	if (!err)
		err = table_row(&t, &d->total, true);
	for (i = 0; !err && i < d->nrows; i++)
		err = table_row(&t, &d->rows[i], false);
	if (!err) {
		bname = text__display(base_name, UINT_MAX, &w);
		nname = text__display(new_name, UINT_MAX, &w);
		if (!bname || !nname)
			err = -ENOMEM;
	}
	if (err)
		goto cleanup;
	text__fmt_ns(bdur, sizeof(bdur), d->base_duration_ns);
	text__fmt_ns(ndur, sizeof(ndur), d->new_duration_ns);
	fprintf(out, "sptrace diff: %s -> %s: %u queries (%u new, %u gone), "
		"duration %s -> %s\n", bname, nname, d->nrows, d->nnew,
		d->ngone, bdur, ndur);
	text_table__print(out, &t);
	if (ndropped) {
		fprintf(out, "%u columns left out to fit %u characters:",
			ndropped, width);
		for (i = 0; i < ndropped; i++)
			fprintf(out, "%s %s", i ? "," : "", dropped[i]);
		fputs(" (--wide shows every column)\n", out);
	}
	err = text__flush(out);
cleanup:
	free(bname);
	free(nname);
	text_table__free(&t);
	return err;
}

static void json_figs(struct json_writer *w, const char *key,
		      const struct diff_figs *f)
{
	jsonw__name(w, key);
	jsonw__start_object(w);
	jsonw__u64_field(w, "self_ns", f->self_ns);
	jsonw__u64_field(w, "total_ns", f->total_ns);
	jsonw__u64_field(w, "count", f->count);
	jsonw__u64_field(w, "cache_hits", f->cache_hits);
	jsonw__u64_field(w, "blocked_ns", f->blocked_ns);
	jsonw__u64_field(w, "incr_load_ns", f->incr_load_ns);
	jsonw__end_object(w);
}

/* A signed difference printed exactly, whatever its size. */
static void json_delta(struct json_writer *w, const char *key, uint64_t base,
		       uint64_t new)
{
	uint64_t mag;
	bool neg = diff__delta(base, new, &mag);
	char num[32];

	snprintf(num, sizeof(num), "%s%" PRIu64, neg ? "-" : "", mag);
	jsonw__name(w, key);
	jsonw__number(w, num);
}

static void json_deltas(struct json_writer *w, const struct diff_figs *b,
			const struct diff_figs *n)
{
	jsonw__name(w, "delta");
	jsonw__start_object(w);
	json_delta(w, "self_ns", b->self_ns, n->self_ns);
	json_delta(w, "total_ns", b->total_ns, n->total_ns);
	json_delta(w, "count", b->count, n->count);
	json_delta(w, "cache_hits", b->cache_hits, n->cache_hits);
	json_delta(w, "blocked_ns", b->blocked_ns, n->blocked_ns);
	json_delta(w, "incr_load_ns", b->incr_load_ns, n->incr_load_ns);
	jsonw__end_object(w);
}

/* The members every row has: base, new, delta, self_pct. */
static void json_row_body(struct json_writer *w, const struct diff_row *r)
{
	char pct[CELL_BUF];
	double v;

	json_figs(w, "base", &r->base);
	json_figs(w, "new", &r->new);
	json_deltas(w, &r->base, &r->new);
	jsonw__name(w, "self_pct");
	if (diff__self_pct(r, &v)) {
		fmt_pct(pct, sizeof(pct), v, "");
		/* JSON numbers have no leading '+'. */
		jsonw__number(w, pct[0] == '+' ? pct + 1 : pct);
	} else {
		jsonw__null(w);
	}
}

int diff__write_json(FILE *out, const struct diff *d, const char *base_name,
		     const char *new_name)
{
	struct json_writer w;
	unsigned int i;

	jsonw__init(&w, out);
	jsonw__start_object(&w);
	jsonw__string_field(&w, "base", base_name);
	jsonw__string_field(&w, "new", new_name);
	jsonw__break(&w);
	jsonw__name(&w, "duration_ns");
	jsonw__start_object(&w);
	jsonw__u64_field(&w, "base", d->base_duration_ns);
	jsonw__u64_field(&w, "new", d->new_duration_ns);
	json_delta(&w, "delta", d->base_duration_ns, d->new_duration_ns);
	jsonw__end_object(&w);
	jsonw__break(&w);
	jsonw__name(&w, "total");
	jsonw__start_object(&w);
	json_row_body(&w, &d->total);
	jsonw__end_object(&w);
	jsonw__break(&w);
	jsonw__name(&w, "queries");
	jsonw__start_array(&w);
	for (i = 0; i < d->nrows; i++) {
		const struct diff_row *r = &d->rows[i];

		jsonw__break(&w);
		jsonw__start_object(&w);
		jsonw__string_field(&w, "name", r->name);
		jsonw__string_field(&w, "status", status_names[r->status]);
		json_row_body(&w, r);
		jsonw__end_object(&w);
	}
	jsonw__break(&w);
	jsonw__end_array(&w);
	jsonw__end_object(&w);
	fputc('\n', out);
	return jsonw__finish(&w);
}
