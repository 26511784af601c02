// SPDX-License-Identifier: MIT
/*
 * Per-interval figures of continuous mode: the cumulative read of this
 * tick minus the one of the previous tick, row by row (interval.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "exited_rows.h"
#include "interval.h"
#include "clock.h"
#include "log.h"
#include "output.h"
#include "json_out.h"
#include "json_writer.h"
#include "summary_writer.h"
#include "table.h"
#include "text.h"
#include "session.h"

void interval__init(struct interval *iv)
{
	summary__init(&iv->prev);
	iv->prev.per_pid = true;
}

void interval__free(struct interval *iv)
{
	summary__free(&iv->prev);
}

static int row_cmp(const void *a, const void *b)
{
	const struct sp_query_row *x = *(const struct sp_query_row *const *)a;
	const struct sp_query_row *y = *(const struct sp_query_row *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static bool in_set(const uint32_t *v, size_t n, uint32_t pid)
{
	return n && bsearch(&pid, v, n, sizeof(pid), u32_cmp);
}

static int copy_summary(struct summary *dst, const struct summary *src,
			const uint32_t *folded, size_t nfolded)
{
	unsigned int i;
	int err = 0;

	summary__init(dst);
	dst->per_pid = true;
	for (i = 0; !err && i < src->nrows; i++) {
		const struct sp_query_row *r = &src->rows[i];

		err = exited_rows__add_row(dst, r, in_set(folded, nfolded, r->pid) ?
						     0 : r->pid);
	}
	summary__copy_counts(dst, src);
	dst->duration_ns = src->duration_ns;
	if (err)
		summary__free(dst);
	return err;
}

static uint64_t sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* One row of cur minus its prev (NULL: none). */
static int delta_row(struct summary *out, const struct sp_query_row *c,
		     const struct sp_query_row *p)
{
	static const struct sp_query_row none;
	struct sp_query_stats d;
	unsigned int i, j = 0;
	uint32_t lo_b = 0, hi_b = 0;
	bool any = false;
	int err;

	if (!p)
		p = &none;
	d.count = sub(c->st.count, p->st.count);
	d.total_ns = sub(c->st.total_ns, p->st.total_ns);
	d.self_ns = sub(c->st.self_ns, p->st.self_ns);
	d.cache_hits = sub(c->st.cache_hits, p->st.cache_hits);
	d.incr_loads = sub(c->st.incr_loads, p->st.incr_loads);
	d.incr_load_ns = sub(c->st.incr_load_ns, p->st.incr_load_ns);
	d.blocked_count = sub(c->st.blocked_count, p->st.blocked_count);
	d.blocked_ns = sub(c->st.blocked_ns, p->st.blocked_ns);
	d.min_ns = d.max_ns = 0;
	if (!d.count && !d.total_ns && !d.self_ns && !d.cache_hits &&
	    !d.incr_loads && !d.blocked_count)
		return 0;
	for (i = 0; i < c->nbins; i++) {
		uint64_t n = c->bins[i].count;

		while (j < p->nbins && p->bins[j].bucket < c->bins[i].bucket)
			j++;
		if (j < p->nbins && p->bins[j].bucket == c->bins[i].bucket)
			n = sub(n, p->bins[j].count);
		if (!n)
			continue;
		if (!any)
			lo_b = c->bins[i].bucket;
		hi_b = c->bins[i].bucket;
		any = true;
		err = summary__add_hist_pid(out, c->name, c->pid,
					    c->bins[i].bucket, n);
		if (err)
			return err;
	}
	if (d.count) {
		/* A new extreme in the interval is the interval's extreme;
		 * otherwise its histogram bounds it. */
		if (!p->st.count || c->st.min_ns < p->st.min_ns)
			d.min_ns = c->st.min_ns;
		else if (any)
			d.min_ns = sp_hist_bucket_lo(lo_b) > c->st.min_ns ?
					   sp_hist_bucket_lo(lo_b) : c->st.min_ns;
		if (c->st.max_ns > p->st.max_ns)
			d.max_ns = c->st.max_ns;
		else if (any)
			d.max_ns = sp_hist_bucket_hi(hi_b) - 1 < c->st.max_ns ?
					   sp_hist_bucket_hi(hi_b) - 1 :
					   c->st.max_ns;
		if (d.min_ns > d.max_ns)
			d.min_ns = d.max_ns;
	}
	return summary__add_stats_pid(out, c->name, c->pid, &d);
}

int interval__delta(struct interval *iv, const struct summary *cur,
		    const uint32_t *folded, size_t nfolded,
		    struct summary *out)
{
	const struct sp_query_row **idx = NULL;
	struct summary prev, next;
	unsigned int i;
	int err = 0;

