// SPDX-License-Identifier: MIT
/*
 * The in-memory summary: source rows merged by query name, their sparse
 * histograms, and the derived numbers (self-time total, percentiles, order)
 * that every writer prints as is.
 *
 * Name lookup uses an open-addressing hash index (FNV-1a, linear probing)
 * with 2 * rows_cap slots (rows_cap is a power of two), so the load factor
 * stays <= 1/2 and probing always ends on an empty slot. A slot holds row
 * index + 1, 0 meaning empty. Rows move on grow and on sort; both rebuild
 * the index.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "summary.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define ROWS_MIN_CAP 16
#define BINS_MIN_CAP 8

static const char *const error_names[] = {
	[SP_ERR_END_WITHOUT_BEGIN] = "end_without_begin",
	[SP_ERR_END_MISMATCH] = "end_mismatch",
	[SP_ERR_STACK_OVERFLOW] = "stack_overflow",
	[SP_ERR_THREAD_EXIT_OPEN] = "thread_exit_open",
	[SP_ERR_QUERIES_FULL] = "queries_map_full",
	[SP_ERR_HIST_FULL] = "hist_map_full",
	[SP_ERR_NAMES_FULL] = "names_map_full",
	[SP_ERR_THREADS_FULL] = "threads_map_full",
	[SP_ERR_NAME_READ] = "name_read_failed",
	[SP_ERR_EVENTS_LOST] = "events_lost",
	[SP_ERR_FUNC_UNWOUND] = "func_unwound",
	[SP_ERR_BATCH_LOST] = "batch_lost",
	[SP_ERR_ASYNC_FULL] = "async_map_full",
	[SP_ERR_ABANDONED] = "abandoned",
};
_Static_assert(ARRAY_SIZE(error_names) == SP_ERR__MAX,
	       "error_names[] must name every enum sp_error slot");

static uint64_t fnv1a(const char *str)
{
	const unsigned char *p = (const unsigned char *)str;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*p) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint32_t *index_slots(const struct summary *s)
{
	return s->index;
}

static uint64_t row_hash(const char *name, uint32_t pid)
{
	return fnv1a(name) ^ ((uint64_t)pid * 0x9e3779b97f4a7c15ULL);
}

/* Slot holding (name, pid), or the empty slot where it belongs. */
static uint32_t *index_find(const struct summary *s, const char *name,
			    uint32_t pid, uint64_t hash)
{
	uint32_t *slots = index_slots(s);
	size_t mask = 2 * (size_t)s->rows_cap - 1;
	size_t i = hash & mask;

	while (slots[i] && (s->rows[slots[i] - 1].pid != pid ||
			    strcmp(s->rows[slots[i] - 1].name, name)))
		i = (i + 1) & mask;
	return &slots[i];
}

static void index_rebuild(struct summary *s)
{
	unsigned int i;

	if (!s->rows)
		return;
	memset(index_slots(s), 0, 2 * (size_t)s->rows_cap * sizeof(uint32_t));
	for (i = 0; i < s->nrows; i++)
		*index_find(s, s->rows[i].name, s->rows[i].pid,
			    row_hash(s->rows[i].name, s->rows[i].pid)) = i + 1;
}

static int rows_grow(struct summary *s)
{
	unsigned int cap = s->rows_cap ? s->rows_cap * 2 : ROWS_MIN_CAP;
	size_t per_row = sizeof(struct sp_query_row);
	struct sp_query_row *rows;
	uint32_t *index;

	/* Index slots hold row + 1 in a uint32_t, and sizes must not wrap. */
	if (cap <= s->rows_cap || cap > UINT32_MAX / 2 ||
	    cap > SIZE_MAX / per_row)
		return -ENOMEM;
	index = malloc(2 * (size_t)cap * sizeof(*index));
	if (!index)
		return -ENOMEM;
	rows = realloc(s->rows, cap * per_row);
	if (!rows) {
		free(index);
		return -ENOMEM;
	}
	free(s->index);
	s->index = index;
	s->rows = rows;
	s->rows_cap = cap;
	index_rebuild(s);
	return 0;
}

/* The row (name, pid), created empty on first use; NULL on ENOMEM. */
static struct sp_query_row *summary__row(struct summary *s, const char *name,
					 uint32_t pid)
{
	uint64_t hash;
	struct sp_query_row *r;
	uint32_t *slot;
	char *copy;

	if (!s->per_pid)
		pid = 0;
	hash = row_hash(name, pid);
	if (s->rows) {
		slot = index_find(s, name, pid, hash);
		if (*slot)
			return &s->rows[*slot - 1];
	}
	if (s->nrows == s->rows_cap && rows_grow(s))
		return NULL;
	copy = strdup(name);
	if (!copy)
		return NULL;
	r = &s->rows[s->nrows];
	memset(r, 0, sizeof(*r));
	r->name = copy;
	r->pid = pid;
	/* Looked up again: growing moved the index. */
	slot = index_find(s, name, pid, hash);
	*slot = ++s->nrows;
	return r;
}

