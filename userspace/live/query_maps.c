// SPDX-License-Identifier: MIT
/*
 * Live source: reads `queries`, `hist`, `names` and `errors` of
 * bpf/query.bpf.c and feeds the summary. Names are taken from the `names`
 * map the BPF side filled when each row was created; a name it could not
 * read (its page was not present, or the row was made by a drain in
 * sptrace's own context) is read now through the address-space snapshot;
 * failing that the row is named after its address.
 *
 * A row's name never changes, so the names read are kept between reads
 * (struct query_names): a repeated read (serve, --interval) looks up only
 * the rows it has not seen, and a name read from the live process stays
 * its name once the process is gone and its heap with it.
 */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "addr_space.h"
#include "log.h"
#include "pg_text.h"
#include <sptrace/query_abi.h>
#include <sptrace/tsc_map.h>	/* the .bss of query.skel.h */
#include "query.skel.h"
#include "query_maps.h"
#include "sampler.h"
#include "vec.h"

_Static_assert(sizeof(struct sp_query_key) == 16, "sp_query_key layout");
_Static_assert(sizeof(struct sp_hist_key) == 16, "sp_hist_key layout");
_Static_assert(sizeof(struct sp_query_stats) == 80, "sp_query_stats layout");
_Static_assert(offsetof(struct sp_thread_stack, frames) == 16,
	       "sp_thread_stack layout");
_Static_assert(sizeof(struct sp_frame) == 40, "sp_frame layout");
_Static_assert(sizeof(struct sp_thread_name) == 8 + SP_THREAD_NAME_LEN,
	       "sp_thread_name layout");
_Static_assert(sizeof(struct sp_async_key) == 24, "sp_async_key layout");
_Static_assert(sizeof(struct sp_async_busy) == 16, "sp_async_busy layout");

struct name_entry {
	struct sp_query_key key;	/* tgid 0: a free slot */
	char *str;
	uint32_t seen;			/* the read that last counted it */
	bool unresolved;		/* neither BPF nor we could read it */
	/* Its row in the summary of read `row_read` (set by the `queries`
	 * entry, so the `hist` entries of the row skip the summary's
	 * lookup by name: a scrape of 10,000 rows meets ~25,000 of them). */
	uint32_t row_read;
	uint32_t row;
};

/* An open-addressing hash of (tgid, name address). */
struct query_names {
	struct name_entry *v;
	size_t n, cap;			/* cap: a power of two */
	uint32_t read;
};

struct name_table {
	struct query_names *c;
	int fd;				/* the `names` map */
	int key_fd;			/* `key_rows`: --query-keys rows */
	size_t misses;			/* looked up one by one, this read */
	query_tag_name_fn tag_name;	/* --func, --query rows */
	void *tag_ctx;
	uint64_t unresolved;	/* names neither BPF nor we could read */
};

struct query_names *query_names__new(void)
{
	return calloc(1, sizeof(struct query_names));
}

void query_names__free(struct query_names *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->cap; i++)
		free(c->v[i].str);
	free(c->v);
	free(c);
}

static size_t name_slot(const struct query_names *c, __u32 tgid, __u64 name)
{
	uint64_t h = (name ^ ((uint64_t)tgid << 40)) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 17) & (c->cap - 1);

	while (c->v[i].key.tgid && (c->v[i].key.tgid != tgid ||
				    c->v[i].key.name != name))
		i = (i + 1) & (c->cap - 1);
	return i;
}

static struct name_entry *name_find(const struct query_names *c, __u32 tgid,
				    __u64 name)
{
	size_t i;

	if (!c->cap)
		return NULL;
	i = name_slot(c, tgid, name);
	return c->v[i].key.tgid ? &c->v[i] : NULL;
}

/* Takes str. NULL (str freed) if out of memory. */
static struct name_entry *name_insert(struct query_names *c,
				      const struct sp_query_key *key,
				      char *str)
{
	struct name_entry *e;
	size_t i;

	if (!str)
		return NULL;
	if (2 * (c->n + 1) > c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024, j;
		struct query_names old = *c;

		c->v = calloc(cap, sizeof(*c->v));
		if (!c->v) {
			*c = old;
			free(str);
			return NULL;
		}
		c->cap = cap;
		for (j = 0; j < old.cap; j++)
			if (old.v[j].key.tgid)
				c->v[name_slot(c, old.v[j].key.tgid,
					       old.v[j].key.name)] = old.v[j];
		free(old.v);
	}
	i = name_slot(c, key->tgid, key->name);
	e = &c->v[i];
	if (e->key.tgid) {	/* known: keep the first */
		free(str);
		return e;
	}
	e->key = *key;
	e->str = str;
	e->seen = 0;
	e->unresolved = false;
	e->row_read = 0;	/* no read is 0: names->read counts from 1 */
	c->n++;
	return e;
}

