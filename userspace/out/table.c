// SPDX-License-Identifier: MIT
/*
 * The boxed table sptrace prints by default (the layout of measureme's
 * `summarize`, drawn by text_table.c) with optional ASCII latency
 * histograms, and the error-counter warnings people read.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "table.h"
#include "text.h"
#include "text_table.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* Widest name column, in terminal cells; longer names end in "...". */
#define NAME_MAX_WIDTH 60
#define BAR_WIDTH 40
#define NS_BUF TEXT_NS_BUF
/* Histogram display rows: [0, 1) and one per power of two up to 2^64. */
#define HIST_GROUPS 65

static const char *const error_hints[SP_ERR__MAX] = {
	[SP_ERR_END_WITHOUT_BEGIN] =
		"an END with no open BEGIN: unbalanced BEGIN/END, see docs/numbers.md",
	[SP_ERR_END_MISMATCH] =
		"an END closed frames opened after its BEGIN: unbalanced BEGIN/END, see docs/numbers.md",
	[SP_ERR_STACK_OVERFLOW] =
		"BEGIN nested deeper than " STR(SP_MAX_DEPTH) " frames: not timed",
	[SP_ERR_THREAD_EXIT_OPEN] =
		"a thread exited with queries open: those are not counted",
	[SP_ERR_QUERIES_FULL] =
		"queries map full: intervals not counted, raise its size",
	[SP_ERR_HIST_FULL] =
		"hist map full: percentiles come from part of the samples",
	[SP_ERR_NAMES_FULL] =
		"names map full: some query names were not captured",
	[SP_ERR_THREADS_FULL] =
		"threads map full: events of some threads lost",
	[SP_ERR_NAME_READ] =
		"a query name was unreadable when captured",
	[SP_ERR_EVENTS_LOST] =
		"ring buffer full: events not recorded (raise --ringbuf-size)",
	[SP_ERR_FUNC_UNWOUND] =
		"--func frames unwound by longjmp or an exception; their time went to the caller",
	[SP_ERR_BATCH_LOST] =
		"batched events overwritten or unreadable before the tracer drained them (SPTRACE_PER_EVENT=1 traces event by event)",
	[SP_ERR_ASYNC_FULL] =
		"async map full: polls of suspended futures not joined to their invocation's latency; their time is counted",
	[SP_ERR_ABANDONED] =
		"--query intervals whose END never came (a PostgreSQL statement that failed), dropped by a serial line's next BEGIN or its abandon= probe: not counted",
};

/* A row named by a program whose table of run-time names was full
 * (sp_probe.h's sp__intern(), Rust's Name::intern): its events are real
 * but belong to many texts. The fixed names are the headers' own. */
static bool intern_full_row(const char *name)
{
	size_t n = strlen(name);

	return !strcmp(name, "<intern-full>") ||
	       !strcmp(name, "sp_probe: names full") ||
	       (n > 15 && !strcmp(name + n - 15, "(<intern-full>)")) ||
	       (n > 22 && !strcmp(name + n - 22, "(sp_probe: names full)"));
}

int table__warn_errors(FILE *err, const struct summary *s)
{
	uint64_t full = 0;
	unsigned int i;

	for (i = 0; i < SP_ERR__MAX; i++) {
		if (!s->errors[i])
			continue;
		fprintf(err, "sptrace: warning: %" PRIu64 " %s events (%s)\n",
			s->errors[i], summary__error_name(i), error_hints[i]);
	}
	if (s->lost)
		fprintf(err, "sptrace: warning: %" PRIu64 " lost events (dropped before "
			"sptrace read them: figures undercount)\n", s->lost);
	for (i = 0; i < s->nrows; i++)
		if (intern_full_row(s->rows[i].name))
			full += s->rows[i].st.count + s->rows[i].st.cache_hits;
	if (full)
		fprintf(err, "sptrace: warning: %" PRIu64 " events named <intern-full> "
			"(the program's table of run-time names is full: their "
			"texts share one row, see docs/instrumenting.md)\n", full);
	return text__flush(err);
}

enum col {
	COL_ITEM, COL_SELF, COL_PCT, COL_TIME, COL_COUNT, COL_CACHE,
	COL_BLOCKED, COL_INCR, COL_P50, COL_P99, COL_MAX, NCOLS,
};

static const char *const col_titles[NCOLS] = {
	[COL_ITEM] = "Item",
	[COL_SELF] = "Self time",
	[COL_PCT] = "% of total time",
	[COL_TIME] = "Time",
	[COL_COUNT] = "Item count",
	[COL_CACHE] = "Cache hits",
	[COL_BLOCKED] = "Blocked time",
	[COL_INCR] = "Incr. load time",
	[COL_P50] = "p50",
	[COL_P99] = "p99",
	[COL_MAX] = "Max",
};