	out->per_pid = true;
	if (nfolded) {
		err = copy_summary(&prev, &iv->prev, folded, nfolded);
		if (err)
			return err;
		summary__free(&iv->prev);
		iv->prev = prev;
	}
	if (iv->prev.nrows) {
		idx = malloc(iv->prev.nrows * sizeof(*idx));
		if (!idx)
			return -ENOMEM;
		for (i = 0; i < iv->prev.nrows; i++)
			idx[i] = &iv->prev.rows[i];
		qsort(idx, iv->prev.nrows, sizeof(*idx), row_cmp);
	}
	for (i = 0; !err && i < cur->nrows; i++) {
		const struct sp_query_row *c = &cur->rows[i], *const *p = NULL;

		if (idx)
			p = bsearch(&c, idx, iv->prev.nrows, sizeof(*idx),
				    row_cmp);
		err = delta_row(out, c, p ? *p : NULL);
	}
	for (i = 0; i < SP_ERR__MAX; i++)
		out->errors[i] = sub(cur->errors[i], iv->prev.errors[i]);
	out->lost = sub(cur->lost, iv->prev.lost);
	out->events_mode = cur->events_mode;
	out->batch_fallback = sub(cur->batch_fallback, iv->prev.batch_fallback);
	out->batch_fallback_unknown = cur->batch_fallback_unknown;
	out->duration_ns = sub(cur->duration_ns, iv->prev.duration_ns);
	free(idx);
	if (!err)
		err = copy_summary(&next, cur, NULL, 0);
	if (!err) {
		summary__free(&iv->prev);
		iv->prev = next;
	}
	return err;
}

/* ---- the loop of sptrace --interval ------------------------------------ */

struct ticker {
	const struct interval_opts *io;
	const struct session *ss;
	struct exited_rows rows;
	struct interval iv;
	FILE *out;
	uint64_t next_ns;		/* CLOCK_MONOTONIC */
	uint64_t last_dur;		/* counted time at the last tick */
	unsigned long tick;
};

struct tick_meta {
	struct ticker *t;
	uint64_t interval_ns;
	bool final;
	struct tm tm;
};

static int json_meta(FILE *out, void *ctx)
{
	struct tick_meta *m = ctx;
	struct ticker *t = m->t;
	struct json_writer w;
	char when[32];

	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &m->tm);
	jsonw__init_members(&w, out);
	jsonw__u64_field(&w, "tick", t->tick);
	jsonw__string_field(&w, "time", when);
	jsonw__u64_field(&w, "interval_ns", m->interval_ns);
	jsonw__name(&w, "cumulative");
	jsonw__bool(&w, t->io->cumulative);
	jsonw__name(&w, "final");
	jsonw__bool(&w, m->final);
	jsonw__u64_field(&w, "evicted_rows", t->rows.evicted_rows);
	jsonw__u64_field(&w, "exited_processes", t->rows.exited);
	jsonw__u64_field(&w, "targets_alive", exited_rows__alive(&t->rows));
	return ferror(out) || w.overflow || w.depth != w.base ? -EIO : 0;
}

/* JSON Lines: the one JSON writer, into memory, its structural newlines
 * dropped (names are escaped, so every newline is structural). */
static int write_json_line(FILE *out, const struct summary *s,
			   struct tick_meta *m)
{
	char *buf = NULL;
	size_t len = 0, i, j;
	FILE *mem;
	int err;

	mem = open_memstream(&buf, &len);
	if (!mem)
		return -ENOMEM;
	err = json_out__write_with(mem, s, json_meta, m);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (!err) {
		for (i = j = 0; i < len; i++)
			if (buf[i] != '\n')
				buf[j++] = buf[i];
		buf[j++] = '\n';
		if (fwrite(buf, 1, j, out) != j)
			err = -EIO;
	}
	free(buf);
	if (!err)
		table__warn_errors(stderr, s);
	return err ? err : text__flush(out);
}

/* Under a tick's table, as its error counts are: the events of batched
 * files that fired their per-event sites (not a loss, so said only when
 * there were some, or with -v), in the tick's own terms. */
static int fallback_footer(FILE *out, const struct summary *s,
			   bool cumulative)
{
	if (!s->events_mode)		/* not a live session's figures */
		return 0;
	if (s->batch_fallback_unknown && sp_verbose)
		fprintf(out, "sptrace: events of batched files that fired their per-event sites are not counted (sp:tsc not watched: another session holds it)\n");
	else if (!s->batch_fallback_unknown && (s->batch_fallback || sp_verbose))
		fprintf(out, "sptrace: %" PRIu64 " events of batched files fired their per-event sites %s (their thread's ring was gone; counted like the rest)\n",
			s->batch_fallback,
			cumulative ? "since the start" : "in this interval");
	return 0;
}

