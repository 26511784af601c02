// SPDX-License-Identifier: MIT
/*
 * The memory report (model/mem_report.h) written: boxed tables with a
 * sparkline of memory over time, JSON (docs/formats.md#memory) and CSV.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "json_writer.h"
#include "mem_writer.h"
#include "table.h"
#include "text.h"
#include "text_table.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define DEFAULT_MAX_SITES 20
#define SITE_FRAMES_SHOWN 3
#define SPARK_WIDTH 64

static const char *const mem_error_hints[SP_MEM_ERR__MAX] = {
	[SP_MEM_ERR_UNKNOWN_FREE] =
		"frees of pointers allocated before tracing started, or not through the traced allocator",
	[SP_MEM_ERR_LIVE_FULL] =
		"live-allocation map full: those allocations are counted but not tracked as live (raise --max-live)",
	[SP_MEM_ERR_ROWS_FULL] = "rows map full: events not counted",
	[SP_MEM_ERR_SITES_FULL] = "sites map full: some allocation sites not counted",
	[SP_MEM_ERR_STACK_LOST] =
		"no stack for some allocations (stack map full or hash collision: raise --max-stacks)",
	[SP_MEM_ERR_CALLS_FULL] =
		"per-thread call map full: allocator calls not seen (raise --max-threads)",
	[SP_MEM_ERR_STALE_CALL] =
		"allocator calls that never returned (their entry state was replaced)",
	[SP_MEM_ERR_LIVE_REPLACED] =
		"pointers allocated again without a free in between",
	[SP_MEM_ERR_PEAK_RETRY] = "peak updates that gave up under contention",
	[SP_MEM_ERR_MEMPTR_READ] = "posix_memalign results that could not be read",
	[SP_MEM_ERR_THREADS_FULL] = "thread-name map full: some names missing",
};

/* ---- table ----------------------------------------------------------------- */

static char *u64s(char *buf, uint64_t v)
{
	snprintf(buf, 24, "%" PRIu64, v);
	return buf;
}

static int add_figures_row(struct text_table *t, const char *name,
			   const struct mem_figures *f)
{
	char c[8][24];
	const char *cells[9];

	cells[0] = name;
	cells[1] = u64s(c[0], f->allocs);
	cells[2] = u64s(c[1], f->alloc_bytes);
	cells[3] = u64s(c[2], f->frees);
	cells[4] = u64s(c[3], f->live);
	cells[5] = u64s(c[4], f->live_bytes);
	cells[6] = u64s(c[5], f->peak_live_bytes);
	cells[7] = u64s(c[6], f->allocs ? f->alloc_bytes / f->allocs : 0);
	return text_table__add_row(t, cells);
}

static const struct text_col figure_cols[] = {
	{ "Type", TEXT_LEFT, false, 60, 24 },
	{ "Allocs", TEXT_RIGHT, false, 0, 0 },
	{ "Bytes", TEXT_RIGHT, false, 0, 0 },
	{ "Frees", TEXT_RIGHT, false, 0, 0 },
	{ "Live", TEXT_RIGHT, false, 0, 0 },
	{ "Live bytes", TEXT_RIGHT, false, 0, 0 },
	{ "Peak live bytes", TEXT_RIGHT, false, 0, 0 },
	{ "Avg size", TEXT_RIGHT, false, 0, 0 },
};

/*
 * Fitting `width` (120 by default, --wide: 0) as every boxed table does
 * (text_table__fit(), docs/formats.md#fitting-120-characters): names are
 * cut down to 24 cells (Type) or 16 (Thread, and Type per thread), then
 * columns are left out first to last: the figures the others give (Avg
 * size is Bytes / Allocs, Frees is Allocs - Live), then Live, Peak live
 * bytes, Allocs (and per thread Bytes). Live bytes, what leaks, stays.
 */
static const unsigned int types_drop[] = { 7, 3, 4, 6, 1 };
static const unsigned int threads_drop[] = { 5, 6, 8, 3, 4 };

