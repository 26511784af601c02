// SPDX-License-Identifier: MIT
/* Trends of a history: each run against the runs before it (trend.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "trend.h"

int trend__build(struct trend *t, const struct run_set *s,
		 const unsigned int *group, unsigned int window,
		 double threshold)
{
	unsigned int q, i, j, n, nr = s->nruns;
	double *x, *tmp;
	struct stats_work w;
	int err = 0;

	memset(t, 0, sizeof(*t));
	t->nruns = nr;
	t->nq = s->nq;
	t->p = calloc((size_t)s->nq * nr + 1, sizeof(*t->p));
	t->breaks = calloc((size_t)s->nq + 1, sizeof(*t->breaks));
	x = malloc((nr + 1) * sizeof(*x));
	tmp = malloc((nr + 1) * sizeof(*tmp));
	if (!t->p || !t->breaks || !x || !tmp) {
		free(x);
		free(tmp);
		trend__free(t);
		return -ENOMEM;
	}
	stats_work__init(&w);
	for (q = 0; !err && q < s->nq; q++) {
		const uint64_t *v = s->q[q].v;

		for (i = 0; !err && i < nr; i++) {
			struct trend_point *p = &t->p[(size_t)q * nr + i];
			uint64_t y = v[(size_t)i * FIG__MAX + FIG_SELF];

			/* The latest `window` earlier runs of its group,
			 * gathered newest first, then turned oldest first. */
			for (j = i, n = 0; j-- > 0 && n < window;) {
				uint64_t e = v[(size_t)j * FIG__MAX + FIG_SELF];

				if (group[j] == group[i])
					x[n++] = log(e ? (double)e : 1.0);
			}
			if (n < 4)
				continue;
			for (j = 0; j < n / 2; j++) {
				double t0 = x[j];

				x[j] = x[n - 1 - j];
				x[n - 1 - j] = t0;
			}
			err = verdict__judge_history(&w, x, n,
						     log(y ? (double)y : 1.0),
						     threshold, tmp, &p->ratio,
						     &p->fence, &p->v);
			p->judged = true;
			if (p->v == VERDICT_REGRESSED || p->v == VERDICT_IMPROVED)
				t->breaks[q]++;
		}
	}
	stats_work__free(&w);
	free(x);
	free(tmp);
	if (err)
		trend__free(t);
	return err;
}

void trend__free(struct trend *t)
{
	free(t->p);
	free(t->breaks);
	memset(t, 0, sizeof(*t));
}