/* One printed row: the Total line or a query. */
struct line {
	const struct sp_query_stats *st;
	uint64_t p50_ns, p99_ns;
	bool total;
	bool estimate;	/* scaled from sampled windows: sums marked "~" */
};

static double self_pct(const struct summary *s, uint64_t self_ns)
{
	if (!s->total_self_ns)
		return 0.0;
	return (double)self_ns * 100.0 / (double)s->total_self_ns;
}

static bool row_shown(const struct summary *s, const struct sp_query_row *r,
		      const struct table_opts *opts)
{
	return opts->percent_above <= 0.0 ||
	       self_pct(s, r->st.self_ns) > opts->percent_above;
}

/* The figure an optional column shows for a row; the column is hidden when
 * it is zero for every query, as measureme does. */
static uint64_t col_value(const struct sp_query_row *r, enum col c)
{
	switch (c) {
	case COL_CACHE:
		return r->st.cache_hits;
	case COL_BLOCKED:
		return r->st.blocked_ns;
	case COL_INCR:
		return r->st.incr_load_ns;
	case COL_P50:
		return r->p50_ns;
	case COL_P99:
		return r->p99_ns;
	case COL_MAX:
		return r->st.max_ns;
	default:
		return 1;
	}
}

static void cell(const struct summary *s, const struct line *l, enum col c,
		 char *buf, size_t len)
{
	const struct sp_query_stats *st = l->st;

	switch (c) {
	case COL_SELF:
		text__fmt_ns(buf, len, st->self_ns);
		break;
	case COL_PCT:
		snprintf(buf, len, "%.2f", self_pct(s, st->self_ns));
		break;
	case COL_TIME:
		text__fmt_ns(buf, len, st->total_ns);
		break;
	case COL_COUNT:
		snprintf(buf, len, "%" PRIu64, (uint64_t)st->count);
		break;
	case COL_CACHE:
		snprintf(buf, len, "%" PRIu64, (uint64_t)st->cache_hits);
		break;
	case COL_BLOCKED:
		text__fmt_ns(buf, len, st->blocked_ns);
		break;
	case COL_INCR:
		text__fmt_ns(buf, len, st->incr_load_ns);
		break;
	case COL_P50:
	case COL_P99:
		/* Undefined for the Total line and for a query that never
		 * completed (count 0): "-", not 0ns. */
		if (l->total || !st->count)
			snprintf(buf, len, "-");
		else
			text__fmt_ns(buf, len, c == COL_P50 ? l->p50_ns :
							      l->p99_ns);
		break;
	case COL_MAX:
		if (!st->count)
			snprintf(buf, len, "-");
		else
			text__fmt_ns(buf, len, st->max_ns);
		break;
	default:
		buf[0] = '\0';
		break;
	}
}

static void total_add(struct sp_query_stats *t, const struct sp_query_stats *st)
{
	t->count += st->count;
	t->total_ns += st->total_ns;
	t->self_ns += st->self_ns;
	t->cache_hits += st->cache_hits;
	t->blocked_ns += st->blocked_ns;
	t->incr_load_ns += st->incr_load_ns;
	if (st->max_ns > t->max_ns)
		t->max_ns = st->max_ns;
}

static int line_add(struct text_table *t, const struct summary *s,
		    const char *name, const struct line *l)
{
	char bufs[NCOLS][NS_BUF];
	const char *text[NCOLS];
	unsigned int c;

	text[COL_ITEM] = name;
	for (c = COL_ITEM + 1; c < NCOLS; c++) {
		bool sum = c != COL_P50 && c != COL_P99 && c != COL_MAX;

		/* An estimate's sums: "~" before the figure. */
		bufs[c][0] = '~';
		cell(s, l, c, bufs[c] + (l->estimate && sum),
		     sizeof(bufs[c]) - 1);
		text[c] = bufs[c];
	}
	return text_table__add_row(t, text);
}

/*
 * Fitting the table in opts->width characters (120 by default; --wide for
 * all). The rule looks at which columns are shown and at their titles, not
 * at the figures, so a series of --interval tables keeps one layout:
 *
 *   each column counts as its title's width (a duration column as at least
 *   FIT_FIGURE, room for "12.3ms" and "1.50us") plus 3 for its border, the
 *   Item column as its widest name up to FIT_ITEM_MIN (as FIT_ITEM_MIN with
 *   --interval, whose names change from tick to tick); while that is wider
 *   than the limit, columns
 *   are left out in fit_drop order; then the Item column gets what is left,
 *   at most NAME_MAX_WIDTH, and longer names end in "...".
 *
 * A line under the table names the columns left out.
 */
