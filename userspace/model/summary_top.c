// SPDX-License-Identifier: MIT
/*
 * serve --top N: the rows a scrape shows (see summary_top.h).
 */
#include <errno.h>
#include <string.h>
#include "summary_top.h"

static int copy_row(struct summary *out, const struct sp_query_row *r,
		    const char *name)
{
	unsigned int i;
	int err;

	err = summary__add_stats_pid(out, name, r->pid, &r->st);
	for (i = 0; !err && i < r->nbins; i++)
		err = summary__add_hist_pid(out, name, r->pid,
					    r->bins[i].bucket,
					    r->bins[i].count);
	return err;
}

int summary__top(struct summary *in, unsigned int n, struct summary *out,
		 unsigned int *folded)
{
	unsigned int i;
	int err = 0;

	*folded = 0;
	out->per_pid = in->per_pid;
	out->duration_ns = in->duration_ns;
	summary__copy_counts(out, in);
	err = summary__copy_titles(out, in);
	summary__sort(in, SORT_SELF);
	for (i = 0; !err && i < in->nrows; i++) {
		const struct sp_query_row *r = &in->rows[i];

		if (i < n) {
			err = copy_row(out, r, r->name);
		} else {
			err = copy_row(out, r, SUMMARY_TOP_OTHER);
			(*folded)++;
		}
	}
	return err;
}