static int u32_cmp(const void *a, const void *b);

/* Forgets the names of processes `tgids` (sorted). */
static void names_forget(struct query_names *c, const uint32_t *tgids,
			 size_t n)
{
	struct name_entry *old = c->v;
	size_t cap = c->cap, j;

	if (!c->n)
		return;
	/* Rehashed without them: no tombstones to probe past. */
	c->v = calloc(cap, sizeof(*c->v));
	if (!c->v) {
		c->v = old;	/* kept: a later process with the pid and the
				 * same address would get the old name */
		return;
	}
	c->n = 0;
	for (j = 0; j < cap; j++) {
		if (!old[j].key.tgid)
			continue;
		if (bsearch(&old[j].key.tgid, tgids, n, sizeof(*tgids),
			    u32_cmp)) {
			free(old[j].str);
			continue;
		}
		c->v[name_slot(c, old[j].key.tgid, old[j].key.name)] = old[j];
		c->n++;
	}
	free(old);
}

/*
 * One read path for every map of the family: bpf_map_lookup_batch() takes
 * up to MAP_BATCH entries (and about MAP_BATCH_BYTES of values) per system
 * call: a scrape of 10,000 rows and their histograms is a few calls instead
 * of two per entry, and measured 2.5x faster. On a kernel or map type
 * without batch operations, get_next_key + lookup.
 * fn gets each key and its value (per-CPU maps: `ncpus` values, each
 * rounded up to 8 bytes, as the kernel copies them). A hash map read while
 * the target runs may show a new entry or miss one created meanwhile;
 * either way every entry read is consistent with itself.
 */
#define MAP_BATCH 8192
/* ... fewer when the values are large (per-CPU values on many CPUs). */
#define MAP_BATCH_BYTES (1u << 20)

typedef int (*map_entry_fn)(void *ctx, const void *key, const void *val);

static int map_for_each_loop(int fd, size_t ksize, void *key, void *next,
			     void *vals, map_entry_fn fn, void *ctx)
{
	void *prev = NULL;
	int err;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, ksize);
		prev = key;
		if (bpf_map_lookup_elem(fd, key, vals))
			continue;	/* deleted meanwhile */
		err = fn(ctx, key, vals);
		if (err)
			return err;
	}
	return 0;
}

static int map_for_each(int fd, size_t ksize, size_t vsize, int ncpus,
			map_entry_fn fn, void *ctx)
{
	size_t vlen = ncpus > 0 ? (size_t)ncpus * ((vsize + 7) & ~(size_t)7)
				: vsize;
	__u32 n, batch = MAP_BATCH, i;
	char tok_in[16], tok_out[16];
	void *in = NULL, *keys, *vals;
	/* The fallback, on demand: how tests reach it on a kernel that
	 * has batch operations. */
	bool first = true, loop = getenv("SPTRACE_NO_MAP_BATCH") != NULL;
	int err = 0;

	while (batch > 64 && (size_t)batch * vlen > MAP_BATCH_BYTES)
		batch /= 2;
	keys = calloc(batch, ksize);
	vals = calloc(batch, vlen);
	if (!keys || !vals) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		n = batch;
		err = loop ? -EOPNOTSUPP :
		      bpf_map_lookup_batch(fd, in, tok_out, keys, vals, &n,
					   NULL);
		err = err && !loop ? -errno : err;
		if (err && err != -ENOENT) {
			if (first && (err == -EINVAL || err == -EOPNOTSUPP ||
				      err == -524 /* ENOTSUPP */)) {
				err = map_for_each_loop(fd, ksize, keys,
						(char *)keys + ksize, vals, fn,
						ctx);
				goto cleanup;
			}
			if (err == -ENOSPC && batch < (1u << 20)) {
				/* A hash bucket holds more than `batch`. */
				void *k = realloc(keys, 2 * (size_t)batch * ksize);
				void *v = k ? realloc(vals, 2 * (size_t)batch * vlen)
					    : NULL;

				if (k)
					keys = k;
				if (!v) {
					err = -ENOMEM;
					goto cleanup;
				}
				vals = v;
				batch *= 2;
				continue;
			}
			goto cleanup;
		}
		first = false;
		for (i = 0; i < n; i++) {
			int e = fn(ctx, (char *)keys + (size_t)i * ksize,
				   (char *)vals + (size_t)i * vlen);

			if (e) {
				err = e;
				goto cleanup;
			}
		}
		if (err == -ENOENT) {
			err = 0;
			break;
		}
		memcpy(tok_in, tok_out, sizeof(tok_in));
		in = tok_in;
	}
