// SPDX-License-Identifier: MIT
/*
 * Summarizing a trace file. Intervals come from replay.c (the BPF program's
 * stack arithmetic); each is added to its name's row exactly as
 * bpf/query.bpf.c adds it in the kernel (count/min/max/hist for queries,
 * blocked and incremental-load columns for those frames). Rows are kept by
 * string id in dense arrays while reading, which is what makes tens of
 * millions of events per second possible, and handed to the summary at the
 * end, where rows merge by name as live rows do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sptrace/hist.h>
#include "log.h"
#include "replay.h"
#include "trace_format.h"
#include "trace_summary.h"

struct name_row {
	struct sp_query_stats st;
	uint64_t *hist;		/* SP_HIST_BUCKETS counts, or NULL */
	bool used;
};

struct aggregator {
	struct name_row *rows;	/* indexed by string id */
	uint32_t nrows;
	uint64_t no_string;	/* intervals whose name id was out of range */
};

static struct name_row *row_for(struct aggregator *a, uint32_t id)
{
	if (id >= a->nrows) {
		uint32_t n = a->nrows ? a->nrows : 256;
		struct name_row *v;

		if (id == TRACE_NO_STRING)
			return NULL;
		while (n <= id)
			n *= 2;
		v = realloc(a->rows, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + a->nrows, 0, (n - a->nrows) * sizeof(*v));
		a->rows = v;
		a->nrows = n;
	}
	a->rows[id].used = true;
	return &a->rows[id];
}

/* The same arithmetic as end_at() and cache_hit_at() in
 * bpf/query_core.bpf.h. */
static int add_interval(void *ctx, const struct replay_interval *iv)
{
	struct aggregator *a = ctx;
	struct name_row *r = row_for(a, iv->name_id);
	struct sp_query_stats *st;

	if (!r) {
		if (iv->name_id != TRACE_NO_STRING)
			return -ENOMEM;
		a->no_string++;
		return 0;
	}
	st = &r->st;
	if (iv->cache_hit) {
		st->cache_hits++;
		return 0;
	}
	st->total_ns += iv->total_ns;
	st->self_ns += iv->self_ns;
	switch (iv->kind) {
	case SP_FRAME_QUERY:
		if (!st->count || iv->total_ns < st->min_ns)
			st->min_ns = iv->total_ns;
		if (iv->total_ns > st->max_ns)
			st->max_ns = iv->total_ns;
		st->count++;
		if (!r->hist) {
			r->hist = calloc(SP_HIST_BUCKETS, sizeof(*r->hist));
			if (!r->hist)
				return -ENOMEM;
		}
		r->hist[sp_hist_bucket(iv->total_ns)]++;
		break;
	case SP_FRAME_BLOCKED:
		st->blocked_count++;
		st->blocked_ns += iv->total_ns;
		break;
	case SP_FRAME_INCR_LOAD:
		st->incr_loads++;
		st->incr_load_ns += iv->total_ns;
		break;
	}
	return 0;
}

static int to_summary(struct aggregator *a, struct trace_reader *r,
		      struct summary *s)
{
	uint32_t id, b;
	int err;

	for (id = 0; id < a->nrows; id++) {
		struct name_row *row = &a->rows[id];
		const char *name;

		if (!row->used)
			continue;
		name = trace_reader__string(r, id);
		if (!name)
			name = "<unnamed>";
		err = summary__add_stats(s, name, &row->st);
		for (b = 0; !err && row->hist && b < SP_HIST_BUCKETS; b++)
			if (row->hist[b])
				err = summary__add_hist(s, name, b, row->hist[b]);
		if (err)
			return err;
	}
	return 0;
}

int trace_summary__read(const char *path, struct summary *s)
{
	struct aggregator a = { 0 };
	const char *const *warn;
	struct trace_reader *r;
	struct trace_stats ts;
	struct trace_event ev;
	struct replay rp;
	uint64_t last_ts = 0;
	char msg[512];
	int err, i;

	err = trace_reader__open(path, &r, msg, sizeof(msg));
	if (err) {
		sp_err("%s", msg);
		return err;
	}
	replay__init(&rp, add_interval, &a);
	while ((err = trace_reader__next(r, &ev)) > 0) {
		/* The latest, not the last: batched events reach the file
		 * when their thread's ring is drained, after other threads'. */
		if (ev.ts_ns > last_ts)
			last_ts = ev.ts_ns;
		err = replay__event(&rp, &ev);
		if (err)
			break;
	}
	if (err < 0) {
		sp_err("%s: %s", path, strerror(-err));
		goto out;
	}
	replay__finish(&rp);
	for (warn = trace_reader__warnings(r); warn && *warn; warn++)
		sp_warn("%s", *warn);
	trace_reader__stats(r, &ts);
	err = to_summary(&a, r, s);
	if (err) {
		sp_err("%s: %s", path, strerror(-err));
		goto out;
	}
	for (i = 0; i < SP_ERR__MAX; i++)
		s->errors[i] += rp.errors[i];
	s->lost += ts.footer_lost;
	if (last_ts > trace_reader__header(r)->start_mono_ns)
		s->duration_ns = last_ts - trace_reader__header(r)->start_mono_ns;
	if (a.no_string)
		sp_warn("%s: %llu intervals name a string the file does not hold; left out",
			path, (unsigned long long)a.no_string);
	if (rp.open_at_end)
		sp_info("%s: %llu intervals still open when the recording ended",
			path, (unsigned long long)rp.open_at_end);
out:
	for (i = 0; i < (int)a.nrows; i++)
		free(a.rows[i].hist);
	free(a.rows);
	replay__free(&rp);
	trace_reader__close(r);
	return err;
}
