// SPDX-License-Identifier: MIT
/* The trends of a history as a table or JSON (trend_writer.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_writer.h"
#include "stats_writer.h"
#include "text.h"
#include "text_table.h"
#include "trend_writer.h"
#include "verdict_writer.h"

#define CELL 64

void trend__fmt_point(char *buf, size_t len, const struct trend_point *p)
{
	char pct[CELL];

	buf[0] = 0;
	if (!p->judged ||
	    (p->v != VERDICT_REGRESSED && p->v != VERDICT_IMPROVED))
		return;
	verdict__fmt_ratio(pct, sizeof(pct), p->ratio);
	snprintf(buf, len, "%s %s", verdict__name(p->v), pct);
}

/* The order of the rows: most breaks first, then by name. */
struct order {
	unsigned int q, breaks;
	const char *name;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->breaks != y->breaks)
		return x->breaks > y->breaks ? -1 : 1;
	return strcmp(x->name, y->name);
}

enum col { C_NAME, C_RUNS, C_LATEST, C_TREND, C_BREAKS, NCOLS };

int trend__write_table(FILE *out, const struct run_set *s,
		       const struct trend *t, bool all, unsigned int width)
{
	static const struct text_col cols[NCOLS] = {
		[C_NAME] = { "Query", TEXT_LEFT, false, 60, 20 },
		[C_RUNS] = { "Runs", TEXT_RIGHT, false, 0, 0 },
		[C_LATEST] = { "Self (latest)", TEXT_RIGHT, false, 0, 0 },
		[C_TREND] = { "Self time, run by run", TEXT_LEFT, false, 0, 0 },
		[C_BREAKS] = { "Runs that broke the trend", TEXT_LEFT, false, 0, 24 },
	};
	static const unsigned int drop[] = { C_LATEST };
	unsigned int i, j, k, first, shown = 0, nr = s->nruns;
	char runs[24], latest[24], *spark = NULL, *brk = NULL;
	struct order *ord;
	struct text_table tt;
	size_t cap;
	int err;

	ord = calloc(s->nq + 1, sizeof(*ord));
	cap = (size_t)nr * 48 + TREND_SPARK_RUNS * 4 + 16;
	spark = malloc(TREND_SPARK_RUNS * 4 + 4);
	brk = malloc(cap);
	if (!ord || !spark || !brk) {
		free(ord);
		free(spark);
		free(brk);
		return -ENOMEM;
	}
	for (i = 0; i < s->nq; i++)
		ord[i] = (struct order){ i, t->breaks[i], s->q[i].name };
	if (s->nq > 1)
		qsort(ord, s->nq, sizeof(*ord), cmp_order);
	first = nr > TREND_SPARK_RUNS ? nr - TREND_SPARK_RUNS : 0;
	err = text_table__init(&tt, cols, NCOLS);
	for (i = 0; !err && i < s->nq; i++) {
		const struct run_set_query *q = &s->q[ord[i].q];
		const char *cells[NCOLS];
		uint64_t max = 0, v;
		size_t at = 0;

		if (!all && !ord[i].breaks)
			continue;
		shown++;
		for (j = first; j < nr; j++) {
			v = q->v[(size_t)j * FIG__MAX + FIG_SELF];
			if (v > max)
				max = v;
		}
		spark[0] = 0;
		for (j = first; j < nr; j++)
			strcat(spark, text_table__spark(
				q->v[(size_t)j * FIG__MAX + FIG_SELF], max));
		brk[0] = 0;
		for (j = 0, k = 0; j < nr; j++) {
			const struct trend_point *p =
				&t->p[(size_t)ord[i].q * nr + j];
			char one[CELL];

			trend__fmt_point(one, sizeof(one), p);
			if (!one[0])
				continue;
			at += (size_t)snprintf(brk + at, cap - at, "%srun %" PRId64 " %s",
					       k++ ? ", " : "", s->ids[j], one);
		}
		snprintf(runs, sizeof(runs), "%u", q->present);
		text__fmt_ns(latest, sizeof(latest),
			     q->v[(size_t)(nr - 1) * FIG__MAX + FIG_SELF]);
		cells[C_NAME] = q->name;
		cells[C_RUNS] = runs;
		cells[C_LATEST] = latest;
		cells[C_TREND] = spark;
		cells[C_BREAKS] = brk;
		err = text_table__add_row(&tt, cells);
	}
	if (!err && shown)
		err = text_table__print_fitted(out, &tt, width, drop,
					       sizeof(drop) / sizeof(drop[0]));
	else if (!err)
		fprintf(out, "No query broke its trend in these %u runs.\n", nr);
	if (!err && shown < s->nq)
		fprintf(out, "%u quer%s without a break not shown (--all shows every query).\n",
			s->nq - shown, s->nq - shown == 1 ? "y" : "ies");
	if (!err)
		fprintf(out, "Each run is judged against the up to 30 runs before it of the same command:\n"
			"it breaks a query's trend when its self time is beyond their noise fence\n"
			"(Q3 + 3 x IQR of their run-to-run changes) and the threshold (sptrace diff\n"
			"--history does the same for one run; docs/numbers.md).\n");
	text_table__free(&tt);
	free(ord);
	free(spark);
	free(brk);
	return err ? err : text__flush(out);
}


int trend__write_json(FILE *out, const struct run_set *s,
		      const struct trend *t)
{
	unsigned int i, j, nr = s->nruns;
	struct json_writer w;

	jsonw__init(&w, out);
	jsonw__start_object(&w);
	jsonw__name(&w, "runs");
	jsonw__start_array(&w);
	for (j = 0; j < nr; j++)
		jsonw__i64(&w, s->ids[j]);
	jsonw__end_array(&w);
	jsonw__name(&w, "trends");
	jsonw__start_array(&w);
	for (i = 0; i < s->nq; i++) {
		const struct run_set_query *q = &s->q[i];

		jsonw__break(&w);
		jsonw__start_object(&w);
		jsonw__string_field(&w, "name", q->name);
		jsonw__u64_field(&w, "present", q->present);
		jsonw__u64_field(&w, "breaks", t->breaks[i]);
		jsonw__name(&w, "self_ns");
		jsonw__start_array(&w);
		for (j = 0; j < nr; j++)
			jsonw__u64(&w, q->v[(size_t)j * FIG__MAX + FIG_SELF]);
		jsonw__end_array(&w);
		jsonw__name(&w, "judged");
		jsonw__start_array(&w);
		for (j = 0; j < nr; j++) {
			const struct trend_point *p = &t->p[(size_t)i * nr + j];

			if (!p->judged) {
				jsonw__null(&w);
				continue;
			}
			jsonw__start_object(&w);
			jsonw__string_field(&w, "verdict", verdict__key(p->v));
			jsonw__double_field(&w, "ratio", p->ratio);
			jsonw__double_field(&w, "fence", isnan(p->fence) ?
						  NAN : exp(p->fence) - 1);
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