static int tick(struct ticker *t, bool final)
{
	const struct interval_opts *io = t->io;
	struct summary cur, delta, show;
	struct tick_meta m = { .t = t, .final = final };
	const struct summary *src;
	time_t wall = time(NULL);
	char head[128], dur[32];
	int err;

	summary__init(&cur);
	summary__init(&delta);
	summary__init(&show);
	err = exited_rows__read(&t->rows, &cur);
	if (!err && !io->cumulative)
		err = interval__delta(&t->iv, &cur, t->rows.folded,
				      t->rows.nfolded, &delta);
	if (err)
		goto cleanup;
	src = io->cumulative ? &cur : &delta;
	show.per_pid = io->per_pid;
	for (unsigned int i = 0; !err && i < src->nrows; i++)
		err = exited_rows__add_row(&show, &src->rows[i], src->rows[i].pid);
	/* Titles as serve labels them (at first sight): a process keeps one
	 * title from tick to tick. */
	for (size_t i = 0; !err && io->per_pid && i < t->rows.nprocs; i++)
		if (t->rows.procs[i].title[0])
			err = summary__set_title(&show, t->rows.procs[i].pid,
						 t->rows.procs[i].title);
	if (err)
		goto cleanup;
	summary__copy_counts(&show, src);
	show.duration_ns = src->duration_ns;
	summary__finish(&show);
	summary__sort(&show, (enum summary_sort)io->sort);
	t->tick++;
	/* The time counted since the last tick, as the reads saw it. */
	m.interval_ns = cur.duration_ns - t->last_dur;
	t->last_dur = cur.duration_ns;
	gmtime_r(&wall, &m.tm);
	if (io->ropts->format == SUMMARY_JSON) {
		err = write_json_line(t->out, &show, &m);
	} else {
		strftime(head, sizeof(head), "%H:%M:%S", &m.tm);
		text__fmt_ns(dur, sizeof(dur), m.interval_ns);
		fprintf(t->out, "sptrace: %s UTC, tick %lu%s, interval %s, %s, %u queries\n",
			head, t->tick, final ? " (final)" : "", dur,
			io->cumulative ? "cumulative" : "per interval",
			show.nrows);
		/* The same columns at every tick, whatever this one saw. */
		struct summary_write_opts ro = *io->ropts;

		ro.all_columns = true;
		err = summary_writer__write(t->out, &show, &ro);
		if (!err)
			err = fallback_footer(t->out, &show, io->cumulative);
		if (!err)
			err = text__flush(t->out);
	}
	if (err)
		sp_err("%s: write failed: %s", io->output ? io->output : "stdout",
		       strerror(-err));
cleanup:
	summary__free(&cur);
	summary__free(&delta);
	summary__free(&show);
	return err;
}

static int ticker_poll(void *ctx)
{
	struct ticker *t = ctx;
	uint64_t now = now_ns(), step = (uint64_t)(t->io->seconds * 1e9);
	int err;

	err = exited_rows__poll(&t->rows);
	if (err)
		return err;
	/* In the wait loop's last round (the command, or every target, has
	 * exited, or a signal asked to stop) what is left is the final
	 * tick's, whatever the grid says: a tick here would be a late one,
	 * leaving the final tick empty. */
	if (now < t->next_ns || t->ss->ending || t->ss->stop_ns)
		return 0;
	/* The next tick on the original grid, skipping missed ones. */
	while (t->next_ns <= now)
		t->next_ns += step;
	return tick(t, false);
}

int interval__run(struct session *ss, struct query_provider *qp,
		  const struct interval_opts *io)
{
	struct ticker t = { .io = io, .ss = ss };
	int err, err2;

	err = output__open(io->output, io->force, &t.out);
	if (err)
		return err;
	/* Rows of exited processes keep their pid a while in --per-pid. */
	exited_rows__init(&t.rows, qp, ss, io->per_pid ? 60 : 0);
	interval__init(&t.iv);
	t.next_ns = ss->start_ns + (uint64_t)(io->seconds * 1e9);
	err = session__run(ss, -1, ticker_poll, &t);
	/* What is left since the last tick. */
	if (!err)
		err = tick(&t, true);
	err2 = output__close(t.out, io->output);
	exited_rows__free(&t.rows);
	interval__free(&t.iv);
	return err ? err : err2;
}