cleanup:
	free(keys);
	free(vals);
	return err;
}

struct names_ctx {
	const struct addr_spaces *as;
	struct name_table *t;
};

/* A `names` entry into the cache: what BPF read, else what we read. */
static struct name_entry *name_add(struct name_table *t,
				   const struct addr_spaces *as,
				   const struct sp_query_key *key,
				   struct sp_name *val)
{
	struct name_entry *e = name_find(t->c, key->tgid, key->name);
	bool bad = false;

	if (e)
		return e;
	/* Not read by BPF: where BPF located it (a library since unloaded
	 * and its addresses reused: the snapshot would name the new
	 * occupant), else at its address. */
	if (!val->str[0]) {
		struct sp_name_loc loc = val->loc;

		bad = (loc.magic != SP_NAME_LOC_MAGIC ||
		       addr_spaces__read_file_str(as, loc.dev, loc.ino, loc.off,
						  val->str,
						  sizeof(val->str))) &&
		      addr_spaces__read_str(as, (pid_t)key->tgid, key->name,
					    val->str, sizeof(val->str));
	}
	val->str[SP_NAME_LEN - 1] = 0;
	if (bad) {
		snprintf(val->str, sizeof(val->str),
			 "<unreadable name 0x%llx in pid %u>",
			 (unsigned long long)key->name, key->tgid);
		bad = true;
	}
	e = name_insert(t->c, key, strdup(val->str));
	if (e)
		e->unresolved = bad;
	return e;
}

static int add_name(void *ctx, const void *k, const void *v)
{
	struct names_ctx *c = ctx;
	struct sp_query_key key;
	struct sp_name val;

	memcpy(&key, k, sizeof(key));
	memcpy(&val, v, sizeof(val));
	return name_add(c->t, c->as, &key, &val) ? 0 : -ENOMEM;
}

/* Every name of the map not yet known, in a few system calls. */
static int load_names(int fd, const struct addr_spaces *as,
		      struct name_table *t)
{
	struct names_ctx c = { .as = as, .t = t };

	return map_for_each(fd, sizeof(struct sp_query_key),
			    sizeof(struct sp_name), 0, add_name, &c);
}

/* One by one while few are new; past this many in a read, the whole map. */
#define NAMES_LOOKUPS_MAX 256

static const char *name_of(struct name_table *t,
			   const struct addr_spaces *as, __u32 tgid,
			   __u64 name, char *fallback, size_t len,
			   struct name_entry **entry);

/* A --query-keys row: its query's name, then its key in parentheses, as
 * rustc's self-profiler shows a query key: `typeck(12)`, or a text key's
 * text, read like a name (it was captured into `names` by its address):
 * `parse(src/main.rs)`. The writers escape both. */
static const char *key_name_of(struct name_table *t,
			       const struct addr_spaces *as, __u32 tgid,
			       __u64 name, char *buf, size_t len)
{
	char base[SP_NAME_LEN + 64], ktext[SP_NAME_LEN + 64];
	struct name_entry *e;
	struct sp_key_row v;
	const char *s, *k;

	if (name == SP_KEY_OTHER)
		return "<other>";
	if (bpf_map_lookup_elem(t->key_fd, &name, &v))
		return "<unknown key row>";
	s = name_of(t, as, tgid, v.name, base, sizeof(base), &e);
	if (v.flags & SP_KEY_ROW_TEXT) {
		k = name_of(t, as, tgid, v.key, ktext, sizeof(ktext), &e);
		snprintf(buf, len, "%s(%s)", s, k);
	} else {
		snprintf(buf, len, "%s(%llu)", s, (unsigned long long)v.key);
	}
	return buf;
}

