// SPDX-License-Identifier: MIT
/*
 * The memory report's rows and merging (mem_report.h); out/mem_writer.c
 * writes them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "mem_report.h"
#include "vec.h"

static const char *const mem_error_names[SP_MEM_ERR__MAX] = {
	[SP_MEM_ERR_UNKNOWN_FREE] = "unknown_frees",
	[SP_MEM_ERR_LIVE_FULL] = "live_map_full",
	[SP_MEM_ERR_ROWS_FULL] = "rows_map_full",
	[SP_MEM_ERR_SITES_FULL] = "sites_map_full",
	[SP_MEM_ERR_STACK_LOST] = "stacks_lost",
	[SP_MEM_ERR_CALLS_FULL] = "calls_map_full",
	[SP_MEM_ERR_STALE_CALL] = "stale_calls",
	[SP_MEM_ERR_LIVE_REPLACED] = "live_replaced",
	[SP_MEM_ERR_PEAK_RETRY] = "peak_retries",
	[SP_MEM_ERR_MEMPTR_READ] = "memptr_read_failed",
	[SP_MEM_ERR_THREADS_FULL] = "threads_map_full",
};

const char *mem_report__error_name(unsigned int i)
{
	return i < SP_MEM_ERR__MAX ? mem_error_names[i] : "?";
}

void mem_report__init(struct mem_report *r)
{
	memset(r, 0, sizeof(*r));
	r->sampled = 1;
	r->tl.step = 1;
}

static void free_frames(char **frames, unsigned int n)
{
	unsigned int i;

	for (i = 0; frames && i < n; i++)
		free(frames[i]);
	free(frames);
}

void mem_report__free(struct mem_report *r)
{
	unsigned int i;

	for (i = 0; i < r->ntypes; i++)
		free(r->types[i].name);
	for (i = 0; i < r->nthreads; i++) {
		free(r->threads[i].thread);
		free(r->threads[i].type);
	}
	for (i = 0; i < r->nsites; i++) {
		free_frames(r->sites[i].frames, r->sites[i].nframes);
		free(r->sites[i].type);
	}
	free(r->types);
	free(r->threads);
	free(r->sites);
	free(r->tl.v);
	free(r->tl.command);
	mem_report__init(r);
}

static void figures_add(struct mem_figures *a, const struct mem_figures *b)
{
	a->allocs += b->allocs;
	a->alloc_bytes += b->alloc_bytes;
	a->frees += b->frees;
	a->free_bytes += b->free_bytes;
	a->live += b->live;
	a->live_bytes += b->live_bytes;
	a->peak_live_bytes += b->peak_live_bytes;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

int mem_report__add_type(struct mem_report *r, const char *name,
			 const struct mem_figures *f)
{
	struct mem_type_row *v;
	unsigned int i;

	for (i = 0; i < r->ntypes; i++) {
		if (!strcmp(r->types[i].name, name)) {
			figures_add(&r->types[i].f, f);
			return 0;
		}
	}
	if (VEC_RESERVE(r->types, r->types_cap, (size_t)r->ntypes + 1))
		return -ENOMEM;
	v = r->types;
	v[r->ntypes].name = strdup(name);
	if (!v[r->ntypes].name)
		return -ENOMEM;
	v[r->ntypes++].f = *f;
	return 0;
}

int mem_report__add_thread(struct mem_report *r, uint32_t pid, uint32_t tid,
			   const char *thread, const char *type,
			   const struct mem_figures *f)
{
	struct mem_thread_row *v, *t;
	bool oom = false;
	unsigned int i;

	for (i = 0; i < r->nthreads; i++) {
		t = &r->threads[i];
		if (t->pid == pid && t->tid == tid && same_str(t->type, type)) {
			figures_add(&t->f, f);
			return 0;
		}
	}
	if (VEC_RESERVE(r->threads, r->threads_cap, (size_t)r->nthreads + 1))
		return -ENOMEM;
	v = r->threads;
	t = &v[r->nthreads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->f = *f;
	t->thread = dup_or_null(thread ? thread : "?", &oom);
	t->type = dup_or_null(type, &oom);
	return oom ? -ENOMEM : 0;
}

static bool same_frames(const struct mem_site_row *s, char **frames,
			unsigned int n)
{
	unsigned int i;

	if (s->nframes != n)
		return false;
	for (i = 0; i < n; i++)
		if (strcmp(s->frames[i], frames[i]))
			return false;
	return true;
}

int mem_report__add_site(struct mem_report *r, char **frames,
			 unsigned int nframes, const char *type,
			 uint64_t allocs, uint64_t alloc_bytes, uint64_t live,
			 uint64_t live_bytes)
{
	struct mem_site_row *v, *s;
	bool oom = false;
	unsigned int i;

	for (i = 0; i < r->nsites; i++) {
		s = &r->sites[i];
		if (same_str(s->type, type) && same_frames(s, frames, nframes)) {
			s->allocs += allocs;
			s->alloc_bytes += alloc_bytes;
			s->live += live;
			s->live_bytes += live_bytes;
			free_frames(frames, nframes);
			return 0;
		}
	}
	if (VEC_RESERVE(r->sites, r->sites_cap, (size_t)r->nsites + 1)) {
		free_frames(frames, nframes);
		return -ENOMEM;
	}
	v = r->sites;
	s = &v[r->nsites++];
	*s = (struct mem_site_row){
		.frames = frames, .nframes = nframes,
		.type = dup_or_null(type, &oom), .allocs = allocs,
		.alloc_bytes = alloc_bytes, .live = live,
		.live_bytes = live_bytes,
	};
	return oom ? -ENOMEM : 0;
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a == b ? 0 : a > b ? -1 : 1;
}

static int type_cmp(const void *a, const void *b)
{
	const struct mem_type_row *x = a, *y = b;
	int c = cmp_u64_desc(x->f.live_bytes, y->f.live_bytes);

	if (!c)
		c = cmp_u64_desc(x->f.alloc_bytes, y->f.alloc_bytes);
	return c ? c : strcmp(x->name, y->name);
}

static int thread_cmp(const void *a, const void *b)
{
	const struct mem_thread_row *x = a, *y = b;
	int c = cmp_u64_desc(x->f.live_bytes, y->f.live_bytes);

	if (!c)
		c = cmp_u64_desc(x->f.alloc_bytes, y->f.alloc_bytes);
	if (!c && x->tid != y->tid)
		c = x->tid < y->tid ? -1 : 1;
	if (!c)
		c = strcmp(x->type ? x->type : "", y->type ? y->type : "");
	return c;
}

static int site_cmp(const void *a, const void *b)
{
	const struct mem_site_row *x = a, *y = b;
	unsigned int i;
	int c = cmp_u64_desc(x->live_bytes, y->live_bytes);

	if (!c)
		c = cmp_u64_desc(x->alloc_bytes, y->alloc_bytes);
	for (i = 0; !c && i < x->nframes && i < y->nframes; i++)
		c = strcmp(x->frames[i], y->frames[i]);
	return c ? c : (int)x->nframes - (int)y->nframes;
}

void mem_report__finish(struct mem_report *r)
{
	if (r->ntypes)
		qsort(r->types, r->ntypes, sizeof(r->types[0]), type_cmp);
	if (r->nthreads)
		qsort(r->threads, r->nthreads, sizeof(r->threads[0]),
		      thread_cmp);
	if (r->nsites)
		qsort(r->sites, r->nsites, sizeof(r->sites[0]), site_cmp);
}

/* ---- timeline ------------------------------------------------------------ */