static int print_types(FILE *out, const struct mem_report *r,
		       unsigned int width)
{
	struct text_table t;
	unsigned int i;
	int err;

	err = text_table__init(&t, figure_cols, ARRAY_SIZE(figure_cols));
	for (i = 0; !err && i < r->ntypes; i++)
		err = add_figures_row(&t, r->types[i].name, &r->types[i].f);
	if (!err && r->heap_traced)
		err = add_figures_row(&t, "[heap: libc malloc]", &r->heap);
	if (!err) {
		fprintf(out, "Memory by type%s\n",
			r->heap_traced ? " (and the libc heap)" : "");
		err = text_table__print_fitted(out, &t, width, types_drop,
					       ARRAY_SIZE(types_drop));
	}
	text_table__free(&t);
	return err;
}

static const struct text_col thread_cols[] = {
	{ "Thread", TEXT_LEFT, false, 40, 16 },
	{ "TID", TEXT_RIGHT, false, 0, 0 },
	{ "Type", TEXT_LEFT, false, 40, 16 },
	{ "Allocs", TEXT_RIGHT, false, 0, 0 },
	{ "Bytes", TEXT_RIGHT, false, 0, 0 },
	{ "Frees", TEXT_RIGHT, false, 0, 0 },
	{ "Live", TEXT_RIGHT, false, 0, 0 },
	{ "Live bytes", TEXT_RIGHT, false, 0, 0 },
	{ "Peak live bytes", TEXT_RIGHT, false, 0, 0 },
};

static int print_threads(FILE *out, const struct mem_report *r,
			 unsigned int width)
{
	struct text_table t;
	unsigned int i;
	int err;

	err = text_table__init(&t, thread_cols, ARRAY_SIZE(thread_cols));
	for (i = 0; !err && i < r->nthreads; i++) {
		const struct mem_thread_row *th = &r->threads[i];
		const struct mem_figures *f = &th->f;
		char c[7][24];
		const char *cells[] = {
			th->thread, u64s(c[0], th->tid),
			th->type ? th->type : "[heap: libc malloc]",
			u64s(c[1], f->allocs), u64s(c[2], f->alloc_bytes),
			u64s(c[3], f->frees), u64s(c[4], f->live),
			u64s(c[5], f->live_bytes),
			u64s(c[6], f->peak_live_bytes),
		};

		err = text_table__add_row(&t, cells);
	}
	if (!err) {
		fputs("\nMemory by allocating thread\n", out);
		err = text_table__print_fitted(out, &t, width, threads_drop,
					       ARRAY_SIZE(threads_drop));
	}
	text_table__free(&t);
	return err;
}

static const struct text_col site_cols[] = {
	{ "Stack/site (innermost first)", TEXT_LEFT, false, 100, 0 },
	{ "Type", TEXT_LEFT, false, 40, 0 },
	{ "Allocs", TEXT_RIGHT, false, 0, 0 },
	{ "Bytes", TEXT_RIGHT, false, 0, 0 },
	{ "Live", TEXT_RIGHT, false, 0, 0 },
	{ "Live bytes", TEXT_RIGHT, false, 0, 0 },
};

/* The first frames of a site, "a < b < c". */
static char *site_label(const struct mem_site_row *s)
{
	size_t len = 1;
	unsigned int i, n = s->nframes < SITE_FRAMES_SHOWN ? s->nframes
							    : SITE_FRAMES_SHOWN;
	char *buf;

	for (i = 0; i < n; i++)
		len += strlen(s->frames[i]) + 3;
	len += 16;	/* " < ..." or "[no stack]" */
	buf = malloc(len);
	if (!buf)
		return NULL;
	buf[0] = 0;
	for (i = 0; i < n; i++) {
		if (i)
			strcat(buf, " < ");
		strcat(buf, s->frames[i]);
	}
	if (!s->nframes)
		strcpy(buf, "[no stack]");
	else if (s->nframes > n)
		strcat(buf, " < ...");
	return buf;
}

/* The table fits 120 characters, as the summary table does
 * (docs/formats.md): the stack column gets what the other columns, as wide
 * as their widest title or cell, leave (at most 100 cells, at least 24),
 * and longer stacks are cut with "...". 0 or -ENOMEM. */
static int fit_sites(const struct mem_report *r, unsigned int max,
		     struct text_col *cols)
{
	unsigned int i, k, w, used, width[ARRAY_SIZE(site_cols)] = { 0 };
	char *disp;