static const char *name_of(struct name_table *t,
			   const struct addr_spaces *as, __u32 tgid,
			   __u64 name, char *fallback, size_t len,
			   struct name_entry **entry)
{
	struct sp_query_key key = { .name = name, .tgid = tgid };
	struct name_entry *e;
	struct sp_name val;

	*entry = NULL;
	if (name & SP_KEY_TAG)
		return key_name_of(t, as, tgid, name, fallback, len);
	if (name & (SP_FUNC_TAG | SP_SPEC_TAG)) {
		if (t->tag_name(t->tag_ctx, name, fallback, len))
			return name & SP_FUNC_TAG ? "<unknown function>"
						  : "<unknown --query name>";
		return fallback;
	}
	e = name_find(t->c, tgid, name);
	if (!e && t->misses++ == NAMES_LOOKUPS_MAX)
		(void)load_names(t->fd, as, t);	/* else one by one */
	if (!e)
		e = name_find(t->c, tgid, name);
	if (!e && !bpf_map_lookup_elem(t->fd, &key, &val))
		e = name_add(t, as, &key, &val);
	if (e && e->unresolved) {
		/* Retried at every read: the snapshot may have it now. */
		if (!addr_spaces__read_str(as, (pid_t)tgid, name, val.str,
					   sizeof(val.str))) {
			char *str = strdup(val.str);

			if (str) {
				free(e->str);
				e->str = str;
				e->unresolved = false;
			}
		}
	}
	if (e) {
		if (e->unresolved && e->seen != t->c->read)
			t->unresolved++;
		e->seen = t->c->read;
		*entry = e;
		return e->str;
	}
	/* The names map was full when this row appeared. */
	if (addr_spaces__read_str(as, (pid_t)tgid, name, fallback, len))
		snprintf(fallback, len, "<unnamed 0x%llx in pid %u>",
			 (unsigned long long)name, tgid);
	return fallback;
}

struct rows_ctx {
	struct name_table *t;
	const struct addr_spaces *as;
	struct summary *s;
	int ncpus;
	const struct summary_sampled *scales;	/* sorted by pid */
	size_t nscales;
};

/* The share of its work process tgid was traced in (and how far that may
 * be off) for a row of its sp probes, if it was sampled, or of its --func
 * probes, if they were shed (spec probes are never shed: sampler.c); false
 * if the row is exact. */
static bool row_scale(const struct rows_ctx *c, uint32_t tgid, __u64 name,
		      double *traced, double *bias)
{
	const struct summary_sampled *v;
	size_t at;

	if (name & SP_SPEC_TAG)
		return false;
	at = VEC_LOWER_BOUND(c->scales, c->nscales, pid, tgid);
	if (at >= c->nscales || c->scales[at].pid != tgid)
		return false;
	v = &c->scales[at];
	*traced = name & SP_FUNC_TAG ? v->func_traced : v->traced;
	*bias = name & SP_FUNC_TAG ? v->func_bias : v->bias;
	return *traced > 0 && *traced < 1;
}

static __u64 scaled(__u64 v, double traced)
{
	return (__u64)((double)v / traced + 0.5);
}

/* A sampled process's row as if traced all along (docs/numbers.md,
 * "Overhead"): its sums over the share traced; min and max as seen. The
 * bound at 95%: the windows drawn (binomial, from its count), the
 * intervals a window's edge cut (up to max / window of them), and how far
 * the share traced may be off (sc->bias). */
static double scale_row(struct sp_query_stats *st, double traced,
			double bias)
{
	__u64 n = st->count ? st->count : st->cache_hits;
	double err;

	err = 1.96 * sqrt((1 - traced) / (double)(n ? n : 1)) +
	      (double)st->max_ns / SAMPLER_WINDOW_NS + bias;
	st->count = scaled(st->count, traced);
	st->total_ns = scaled(st->total_ns, traced);
	st->self_ns = scaled(st->self_ns, traced);
	st->cache_hits = scaled(st->cache_hits, traced);
	st->incr_loads = scaled(st->incr_loads, traced);
	st->incr_load_ns = scaled(st->incr_load_ns, traced);
	st->blocked_count = scaled(st->blocked_count, traced);
	st->blocked_ns = scaled(st->blocked_ns, traced);
	return err;
}

