// SPDX-License-Identifier: MIT
/* The statistics of one set of runs (run_stats.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "run_stats.h"

static int cmp_row(const void *a, const void *b)
{
	const struct run_stats_row *x = a, *y = b;
	double mx = x->f[FIG_SELF].median, my = y->f[FIG_SELF].median;

	if (mx != my)
		return mx > my ? -1 : 1;
	return strcmp(x->name, y->name);
}

int run_stats__build(struct run_stats *st, const struct run_set *s)
{
	struct stats_work w;
	unsigned int i, r, f;
	double *v;
	int err = 0;

	memset(st, 0, sizeof(*st));
	st->nruns = s->nruns;
	st->rows = calloc(s->nq ? s->nq : 1, sizeof(*st->rows));
	v = malloc((s->nruns ? s->nruns : 1) * sizeof(*v));
	if (!st->rows || !v) {
		free(v);
		run_stats__free(st);
		return -ENOMEM;
	}
	stats_work__init(&w);
	for (i = 0; !err && i < s->nq; i++) {
		const struct run_set_query *q = &s->q[i];
		struct run_stats_row *row = &st->rows[i];

		row->name = q->name;
		row->present = q->present;
		for (f = 0; !err && f < FIG__MAX; f++) {
			for (r = 0; r < s->nruns; r++)
				v[r] = (double)q->v[(size_t)r * FIG__MAX + f];
			err = stats__describe(&w, v, s->nruns, &row->f[f]);
		}
	}
	st->nrows = s->nq;
	stats_work__free(&w);
	free(v);
	if (err) {
		run_stats__free(st);
		return err;
	}
	if (st->nrows > 1)
		qsort(st->rows, st->nrows, sizeof(*st->rows), cmp_row);
	return 0;
}

void run_stats__free(struct run_stats *st)
{
	free(st->rows);
	memset(st, 0, sizeof(*st));
}