static void point_merge(struct mem_point *a, const struct mem_point *b)
{
#define MAX_INTO(f) a->f = a->f > b->f ? a->f : b->f
	MAX_INTO(rss_bytes);
	MAX_INTO(rss_anon_bytes);
	MAX_INTO(rss_file_bytes);
	MAX_INTO(heap_live_bytes);
	MAX_INTO(typed_live_bytes);
#undef MAX_INTO
}

int mem_timeline__add(struct mem_timeline *tl, const struct mem_point *p)
{
	unsigned int i;

	if (!tl->step)
		tl->step = 1;
	if (tl->n && tl->pending < tl->step) {
		point_merge(&tl->v[tl->n - 1], p);
		tl->pending++;
		return 0;
	}
	if (!tl->v) {
		tl->v = calloc(MEM_TIMELINE_MAX, sizeof(*tl->v));
		if (!tl->v)
			return -ENOMEM;
	}
	if (tl->n == MEM_TIMELINE_MAX) {
		/* Full: halve the points, each now covers twice as long. */
		for (i = 0; i < tl->n / 2; i++) {
			tl->v[i] = tl->v[2 * i];
			point_merge(&tl->v[i], &tl->v[2 * i + 1]);
		}
		tl->n /= 2;
		tl->step *= 2;
	}
	tl->v[tl->n++] = *p;
	tl->pending = 1;
	return 0;
}