/*
 * A normalize=pg row of a multi-statement string (statements separated by
 * PG_TEXT_SEP, pg_text.h): PostgreSQL counts each statement, so the row
 * counts in each statement's row, with the string's time.
 */
static int each_statement(struct summary *s, const char *name,
			  uint32_t tgid,
			  int (*fn)(struct summary *s, const char *part,
				    uint32_t tgid, const void *arg),
			  const void *arg)
{
	char part[4 * SP_SPEC_NAME_LEN];
	const char *end;
	size_t n;
	int err;

	for (;;) {
		end = strchr(name, PG_TEXT_SEP);
		n = end ? (size_t)(end - name) : strlen(name);
		if (n >= sizeof(part))
			n = sizeof(part) - 1;
		memcpy(part, name, n);
		part[n] = 0;
		err = fn(s, part, tgid, arg);
		if (err || !end)
			return err;
		name = end + 1;
	}
}

static int add_stats_part(struct summary *s, const char *part, uint32_t tgid,
			  const void *arg)
{
	int row = summary__row_index(s, part, tgid);

	return row < 0 ? row : summary__add_stats_at(s, (unsigned int)row, arg);
}

struct hist_part {
	uint32_t bucket;
	__u64 sum;
};

static int add_hist_part(struct summary *s, const char *part, uint32_t tgid,
			 const void *arg)
{
	const struct hist_part *h = arg;

	return summary__add_hist_pid(s, part, tgid, h->bucket, h->sum);
}

static int add_query(void *ctx, const void *k, const void *v)
{
	struct rows_ctx *c = ctx;
	const struct sp_query_stats *vals = v;
	char fallback[4 * SP_SPEC_NAME_LEN];
	struct sp_query_stats sum;
	double err = 0, traced, bias;
	bool sc;
	struct sp_query_key key;
	struct name_entry *e;
	const char *name;
	int i, row;

	memcpy(&key, k, sizeof(key));
	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < c->ncpus; i++) {
		const struct sp_query_stats *q = &vals[i];

		if (q->count && (!sum.count || q->min_ns < sum.min_ns))
			sum.min_ns = q->min_ns;
		if (q->max_ns > sum.max_ns)
			sum.max_ns = q->max_ns;
		sum.count += q->count;
		sum.total_ns += q->total_ns;
		sum.self_ns += q->self_ns;
		sum.cache_hits += q->cache_hits;
		sum.incr_loads += q->incr_loads;
		sum.incr_load_ns += q->incr_load_ns;
		sum.blocked_count += q->blocked_count;
		sum.blocked_ns += q->blocked_ns;
	}
	sc = row_scale(c, key.tgid, key.name, &traced, &bias);
	if (sc)
		err = scale_row(&sum, traced, bias);
	name = name_of(c->t, c->as, key.tgid, key.name, fallback,
		       sizeof(fallback), &e);
	if (strchr(name, PG_TEXT_SEP))
		return each_statement(c->s, name, key.tgid, add_stats_part,
				      &sum);
	row = summary__row_index(c->s, name, key.tgid);
	if (row < 0)
		return row;
	if (e) {
		e->row_read = c->t->c->read;
		e->row = (uint32_t)row;
	}
	if (sc && err > c->s->rows[row].est_err)
		c->s->rows[row].est_err = err;
	return summary__add_stats_at(c->s, (unsigned int)row, &sum);
}

static int add_hist(void *ctx, const void *k, const void *v)
{
	struct rows_ctx *c = ctx;
	char fallback[4 * SP_SPEC_NAME_LEN];
	double traced, bias;
	struct sp_hist_key key;
	struct name_entry *e;
	const char *name;
	__u64 sum = 0, x;
	int i;

	memcpy(&key, k, sizeof(key));
	for (i = 0; i < c->ncpus; i++) {
		memcpy(&x, (const char *)v + (size_t)i * sizeof(x), sizeof(x));
		sum += x;
	}
	if (!sum)
		return 0;
	if (row_scale(c, key.tgid, key.name, &traced, &bias))
		sum = scaled(sum, traced);
	if (!(key.name & (SP_FUNC_TAG | SP_SPEC_TAG | SP_KEY_TAG))) {
		e = name_find(c->t->c, key.tgid, key.name);
		if (e && e->row_read == c->t->c->read)
			return summary__add_hist_at(c->s, e->row, key.bucket,
						    sum);
	}
	/* A bucket of a row the `queries` read did not meet (created
	 * since, or that map was full). */
	name = name_of(c->t, c->as, key.tgid, key.name, fallback,
		       sizeof(fallback), &e);
	if (strchr(name, PG_TEXT_SEP)) {
		struct hist_part h = { .bucket = key.bucket, .sum = sum };

		return each_statement(c->s, name, key.tgid, add_hist_part, &h);
	}
	return summary__add_hist_pid(c->s, name, key.tgid, key.bucket, sum);
}