#define FIT_FIGURE 7
#define FIT_ITEM_MIN 24

static const enum col fit_drop[] = {
	COL_PCT,	/* Self time / Total's: the same order, one more figure */
	COL_P50,
	COL_INCR,
	COL_BLOCKED,
	COL_CACHE,
	COL_TIME,
};

static unsigned int fit_estimate(enum col c)
{
	unsigned int w = (unsigned int)strlen(col_titles[c]);

	if (c != COL_COUNT && c != COL_CACHE && c != COL_PCT && w < FIT_FIGURE)
		w = FIT_FIGURE;
	return w + 3;
}

/* Hides columns of cols[] by the rule above; fills dropped[] (names) and
 * returns how many; sets the Item column's max_width. */
static unsigned int table__fit(struct text_col *cols, unsigned int width,
			       unsigned int item, const char **dropped)
{
	unsigned int total, c, i, n = 0;

	if (item > FIT_ITEM_MIN)
		item = FIT_ITEM_MIN;
	total = 1 + item + 3;

	for (c = COL_ITEM + 1; c < NCOLS; c++)
		if (!cols[c].hidden)
			total += fit_estimate(c);
	for (i = 0; total > width && i < sizeof(fit_drop) / sizeof(fit_drop[0]); i++) {
		c = fit_drop[i];
		if (cols[c].hidden)
			continue;
		cols[c].hidden = true;
		total -= fit_estimate(c);
		dropped[n++] = col_titles[c];
	}
	c = width > total ? item + (width - total) : item;
	cols[COL_ITEM].max_width = c < NAME_MAX_WIDTH ? c : NAME_MAX_WIDTH;
	return n;
}

/* Item is left-aligned and cut at NAME_MAX_WIDTH, figures right-aligned;
 * optional columns hidden when zero for every query. */
static int table_build(struct text_table *t, const struct summary *s,
		       const struct table_opts *opts, unsigned int item,
		       const char **dropped, unsigned int *ndropped)
{
	struct sp_query_stats total = { 0 };
	struct text_col cols[NCOLS];
	bool estimate = false;
	struct line l;
	unsigned int i, c;
	int err;

	for (c = 0; c < NCOLS; c++) {
		cols[c] = (struct text_col){
			.title = col_titles[c],
			.align = c == COL_ITEM ? TEXT_LEFT : TEXT_RIGHT,
			.hidden = c > COL_COUNT && !opts->all_columns,
			.max_width = c == COL_ITEM ? NAME_MAX_WIDTH : 0,
		};
	}
	for (i = 0; i < s->nrows; i++) {
		total_add(&total, &s->rows[i].st);
		estimate |= s->rows[i].est_err > 0;
		for (c = COL_COUNT + 1; c < NCOLS; c++)
			if (col_value(&s->rows[i], c))
				cols[c].hidden = false;
	}
	*ndropped = opts->width ? table__fit(cols, opts->width, item, dropped)
				: 0;
	err = text_table__init(t, cols, NCOLS);
	if (err)
		return err;
	l = (struct line){ .st = &total, .total = true, .estimate = estimate };
	err = line_add(t, s, "Total", &l);
	for (i = 0; !err && i < s->nrows; i++) {
		const struct sp_query_row *r = &s->rows[i];

		if (!row_shown(s, r, opts))
			continue;
		l = (struct line){ .st = &r->st, .p50_ns = r->p50_ns,
				   .p99_ns = r->p99_ns,
				   .estimate = r->est_err > 0 };
		if (s->per_pid) {
			/* --per-pid: the process and its title go with the
			 * name, in the Item column's width (the table stays
			 * within 120 columns; a long title is cut first). */
			const char *title = summary__title(s, r->pid);
			char *item;

			if (asprintf(&item, title && *title ? "%s [pid %u: %s]"
						: "%s [pid %u%s]",
				     r->name, r->pid, title ? title : "") < 0)
				return -ENOMEM;
			err = line_add(t, s, item, &l);
			free(item);
			continue;
		}
		err = line_add(t, s, r->name, &l);
	}
	return err;
}

static uint64_t group_lo(unsigned int g)
{
	return g ? (uint64_t)1 << (g - 1) : 0;
}

static uint64_t group_hi(unsigned int g)
{
	return g < 64 ? (uint64_t)1 << g : UINT64_MAX;
}

static void group_label(char *buf, size_t len, unsigned int g)
{
	char lo[NS_BUF], hi[NS_BUF];

	text__fmt_ns(lo, sizeof(lo), group_lo(g));
	text__fmt_ns(hi, sizeof(hi), group_hi(g));
	snprintf(buf, len, "[%s, %s)", lo, hi);
}

