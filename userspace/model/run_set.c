// SPDX-License-Identifier: MIT
/*
 * A set of runs, one value per run for each query and figure (run_set.h):
 * rows are collected as they come (any order, several per name and run),
 * then sorted once and joined.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "run_set.h"
#include "vec.h"

struct run_set_row {
	char *name;			/* joined name */
	unsigned int run;
	uint64_t fig[FIG__MAX];
};

static const char *const fig_keys[FIG__MAX] = {
	[FIG_SELF] = "self_ns", [FIG_TOTAL] = "total_ns",
	[FIG_BLOCKED] = "blocked_ns", [FIG_INCR] = "incr_load_ns",
	[FIG_P50] = "p50_ns", [FIG_P99] = "p99_ns", [FIG_COUNT] = "count",
	[FIG_CACHE_HITS] = "cache_hits", [FIG_BLOCKED_COUNT] = "blocked_count",
	[FIG_INCR_LOADS] = "incr_loads",
};

const char *run_fig__key(enum run_fig f)
{
	return f < FIG__MAX ? fig_keys[f] : "?";
}

int run_set__init(struct run_set *s, const int64_t *ids, unsigned int nruns)
{
	memset(s, 0, sizeof(*s));
	s->ids = malloc((nruns ? nruns : 1) * sizeof(*s->ids));
	if (!s->ids)
		return -ENOMEM;
	if (nruns)
		memcpy(s->ids, ids, nruns * sizeof(*ids));
	s->nruns = nruns;
	return 0;
}

static void rows_free(struct run_set *s)
{
	size_t i;

	for (i = 0; i < s->nrows; i++)
		free(s->rows[i].name);
	free(s->rows);
	s->rows = NULL;
	s->nrows = s->rows_cap = 0;
}

void run_set__free(struct run_set *s)
{
	unsigned int i;

	for (i = 0; i < s->nq; i++) {
		free(s->q[i].name);
		free(s->q[i].v);
	}
	free(s->q);
	free(s->ids);
	rows_free(s);
	memset(s, 0, sizeof(*s));
}

int run_set__add(struct run_set *s, unsigned int run, const char *name,
		 const uint64_t fig[FIG__MAX])
{
	struct run_set_row *r;

	if (run >= s->nruns)
		return -EINVAL;
	if (VEC_RESERVE(s->rows, s->rows_cap, s->nrows + 1))
		return -ENOMEM;
	r = &s->rows[s->nrows];
	r->name = diff__clean_name(name);
	if (!r->name)
		return -ENOMEM;
	r->run = run;
	memcpy(r->fig, fig, sizeof(r->fig));
	s->nrows++;
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct run_set_row *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->run < y->run ? -1 : x->run > y->run;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int run_set__finish(struct run_set *s)
{
	struct run_set_query *q, *cur = NULL;
	size_t i, nq = 0;
	unsigned int f;

	if (s->nrows)	/* no rows: rows may be NULL, which qsort() must not get */
		qsort(s->rows, s->nrows, sizeof(*s->rows), cmp_row);
	for (i = 0; i < s->nrows; i++)
		nq += !i || strcmp(s->rows[i].name, s->rows[i - 1].name);
	q = calloc(nq ? nq : 1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	s->q = q;
	s->nq = 0;
	for (i = 0; i < s->nrows; i++) {
		struct run_set_row *r = &s->rows[i];
		uint64_t *v;

		if (!cur || strcmp(r->name, cur->name)) {
			cur = &q[s->nq];
			cur->v = calloc((size_t)s->nruns * FIG__MAX,
					sizeof(*cur->v));
			if (!cur->v)
				return -ENOMEM;
			cur->name = r->name;	/* moves */
			r->name = NULL;
			s->nq++;
			cur->present++;
		} else if (s->rows[i - 1].run != r->run) {
			cur->present++;
		}
		v = &cur->v[(size_t)r->run * FIG__MAX];
		for (f = 0; f < FIG__MAX; f++)
			v[f] = f == FIG_P50 || f == FIG_P99 ?
			       (r->fig[f] > v[f] ? r->fig[f] : v[f]) :
			       sat_add(v[f], r->fig[f]);
	}
	rows_free(s);
	return 0;
}

static int cmp_key(const void *key, const void *q)
{
	return strcmp(key, ((const struct run_set_query *)q)->name);
}

const struct run_set_query *run_set__find(const struct run_set *s,
					  const char *name)
{
	return s->nq ? bsearch(name, s->q, s->nq, sizeof(*s->q), cmp_key)
		     : NULL;
}