static int read_queries(int fd, struct rows_ctx *c0)
{
	struct rows_ctx c = *c0;
	int ncpus = c.ncpus;

	return map_for_each(fd, sizeof(struct sp_query_key),
			    sizeof(struct sp_query_stats), ncpus, add_query,
			    &c);
}

static int read_hist(int fd, struct rows_ctx *c0)
{
	struct rows_ctx c = *c0;
	int ncpus = c.ncpus;

	return map_for_each(fd, sizeof(struct sp_hist_key), sizeof(__u64),
			    ncpus, add_hist, &c);
}

static int read_errors(int fd, struct summary *s, int ncpus)
{
	__u64 *vals;
	__u32 slot;
	int i;

	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (slot = 0; slot < SP_CNT__END; slot++) {
		if (bpf_map_lookup_elem(fd, &slot, vals))
			continue;
		for (i = 0; i < ncpus; i++) {
			if (slot < SP_ERR__MAX)
				s->errors[slot] += vals[i];
			else if (slot == SP_CNT_BATCH_FALLBACK)
				s->batch_fallback += vals[i];
			else if (slot == SP_CNT_SAMPLE_CUT)
				s->sample_cut += vals[i];
		}
	}
	free(vals);
	return 0;
}

int query_maps__read(struct query_bpf *skel, struct query_names *names,
		     const struct addr_spaces *as, query_tag_name_fn tag_name,
		     void *tag_ctx, const struct summary_sampled *scales,
		     size_t nscales, struct summary *s)
{
	struct name_table t = {
		.c = names, .fd = bpf_map__fd(skel->maps.names),
		.key_fd = bpf_map__fd(skel->maps.key_rows),
		.tag_name = tag_name, .tag_ctx = tag_ctx,
	};
	int ncpus = libbpf_num_possible_cpus(), err = 0, i;
	__u32 slot;
	__u64 *vals;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	names->read++;
	/* The first read: every name at once. */
	if (!names->n)
		err = load_names(t.fd, as, &t);
	struct rows_ctx rc = { .t = &t, .as = as, .s = s, .ncpus = ncpus,
			       .scales = scales, .nscales = nscales };

	if (!err)
		err = read_queries(bpf_map__fd(skel->maps.queries), &rc);
	if (!err)
		err = read_hist(bpf_map__fd(skel->maps.hist), &rc);
	if (!err)
		err = read_errors(bpf_map__fd(skel->maps.errors), s, ncpus);
	/* BPF counts names it could not read in place; most are read here
	 * from the mapped file. Report only those still unknown. */
	s->errors[SP_ERR_NAME_READ] = t.unresolved;
	/* Plus --query strings that could not be read ("<unreadable>"). */
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals && !err)
		err = -ENOMEM;
	for (slot = SP_SPEC_ERR_NAME_READ; vals &&
	     slot < SP_SPEC_MAX_LINES * SP_SPEC_ERR__MAX;
	     slot += SP_SPEC_ERR__MAX)
		if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.spec_errors),
					 &slot, vals))
			for (i = 0; i < ncpus; i++)
				s->errors[SP_ERR_NAME_READ] += vals[i];
	free(vals);
	/* Events the ring buffer could not take are the recording's loss. */
	s->lost += s->errors[SP_ERR_EVENTS_LOST];
	s->errors[SP_ERR_EVENTS_LOST] = 0;
	return err;
}

int query_maps__lost(struct query_bpf *skel, uint64_t *lost)
{
	int ncpus = libbpf_num_possible_cpus(), i, err;
	__u32 slot = SP_ERR_EVENTS_LOST;
	__u64 *vals;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	err = bpf_map_lookup_elem(bpf_map__fd(skel->maps.errors), &slot, vals);
	*lost = 0;
	for (i = 0; !err && i < ncpus; i++)
		*lost += vals[i];
	free(vals);
	return err;
}