static void hist_bars(FILE *out, const uint64_t *groups, unsigned int first,
		      unsigned int last, uint64_t max)
{
	static const char stars[BAR_WIDTH + 1] =
		"****************************************";
	char label[2 * NS_BUF + 8];
	unsigned int g, lw = 0, cw;
	int n;

	for (g = first; g <= last; g++) {
		group_label(label, sizeof(label), g);
		if (strlen(label) > lw)
			lw = strlen(label);
	}
	cw = snprintf(label, sizeof(label), "%" PRIu64, max);
	for (g = first; g <= last; g++) {
		n = (int)((double)groups[g] * BAR_WIDTH / (double)max);
		/* A bucket with samples shows at least one star. */
		if (groups[g] && !n)
			n = 1;
		group_label(label, sizeof(label), g);
		fprintf(out, "  %-*s %*" PRIu64 " |%.*s%*s|\n", (int)lw, label,
			(int)cw, groups[g], n, stars, BAR_WIDTH - n, "");
	}
}

/*
 * The fine log-linear bins merged into power-of-two rows for display only
 * (like bpftrace's hist()); a fine bin never straddles a power of two, so the
 * merge is exact. Empty rows at either end are trimmed.
 */
int table__hist_print(FILE *out, const struct sp_query_row *r)
{
	uint64_t groups[HIST_GROUPS] = { 0 }, max = 0;
	unsigned int i, g, first = HIST_GROUPS, last = 0, w;
	char cnt[NS_BUF], p50[NS_BUF], p90[NS_BUF], p99[NS_BUF], mx[NS_BUF];
	char *name;

	for (i = 0; i < r->nbins; i++) {
		uint64_t lo = sp_hist_bucket_lo(r->bins[i].bucket);

		g = lo ? sp_log2_u64(lo) + 1 : 0;
		groups[g] += r->bins[i].count;
	}
	for (g = 0; g < HIST_GROUPS; g++) {
		if (!groups[g])
			continue;
		if (first == HIST_GROUPS)
			first = g;
		last = g;
		if (groups[g] > max)
			max = groups[g];
	}
	if (!max)
		return 0;
	name = text__display(r->name, UINT_MAX, &w);
	if (!name)
		return -ENOMEM;
	snprintf(cnt, sizeof(cnt), "%" PRIu64, (uint64_t)r->st.count);
	text__fmt_ns(p50, sizeof(p50), r->p50_ns);
	text__fmt_ns(p90, sizeof(p90), r->p90_ns);
	text__fmt_ns(p99, sizeof(p99), r->p99_ns);
	text__fmt_ns(mx, sizeof(mx), r->st.max_ns);
	fprintf(out, "\n%s  (count %s, p50 %s, p90 %s, p99 %s, max %s)\n",
		name, cnt, p50, p90, p99, mx);
	free(name);
	hist_bars(out, groups, first, last, max);
	return 0;
}

/* The line under the table that says what --percent-above left out. */
static void hidden_rows_footer(FILE *out, const struct summary *s,
			       const struct table_opts *opts)
{
	uint64_t self = 0;
	unsigned int i, n = 0;
	char buf[NS_BUF];

	for (i = 0; i < s->nrows; i++) {
		if (row_shown(s, &s->rows[i], opts))
			continue;
		n++;
		self += s->rows[i].st.self_ns;
	}
	if (!n)
		return;
	text__fmt_ns(buf, sizeof(buf), self);
	fprintf(out, "%u %s with at most %g%% of the self time each not shown "
		"(self time %s, %.2f%% in all; --percent-above %g)\n", n,
		n == 1 ? "row" : "rows", opts->percent_above, buf,
		self_pct(s, self), opts->percent_above);
}

/* --max-overhead: the line under the table that says which figures are
 * estimates ("~") and how far they may be off. */