	memcpy(cols, site_cols, sizeof(site_cols));
	for (k = 1; k < ARRAY_SIZE(site_cols); k++)
		width[k] = (unsigned int)strlen(site_cols[k].title);
	for (i = 0; i < r->nsites && i < max; i++) {
		const struct mem_site_row *s = &r->sites[i];
		const uint64_t v[4] = { s->allocs, s->alloc_bytes, s->live,
					s->live_bytes };
		char c[24];

		disp = text__display(s->type ? s->type : "[heap]",
					   site_cols[1].max_width, &w);
		if (!disp)
			return -ENOMEM;
		free(disp);
		if (w > width[1])
			width[1] = w;
		for (k = 0; k < 4; k++) {
			w = (unsigned int)strlen(u64s(c, v[k]));
			if (w > width[k + 2])
				width[k + 2] = w;
		}
	}
	/* "| " before each cell, " " after it, "|" at the end. */
	used = 1 + 3 * ARRAY_SIZE(site_cols);
	for (k = 1; k < ARRAY_SIZE(site_cols); k++)
		used += width[k];
	w = TABLE_DEFAULT_WIDTH > used + 24 ? TABLE_DEFAULT_WIDTH - used : 24;
	if (w < cols[0].max_width)
		cols[0].max_width = w;
	return 0;
}

static int print_sites(FILE *out, const struct mem_report *r)
{
	unsigned int i, max = r->max_sites ? r->max_sites : DEFAULT_MAX_SITES;
	struct text_col cols[ARRAY_SIZE(site_cols)];
	struct text_table t;
	int err;

	if (!r->nsites)
		return 0;
	err = fit_sites(r, max, cols);
	if (!err)
		err = text_table__init(&t, cols, ARRAY_SIZE(site_cols));
	for (i = 0; !err && i < r->nsites && i < max; i++) {
		const struct mem_site_row *s = &r->sites[i];
		char c[4][24], *label = site_label(s);
		const char *cells[] = {
			label, s->type ? s->type : "[heap]",
			u64s(c[0], s->allocs), u64s(c[1], s->alloc_bytes),
			u64s(c[2], s->live), u64s(c[3], s->live_bytes),
		};

		err = label ? text_table__add_row(&t, cells) : -ENOMEM;
		free(label);
	}
	if (!err) {
		fprintf(out, "\nAllocation sites by live bytes (what leaks)%s\n",
			r->nsites > max ? "" : "");
		err = text_table__print(out, &t);
		if (!err && r->nsites > max)
			fprintf(out, "(%u more sites; -f json lists all)\n",
				r->nsites - max);
	}
	text_table__free(&t);
	return err;
}

void mem_report__fmt_bytes(char *buf, size_t len, uint64_t b)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	unsigned int u = 0;

	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

static uint64_t point_field(const struct mem_point *p, int which)
{
	return which == 0 ? p->rss_bytes
	       : which == 1 ? p->heap_live_bytes : p->typed_live_bytes;
}

/* One sparkline row: each column is the maximum of its points. */
static void spark_row(FILE *out, const struct mem_timeline *tl, int which,
		      const char *label)
{
	unsigned int cols = tl->n < SPARK_WIDTH ? tl->n : SPARK_WIDTH, c, i;
	uint64_t max = 0, min = UINT64_MAX, v;
	char a[32], b[32];

	for (i = 0; i < tl->n; i++) {
		v = point_field(&tl->v[i], which);
		if (v > max)
			max = v;
		if (v < min)
			min = v;
	}
	fprintf(out, "  %-11s ", label);
	for (c = 0; c < cols; c++) {
		unsigned int lo = (unsigned int)((uint64_t)c * tl->n / cols);
		unsigned int hi = (unsigned int)((uint64_t)(c + 1) * tl->n / cols);
		uint64_t m = 0;

		for (i = lo; i < hi; i++) {
			v = point_field(&tl->v[i], which);
			if (v > m)
				m = v;
		}
		fputs(text_table__spark(m, max), out);
	}
	mem_report__fmt_bytes(a, sizeof(a), min);
	mem_report__fmt_bytes(b, sizeof(b), max);
	fprintf(out, "  min %s, max %s\n", a, b);
}