/* Keys of one map whose tgid (at offset 8 in every key of the family) is
 * in a sorted set. */
struct evict_ctx {
	const uint32_t *tgids;
	size_t ntgids;
	size_t ksize;
	char *keys;
	size_t n, cap;
	/* Where the tgid is: at 8 in the key (struct sp_query_key, struct
	 * sp_hist_key), or, for key_rows, in the value. */
	bool in_value;
};

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int collect_key(void *ctx, const void *k, const void *v)
{
	struct evict_ctx *c = ctx;
	uint32_t tgid;

	if (c->in_value)
		memcpy(&tgid, (const char *)v + offsetof(struct sp_key_row, tgid),
		       sizeof(tgid));
	else
		memcpy(&tgid, (const char *)k + 8, sizeof(tgid));
	if (!bsearch(&tgid, c->tgids, c->ntgids, sizeof(tgid), u32_cmp))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		char *nk = realloc(c->keys, cap * c->ksize);

		if (!nk)
			return -ENOMEM;
		c->keys = nk;
		c->cap = cap;
	}
	memcpy(c->keys + c->n * c->ksize, k, c->ksize);
	c->n++;
	return 0;
}

static int evict_map(struct bpf_map *map, int ncpus, const uint32_t *tgids,
		     size_t n, size_t *evicted, bool in_value)
{
	struct evict_ctx c = { .tgids = tgids, .ntgids = n,
			       .ksize = bpf_map__key_size(map),
			       .in_value = in_value };
	int fd = bpf_map__fd(map), err;
	size_t i;

	err = map_for_each(fd, c.ksize, bpf_map__value_size(map), ncpus,
			   collect_key, &c);
	for (i = 0; !err && i < c.n; i++)
		if (bpf_map_delete_elem(fd, c.keys + i * c.ksize) &&
		    errno != ENOENT)
			err = -errno;
	if (evicted)
		*evicted = c.n;
	free(c.keys);
	return err;
}

int query_maps__evict(struct query_bpf *skel, struct query_names *names,
		      uint32_t *tgids, size_t n, size_t *rows)
{
	int ncpus = libbpf_num_possible_cpus(), err;

	*rows = 0;
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	if (!n)
		return 0;
	qsort(tgids, n, sizeof(*tgids), u32_cmp);
	if (names)
		names_forget(names, tgids, n);
	err = evict_map(skel->maps.queries, ncpus, tgids, n, rows, false);
	if (!err)
		err = evict_map(skel->maps.hist, ncpus, tgids, n, NULL, false);
	if (!err)
		err = evict_map(skel->maps.names, 0, tgids, n, NULL, false);
	/* --query-keys: their keys' rows, so later processes get rows. */
	if (!err)
		err = evict_map(skel->maps.key_rows, 0, tgids, n, NULL, true);
	return err;
}

int query_maps__resize(struct query_bpf *skel, unsigned int max_queries,
		       unsigned int max_threads, bool query_keys)
{
	unsigned int rows = max_queries;
	int err = 0;

	if (query_keys) {
		/* key_rows bounds the keyed rows; `queries` holds them, the
		 * names' own rows and each process's "<other>". */
		if (!rows)
			rows = SP_DEFAULT_MAX_QUERIES;
		err = bpf_map__set_max_entries(skel->maps.key_rows, rows);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.queries,
						       2 * rows);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.hist,
						       2 * rows * 16);
		/* The names, and the text of each text key (one per key
		 * row at most). */
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.names,
						       2 * rows);
		if (err)
			return err;
	} else {
		/* unused: one entry */
		err = bpf_map__set_max_entries(skel->maps.key_rows, 1);
		if (err)
			return err;
	}
	if (max_queries) {
		if (!query_keys)
			err = bpf_map__set_max_entries(skel->maps.queries,
						       max_queries);
		if (!err && !query_keys)
			err = bpf_map__set_max_entries(skel->maps.names,
						       max_queries);
		if (!err && !query_keys)
			err = bpf_map__set_max_entries(skel->maps.hist,
						       max_queries * 16);
		/* --query row values: one per row, so the same bound. */
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.spec_names,
						       max_queries);
	}
	if (!err && max_threads) {
		err = bpf_map__set_max_entries(skel->maps.threads, max_threads);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.thread_names,
						       max_threads);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.spec_stacks,
						       max_threads);
	}
	return err;
}