static void sampling_footer(FILE *out, const struct summary *s)
{
	double err = 0, least = 1, func_least = 1;
	unsigned int i, every = 1, nsampled = 0, nfunc = 0;

	if (!s->nsampled)
		return;
	for (i = 0; i < s->nrows; i++)
		if (s->rows[i].est_err > err)
			err = s->rows[i].est_err;
	for (i = 0; i < s->nsampled; i++) {
		const struct summary_sampled *v = &s->sampled[i];

		if (v->traced < 1) {
			nsampled++;
			if (v->traced < least)
				least = v->traced;
		}
		if (v->every > every)
			every = v->every;
		if (v->func_traced < 1) {
			nfunc++;
			if (v->func_traced < func_least)
				func_least = v->func_traced;
		}
	}
	if (nfunc)
		fprintf(out, "~ estimates: --max-overhead detached the --func probes for part of the run (%.1f%% of %s work traced with them at least) and scaled %s --func rows\n",
			100 * func_least, nfunc == 1 ? "its" : "their",
			nfunc == 1 ? "its" : "their");
	if (nsampled)
		fprintf(out, "~ estimates: --max-overhead traced %u %s in sampled windows (down to 1 in %u; %.1f%% of %s work at least) and scaled their rows",
			nsampled, nsampled == 1 ? "process" : "processes", every,
			100 * least, nsampled == 1 ? "its" : "their");
	else
		fprintf(out, "~ estimates:");
	fprintf(out, "%s each within %.1f%% at 95%%", nsampled ? "," : "",
		100 * err);
	if (s->sample_cut)
		fprintf(out, "; %" PRIu64 " intervals cut at a window's edge", s->sample_cut);
	fputc('\n', out);
}

/* The line under the table that says what sptrace's probes cost the
 * traced processes (docs/numbers.md, "Overhead"). */
static void overhead_footer(FILE *out, const struct summary *s)
{
	const struct summary_overhead *o = &s->overhead;
	uint64_t probe, cpu;
	char pb[NS_BUF], cb[NS_BUF];
	unsigned int i, n = 0, unknown = 0;
	const struct summary_cost *top = NULL;
	double share;

	if (!o->known || !o->nprocs)
		return;
	for (i = 0; i < o->nprocs; i++) {
		const struct summary_cost *c = &o->procs[i];

		if (!c->win_cpu_ns) {
			unknown++;
			continue;
		}
		n++;
		if (!top || (double)c->win_probe_ns * (double)top->win_cpu_ns >
			    (double)top->win_probe_ns * (double)c->win_cpu_ns)
			top = c;
	}
	share = summary__overhead_share(o, &probe, &cpu);
	if (share < 0) {
		fprintf(out, "sptrace's probes: est. cost unknown (no CPU time read of the %u traced %s)\n",
			unknown, unknown == 1 ? "process" : "processes");
		return;
	}
	text__fmt_ns(pb, sizeof(pb), probe);
	text__fmt_ns(cb, sizeof(cb), cpu);
	if (n == 1)
		fprintf(out, "sptrace's probes: est. %.2f%% of the traced process's CPU time (pid %u: %s of %s)",
			100 * share, top->pid, pb, cb);
	else
		fprintf(out, "sptrace's probes: est. %.2f%% of the traced processes' CPU time (%u processes: %s of %s; at most %.2f%%, pid %u)",
			100 * share, n, pb, cb,
			100.0 * (double)top->win_probe_ns / (double)top->win_cpu_ns,
			top->pid);
	if (unknown)
		fprintf(out, "; %u more without a CPU time read", unknown);
	fprintf(out, "%s\n", o->bpf_timed ? "" :
		"; BPF run time left out (no kernel statistics)");
}

int table__write(FILE *out, const struct summary *s,
		 const struct table_opts *opts)
{
	static const struct table_opts defaults;
	const char *dropped[NCOLS];
	struct table_opts full;
	unsigned int i, ndropped = 0;
	char dur[NS_BUF];
	struct text_table t;
	int err;

	if (!s->finished)
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	/* The widest name first (a table at full width), then the table the
	 * fit rule makes of it. */
	full = *opts;
	full.width = 0;
	err = table_build(&t, s, &full, FIT_ITEM_MIN, dropped, &ndropped);
	if (!err && opts->width) {
		unsigned int item = opts->all_columns ? FIT_ITEM_MIN :
				    t.width[COL_ITEM];

		text_table__free(&t);
		err = table_build(&t, s, opts, item, dropped, &ndropped);
	}
	if (err)
		goto cleanup;

	text__fmt_ns(dur, sizeof(dur), s->duration_ns);
	fprintf(out, "sptrace: %u queries, duration %s\n", s->nrows, dur);
	/* A stream error shows in text__flush(). */
	text_table__print(out, &t);
	text_table__fit_footer(out, dropped, ndropped, opts->width);
	hidden_rows_footer(out, s, opts);
	sampling_footer(out, s);
	overhead_footer(out, s);

	err = table__warn_errors(out, s);
	for (i = 0; !err && opts->hist && i < s->nrows; i++) {
		if (row_shown(s, &s->rows[i], opts))
			err = table__hist_print(out, &s->rows[i]);
	}
	if (!err)
		err = text__flush(out);
cleanup:
	text_table__free(&t);
	return err;
}