void summary__init(struct summary *s)
{
	memset(s, 0, sizeof(*s));
}

void summary__free(struct summary *s)
{
	unsigned int i;

	for (i = 0; i < s->nrows; i++) {
		free(s->rows[i].name);
		free(s->rows[i].bins);
	}
	free(s->rows);
	free(s->index);
	for (i = 0; i < s->ntitles; i++)
		free(s->titles[i].title);
	free(s->titles);
	free(s->overhead.procs);
	free(s->sampled);
	summary__init(s);
}

/* Index of the first title whose pid is >= `pid`. */
static unsigned int title_pos(const struct summary *s, uint32_t pid)
{
	unsigned int lo = 0, hi = s->ntitles;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (s->titles[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *summary__title(const struct summary *s, uint32_t pid)
{
	unsigned int i = title_pos(s, pid);

	return i < s->ntitles && s->titles[i].pid == pid ? s->titles[i].title
							  : NULL;
}

int summary__set_title(struct summary *s, uint32_t pid, const char *title)
{
	unsigned int i = title_pos(s, pid);
	char *copy = strdup(title);

	if (!copy)
		return -ENOMEM;
	if (i < s->ntitles && s->titles[i].pid == pid) {
		free(s->titles[i].title);
		s->titles[i].title = copy;
		return 0;
	}
	if (s->ntitles == s->titles_cap) {
		unsigned int cap = s->titles_cap ? 2 * s->titles_cap : 16;
		struct summary_title *v;

		v = cap > s->titles_cap ? realloc(s->titles, cap * sizeof(*v))
					: NULL;
		if (!v) {
			free(copy);
			return -ENOMEM;
		}
		s->titles = v;
		s->titles_cap = cap;
	}
	memmove(&s->titles[i + 1], &s->titles[i],
		(s->ntitles - i) * sizeof(*s->titles));
	s->titles[i] = (struct summary_title){ .pid = pid, .title = copy };
	s->ntitles++;
	return 0;
}

int summary__copy_titles(struct summary *dst, const struct summary *src)
{
	unsigned int i;
	int err = 0;

	for (i = 0; !err && i < src->ntitles; i++)
		err = summary__set_title(dst, src->titles[i].pid,
					 src->titles[i].title);
	return err;
}

int summary__set_sampling(struct summary *dst, const struct summary_sampled *v,
			  size_t n)
{
	struct summary_sampled *c = NULL;

	if (v == dst->sampled)
		return 0;
	if (n) {
		c = malloc(n * sizeof(*c));
		if (!c)
			return -ENOMEM;
		memcpy(c, v, n * sizeof(*c));
	}
	free(dst->sampled);
	dst->sampled = c;
	dst->nsampled = (unsigned int)n;
	return 0;
}

double summary__overhead_share(const struct summary_overhead *o,
			       uint64_t *probe_ns, uint64_t *cpu_ns)
{
	uint64_t p = 0, c = 0;
	unsigned int i;

	for (i = 0; o->known && i < o->nprocs; i++) {
		if (!o->procs[i].win_cpu_ns)
			continue;
		p += o->procs[i].win_probe_ns;
		c += o->procs[i].win_cpu_ns;
	}
	if (probe_ns)
		*probe_ns = p;
	if (cpu_ns)
		*cpu_ns = c;
	if (!c)
		return -1;
	/* An estimate above the CPU time read (a run whose traps cost less
	 * than the calibration's) is no more than all of it. */
	return (double)p >= (double)c ? 1.0 : (double)p / (double)c;
}

const char *summary__hit_name(unsigned int k)
{
	static const char *const names[SP_HIT__MAX] = {
		[SP_HIT_EVENT] = "event", [SP_HIT_FLUSH] = "flush",
		[SP_HIT_RECORD] = "record", [SP_HIT_PAUSE_NS] = "flush_host_ns",
		[SP_HIT_SPEC] = "spec", [SP_HIT_FUNC] = "func",
		[SP_HIT_FUNC_STEP] = "func_step",
	};

	return k < SP_HIT__MAX ? names[k] : "?";
}

int summary__set_overhead(struct summary *dst, const struct summary_overhead *o)
{
	struct summary_cost *p = NULL;

	if (o == &dst->overhead)
		return 0;
	free(dst->overhead.procs);
	memset(&dst->overhead, 0, sizeof(dst->overhead));
	if (!o || !o->known)
		return 0;
	if (o->nprocs) {
		p = malloc(o->nprocs * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memcpy(p, o->procs, o->nprocs * sizeof(*p));
	}
	dst->overhead = *o;
	dst->overhead.procs = p;
	return 0;
}

void summary__copy_counts(struct summary *dst, const struct summary *src)
{
	(void)summary__set_overhead(dst, &src->overhead);	/* none if -ENOMEM */
	(void)summary__set_sampling(dst, src->sampled, src->nsampled);
	memcpy(dst->errors, src->errors, sizeof(dst->errors));
	dst->lost = src->lost;
	dst->events_mode = src->events_mode;
	dst->batch_fallback = src->batch_fallback;
	dst->sample_cut = src->sample_cut;
	dst->batch_fallback_unknown = src->batch_fallback_unknown;
}

int summary__add_stats(struct summary *s, const char *name,
		       const struct sp_query_stats *st)
{
	return summary__add_stats_pid(s, name, 0, st);
}

int summary__row_index(struct summary *s, const char *name, uint32_t pid)
{
	struct sp_query_row *r;

	if (!name)
		return -EINVAL;
	r = summary__row(s, name, pid);
	if (!r)
		return -ENOMEM;
	return (int)(r - s->rows);
}

int summary__add_stats_pid(struct summary *s, const char *name, uint32_t pid,
			   const struct sp_query_stats *st)
{
	int row = summary__row_index(s, name, pid);

	if (row < 0)
		return row;
	return summary__add_stats_at(s, (unsigned int)row, st);
}

int summary__add_stats_at(struct summary *s, unsigned int row,
			  const struct sp_query_stats *st)
{
	struct sp_query_stats *q;

	if (!st || row >= s->nrows)
		return -EINVAL;
	q = &s->rows[row].st;
	/* min_ns means nothing in a source row that completed nothing. */
	if (st->count && (!q->count || st->min_ns < q->min_ns))
		q->min_ns = st->min_ns;
	if (st->max_ns > q->max_ns)
		q->max_ns = st->max_ns;
	q->count += st->count;
	q->total_ns += st->total_ns;
	q->self_ns += st->self_ns;
	q->cache_hits += st->cache_hits;
	q->incr_loads += st->incr_loads;
	q->incr_load_ns += st->incr_load_ns;
	q->blocked_count += st->blocked_count;
	q->blocked_ns += st->blocked_ns;
	s->finished = false;
	return 0;
}

/* Index of the first bin whose bucket is >= bucket. */
static unsigned int bins_lower_bound(const struct sp_query_row *r,
				     uint32_t bucket)
{
	unsigned int lo = 0, hi = r->nbins;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (r->bins[mid].bucket < bucket)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int bins_insert(struct sp_query_row *r, unsigned int at,
		       uint32_t bucket, uint64_t count)
{
	if (r->nbins == r->bins_cap) {
		unsigned int cap = r->bins_cap ? r->bins_cap * 2 : BINS_MIN_CAP;
		struct sp_hist_bin *bins;

		bins = realloc(r->bins, cap * sizeof(*bins));
		if (!bins)
			return -ENOMEM;
		r->bins = bins;
		r->bins_cap = cap;
	}
	memmove(&r->bins[at + 1], &r->bins[at],
		(r->nbins - at) * sizeof(r->bins[0]));
	r->bins[at].bucket = bucket;
	r->bins[at].pad = 0;
	r->bins[at].count = count;
	r->nbins++;
	return 0;
}

int summary__add_hist(struct summary *s, const char *name, uint32_t bucket,
		      uint64_t count)
{
	return summary__add_hist_pid(s, name, 0, bucket, count);
}

int summary__add_hist_pid(struct summary *s, const char *name, uint32_t pid,
			  uint32_t bucket, uint64_t count)
{
	int row;

	if (bucket >= SP_HIST_BUCKETS)
		return -EINVAL;
	row = summary__row_index(s, name, pid);
	if (row < 0)
		return row;
	return summary__add_hist_at(s, (unsigned int)row, bucket, count);
}

int summary__add_hist_at(struct summary *s, unsigned int row, uint32_t bucket,
			 uint64_t count)
{
	struct sp_query_row *r;
	unsigned int at;

	if (bucket >= SP_HIST_BUCKETS || row >= s->nrows)
		return -EINVAL;
	r = &s->rows[row];
	s->finished = false;
	/* An empty bin would only make the writers print a zero. */
	if (!count)
		return 0;
	at = bins_lower_bound(r, bucket);
	if (at < r->nbins && r->bins[at].bucket == bucket) {
		r->bins[at].count += count;
		return 0;
	}
	return bins_insert(r, at, bucket, count);
}

static void row_percentiles(struct sp_query_row *r)
{
	const struct sp_query_stats *st = &r->st;
	uint64_t n = 0;
	unsigned int i;

	r->p50_ns = r->p90_ns = r->p99_ns = 0;
	if (!st->count)
		return;
	/* The histogram may hold fewer counts than st->count (hist map
	 * full); ranks must come from the counts it does hold. */
	for (i = 0; i < r->nbins; i++)
		n += r->bins[i].count;
	r->p50_ns = sp_hist_percentile(r->bins, r->nbins, n, 0.50,
				       st->min_ns, st->max_ns);
	r->p90_ns = sp_hist_percentile(r->bins, r->nbins, n, 0.90,
				       st->min_ns, st->max_ns);
	r->p99_ns = sp_hist_percentile(r->bins, r->nbins, n, 0.99,
				       st->min_ns, st->max_ns);
}

void summary__finish(struct summary *s)
{
	uint64_t total = 0;
	unsigned int i;

	for (i = 0; i < s->nrows; i++) {
		total += s->rows[i].st.self_ns;
		row_percentiles(&s->rows[i]);
	}
	s->total_self_ns = total;
	summary__sort(s, SORT_SELF);
	s->finished = true;
}

/* Ties ascending by name, then pid, so output is stable across runs
 * (qsort is not a stable sort). */
static int cmp_name_pid(const struct sp_query_row *x,
			const struct sp_query_row *y)
{
	int c = strcmp(x->name, y->name);

	if (c || x->pid == y->pid)
		return c;
	return x->pid < y->pid ? -1 : 1;
}

/* Descending by one figure. */
#define DEFINE_CMP_DESC(fn, field)					\
static int fn(const void *a, const void *b)				\
{									\
	const struct sp_query_row *x = a, *y = b;			\
									\
	if (x->field != y->field)					\
		return x->field < y->field ? 1 : -1;			\
	return cmp_name_pid(x, y);					\
}

DEFINE_CMP_DESC(cmp_self, st.self_ns)
DEFINE_CMP_DESC(cmp_total, st.total_ns)
DEFINE_CMP_DESC(cmp_count, st.count)
DEFINE_CMP_DESC(cmp_cache_hits, st.cache_hits)
DEFINE_CMP_DESC(cmp_blocked, st.blocked_ns)
DEFINE_CMP_DESC(cmp_incr, st.incr_load_ns)
DEFINE_CMP_DESC(cmp_p50, p50_ns)
DEFINE_CMP_DESC(cmp_p99, p99_ns)
DEFINE_CMP_DESC(cmp_max, st.max_ns)

static int cmp_name(const void *a, const void *b)
{
	return cmp_name_pid(a, b);
}

static const struct {
	const char *str;
	int (*cmp)(const void *, const void *);
} sort_keys[] = {
	[SORT_SELF] = { "self", cmp_self },
	[SORT_TOTAL] = { "total", cmp_total },
	[SORT_COUNT] = { "count", cmp_count },
	[SORT_NAME] = { "name", cmp_name },
	[SORT_CACHE_HITS] = { "cache-hits", cmp_cache_hits },
	[SORT_BLOCKED] = { "blocked", cmp_blocked },
	[SORT_INCR] = { "incr", cmp_incr },
	[SORT_P50] = { "p50", cmp_p50 },
	[SORT_P99] = { "p99", cmp_p99 },
	[SORT_MAX] = { "max", cmp_max },
};

void summary__sort(struct summary *s, enum summary_sort key)
{
	if ((unsigned int)key >= ARRAY_SIZE(sort_keys))
		key = SORT_SELF;
	if (s->nrows > 1)
		qsort(s->rows, s->nrows, sizeof(s->rows[0]), sort_keys[key].cmp);
	index_rebuild(s);
}

int summary__parse_sort(const char *str, enum summary_sort *key)
{
	unsigned int i;

	for (i = 0; str && i < ARRAY_SIZE(sort_keys); i++) {
		if (!strcmp(str, sort_keys[i].str)) {
			*key = (enum summary_sort)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *summary__error_name(unsigned int i)
{
	return i < ARRAY_SIZE(error_names) ? error_names[i] : "unknown";
}

uint64_t summary__unbalanced(const struct summary *s)
{
	return s->errors[SP_ERR_END_WITHOUT_BEGIN] +
	       s->errors[SP_ERR_END_MISMATCH] +
	       s->errors[SP_ERR_STACK_OVERFLOW] +
	       s->errors[SP_ERR_THREAD_EXIT_OPEN];
}

uint64_t summary__map_full(const struct summary *s)
{
	return s->errors[SP_ERR_QUERIES_FULL] + s->errors[SP_ERR_HIST_FULL] +
	       s->errors[SP_ERR_NAMES_FULL] + s->errors[SP_ERR_THREADS_FULL] +
	       s->errors[SP_ERR_ASYNC_FULL];
}