static int print_timeline(FILE *out, const struct mem_report *r)
{
	const struct mem_timeline *tl = &r->tl;
	char step[32];

	if (!r->timeline_on)
		return 0;
	if (!tl->n) {
		fputs("\nMemory over time: no samples (the target ended first)\n",
		      out);
		return 0;
	}
	text__fmt_ns(step, sizeof(step), tl->interval_ns * tl->step);
	fprintf(out, "\nMemory over time (%u points, one per %s)\n", tl->n,
		step);
	spark_row(out, tl, 0, "RSS");
	if (r->heap_traced)
		spark_row(out, tl, 1, "heap live");
	if (r->ntypes)
		spark_row(out, tl, 2, "typed live");
	return 0;
}

int mem_report__write_table(FILE *out, const struct mem_report *r,
			    unsigned int width)
{
	int err;

	if (r->sampled > 1)
		fprintf(out, "Sampled: every %u-th allocation counted; figures scaled x%u\n",
			r->sampled, r->sampled);
	if (!r->ntypes && !r->heap_traced)
		fputs("No allocation seen (no SP_ALLOC probe fired, and the libc allocator was not traced)\n",
		      out);
	else if ((err = print_types(out, r, width)))
		return err;
	if (r->per_thread && (err = print_threads(out, r, width)))
		return err;
	if ((err = print_sites(out, r)))
		return err;
	print_timeline(out, r);
	return text__flush(out);
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_figures(struct json_writer *w, const struct mem_figures *f)
{
	jsonw__u64_field(w, "allocs", f->allocs);
	jsonw__u64_field(w, "alloc_bytes", f->alloc_bytes);
	jsonw__u64_field(w, "frees", f->frees);
	jsonw__u64_field(w, "free_bytes", f->free_bytes);
	jsonw__u64_field(w, "live", f->live);
	jsonw__u64_field(w, "live_bytes", f->live_bytes);
	jsonw__u64_field(w, "peak_live_bytes", f->peak_live_bytes);
}

static void json_string_or_null(struct json_writer *w, const char *name,
				const char *str)
{
	jsonw__name(w, name);
	if (str)
		jsonw__string(w, str);
	else
		jsonw__null(w);
}

static void json_members(struct json_writer *w, const struct mem_report *r)
{
	unsigned int i, j;

	if (r->tl.command) {
		jsonw__string_field(w, "command", r->tl.command);
		jsonw__break(w);
	}
	jsonw__u64_field(w, "sampled", r->sampled);
	jsonw__break(w);
	jsonw__name(w, "types");
	jsonw__start_array(w);
	for (i = 0; i < r->ntypes; i++) {
		jsonw__break(w);
		jsonw__start_object(w);
		jsonw__string_field(w, "name", r->types[i].name);
		json_figures(w, &r->types[i].f);
		jsonw__end_object(w);
	}
	jsonw__end_array(w);
	jsonw__break(w);
	jsonw__name(w, "heap");
	if (r->heap_traced) {
		jsonw__start_object(w);
		json_figures(w, &r->heap);
		jsonw__end_object(w);
	} else {
		jsonw__null(w);
	}
	if (r->per_thread) {
		jsonw__break(w);
		jsonw__name(w, "threads");
		jsonw__start_array(w);
		for (i = 0; i < r->nthreads; i++) {
			const struct mem_thread_row *t = &r->threads[i];

			jsonw__break(w);
			jsonw__start_object(w);
			jsonw__u64_field(w, "pid", t->pid);
			jsonw__u64_field(w, "tid", t->tid);
			jsonw__string_field(w, "thread", t->thread);
			json_string_or_null(w, "type", t->type);
			json_figures(w, &t->f);
			jsonw__end_object(w);
		}
		jsonw__end_array(w);
	}
	jsonw__break(w);
	jsonw__name(w, "sites");
	jsonw__start_array(w);
	for (i = 0; i < r->nsites; i++) {
		const struct mem_site_row *s = &r->sites[i];

		jsonw__break(w);
		jsonw__start_object(w);
		jsonw__name(w, "stack");
		jsonw__start_array(w);
		for (j = 0; j < s->nframes; j++)
			jsonw__string(w, s->frames[j]);
		jsonw__end_array(w);
		json_string_or_null(w, "type", s->type);
		jsonw__u64_field(w, "allocs", s->allocs);
		jsonw__u64_field(w, "alloc_bytes", s->alloc_bytes);
		jsonw__u64_field(w, "live", s->live);
		jsonw__u64_field(w, "live_bytes", s->live_bytes);
		jsonw__end_object(w);
	}
	jsonw__end_array(w);
	if (r->timeline_on) {
		jsonw__u64_field(w, "timeline_step_ns",
				 r->tl.interval_ns * r->tl.step);
		jsonw__break(w);
		jsonw__name(w, "timeline");
		jsonw__start_array(w);
		for (i = 0; i < r->tl.n; i++) {
			const struct mem_point *p = &r->tl.v[i];

			jsonw__break(w);
			jsonw__start_object(w);
			jsonw__u64_field(w, "t_ns", p->t_ns);
			jsonw__u64_field(w, "rss_bytes", p->rss_bytes);
			jsonw__u64_field(w, "rss_anon_bytes", p->rss_anon_bytes);
			jsonw__u64_field(w, "rss_file_bytes", p->rss_file_bytes);
			jsonw__u64_field(w, "heap_live_bytes",
					 p->heap_live_bytes);
			jsonw__u64_field(w, "typed_live_bytes",
					 p->typed_live_bytes);
			jsonw__end_object(w);
		}
		jsonw__end_array(w);
	}
	jsonw__break(w);
	jsonw__name(w, "mem_errors");
	jsonw__start_object(w);
	for (i = 0; i < SP_MEM_ERR__MAX; i++)
		jsonw__u64_field(w, mem_report__error_name(i), r->errors[i]);
	jsonw__end_object(w);
}

int mem_report__json_fields(FILE *out, void *ctx)
{
	struct json_writer w;

	jsonw__init_members(&w, out);
	json_members(&w, ctx);
	return ferror(out) || w.overflow || w.depth != w.base ? -EIO : 0;
}

int mem_report__write_json(FILE *out, const struct mem_report *r)
{
	struct json_writer w;

	jsonw__init(&w, out);
	jsonw__start_object(&w);
	jsonw__u64_field(&w, "duration_ns", r->duration_ns);
	jsonw__break(&w);
	json_members(&w, r);
	jsonw__end_object(&w);
	fputc('\n', out);
	return jsonw__finish(&w);
}

/* ---- CSV ------------------------------------------------------------------- */

enum csv_col {
	C_KIND, C_NAME, C_STACK, C_PID, C_TID, C_THREAD, C_ALLOCS,
	C_ALLOC_BYTES, C_FREES, C_FREE_BYTES, C_LIVE, C_LIVE_BYTES, C_PEAK,
	C_T, C_RSS, C_RSS_ANON, C_RSS_FILE, C_HEAP_LIVE, C_TYPED_LIVE,
	C_COUNT, C_SAMPLED, C__N,
};

static const char *const csv_header[C__N] = {
	"kind", "name", "stack", "pid", "tid", "thread", "allocs",
	"alloc_bytes", "frees", "free_bytes", "live", "live_bytes",
	"peak_live_bytes", "t_ns", "rss_bytes", "rss_anon_bytes",
	"rss_file_bytes", "heap_live_bytes", "typed_live_bytes", "count",
	"sampled",
};

struct csv_row {
	const char *s[C__N];
	char num[C__N][24];
};

static void row_num(struct csv_row *row, enum csv_col c, uint64_t v)
{
	row->s[c] = u64s(row->num[c], v);
}

static void row_figures(struct csv_row *row, const struct mem_figures *f)
{
	row_num(row, C_ALLOCS, f->allocs);
	row_num(row, C_ALLOC_BYTES, f->alloc_bytes);
	row_num(row, C_FREES, f->frees);
	row_num(row, C_FREE_BYTES, f->free_bytes);
	row_num(row, C_LIVE, f->live);
	row_num(row, C_LIVE_BYTES, f->live_bytes);
	row_num(row, C_PEAK, f->peak_live_bytes);
}

static void row_print(FILE *out, struct csv_row *row, uint32_t sampled)
{
	unsigned int i;

	row_num(row, C_SAMPLED, sampled);
	for (i = 0; i < C__N; i++) {
		if (i)
			fputc(',', out);
		if (row->s[i])
			text__csv_field(out, row->s[i]);
	}
	fputc('\n', out);
	memset(row, 0, sizeof(*row));
}

/* One table; `kind` says which cells a row fills (docs/formats.md). */
int mem_report__write_csv(FILE *out, const struct mem_report *r)
{
	struct csv_row row = {};
	unsigned int i, j;

	for (i = 0; i < C__N; i++)
		fprintf(out, "%s%s", i ? "," : "", csv_header[i]);
	fputc('\n', out);
	for (i = 0; i < r->ntypes; i++) {
		row.s[C_KIND] = "type";
		row.s[C_NAME] = r->types[i].name;
		row_figures(&row, &r->types[i].f);
		row_print(out, &row, r->sampled);
	}
	if (r->heap_traced) {
		row.s[C_KIND] = "heap";
		row_figures(&row, &r->heap);
		row_print(out, &row, r->sampled);
	}
	for (i = 0; i < r->nthreads; i++) {
		const struct mem_thread_row *t = &r->threads[i];

		row.s[C_KIND] = t->type ? "thread" : "heap_thread";
		row.s[C_NAME] = t->type;
		row_num(&row, C_PID, t->pid);
		row_num(&row, C_TID, t->tid);
		row.s[C_THREAD] = t->thread;
		row_figures(&row, &t->f);
		row_print(out, &row, r->sampled);
	}
	for (i = 0; i < r->nsites; i++) {
		const struct mem_site_row *s = &r->sites[i];
		size_t len = 1;
		char *stack;

		for (j = 0; j < s->nframes; j++)
			len += strlen(s->frames[j]) + 1;
		stack = calloc(1, len);
		if (!stack)
			return -ENOMEM;
		for (j = 0; j < s->nframes; j++) {
			if (j)
				strcat(stack, ";");
			strcat(stack, s->frames[j]);
		}
		row.s[C_KIND] = s->type ? "site" : "heap_site";
		row.s[C_NAME] = s->type;
		row.s[C_STACK] = stack;
		row_num(&row, C_ALLOCS, s->allocs);
		row_num(&row, C_ALLOC_BYTES, s->alloc_bytes);
		row_num(&row, C_LIVE, s->live);
		row_num(&row, C_LIVE_BYTES, s->live_bytes);
		row_print(out, &row, r->sampled);
		free(stack);
	}
	for (i = 0; i < r->tl.n; i++) {
		const struct mem_point *p = &r->tl.v[i];

		row.s[C_KIND] = "timeline";
		row_num(&row, C_T, p->t_ns);
		row_num(&row, C_RSS, p->rss_bytes);
		row_num(&row, C_RSS_ANON, p->rss_anon_bytes);
		row_num(&row, C_RSS_FILE, p->rss_file_bytes);
		row_num(&row, C_HEAP_LIVE, p->heap_live_bytes);
		row_num(&row, C_TYPED_LIVE, p->typed_live_bytes);
		row_print(out, &row, r->sampled);
	}
	for (i = 0; i < SP_MEM_ERR__MAX; i++) {
		row.s[C_KIND] = "error";
		row.s[C_NAME] = mem_report__error_name(i);
		row_num(&row, C_COUNT, r->errors[i]);
		row_print(out, &row, r->sampled);
	}
	return text__flush(out);
}

void mem_report__warn_errors(FILE *err, const struct mem_report *r)
{
	unsigned int i;

	for (i = 0; i < SP_MEM_ERR__MAX; i++) {
		/* Frees of memory from before the trace are normal with -p. */
		if (!r->errors[i])
			continue;
		fprintf(err, "sptrace: warning: %" PRIu64 " %s (%s)\n",
			r->errors[i], mem_report__error_name(i), mem_error_hints[i]);
	}
	fflush(err);
}

int mem_report__write(FILE *out, const struct mem_report *r,
		      enum summary_format fmt, unsigned int width)
{
	int err;

	switch (fmt) {
	case SUMMARY_TABLE:
		err = mem_report__write_table(out, r, width);
		break;
	case SUMMARY_JSON:
		err = mem_report__write_json(out, r);
		break;
	case SUMMARY_CSV:
		err = mem_report__write_csv(out, r);
		break;
	default:
		return -EINVAL;
	}
	mem_report__warn_errors(stderr, r);
	return err;
}
