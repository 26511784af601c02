// SPDX-License-Identifier: MIT
/*
 * Live source: reads `queries`, `hist`, `names` and `errors` of
 * bpf/query.bpf.c and feeds the summary. Names are taken from the `names`
 * map the BPF side filled when each row was created; a name it could not
 * read (its page was not present) is read now through the address-space
 * snapshot; failing that the row is named after its address.
 */
#include <errno.h>
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
#include "query.skel.h"
#include "query_maps.h"

_Static_assert(sizeof(struct sp_query_key) == 16, "sp_query_key layout");
_Static_assert(sizeof(struct sp_hist_key) == 16, "sp_hist_key layout");
_Static_assert(sizeof(struct sp_query_stats) == 80, "sp_query_stats layout");
_Static_assert(offsetof(struct sp_thread_stack, frames) == 16,
	       "sp_thread_stack layout");
_Static_assert(sizeof(struct sp_frame) == 40, "sp_frame layout");
_Static_assert(sizeof(struct sp_thread_name) == 8 + SP_THREAD_NAME_LEN,
	       "sp_thread_name layout");

struct name_entry {
	struct sp_query_key key;
	char *str;
};

struct name_table {
	struct name_entry *v;
	size_t n, cap;
	const char *const *fnames;	/* --func rows, by index */
	size_t nfnames;
	int spec_fd;			/* --query: `spec_names` */
	uint64_t unresolved;	/* names neither BPF nor we could read */
};

static int key_cmp(const void *a, const void *b)
{
	const struct sp_query_key *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return 0;
}

static int load_names(int fd, const struct addr_spaces *as,
		      struct name_table *t)
{
	struct sp_query_key key, next, *prev = NULL;
	struct sp_name val;
	int err;

	while (!(err = bpf_map_get_next_key(fd, prev, &next))) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &val))
			continue;
		val.str[SP_NAME_LEN - 1] = 0;
		if (!val.str[0] &&
		    addr_spaces__read_str(as, (pid_t)key.tgid, key.name,
					  val.str, sizeof(val.str))) {
			snprintf(val.str, sizeof(val.str),
				 "<unreadable name 0x%llx in pid %u>",
				 (unsigned long long)key.name, key.tgid);
			t->unresolved++;
		}
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 256;
			struct name_entry *v = realloc(t->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			t->v = v;
			t->cap = cap;
		}
		t->v[t->n].key = key;
		t->v[t->n].str = strdup(val.str);
		if (!t->v[t->n].str)
			return -ENOMEM;
		t->n++;
	}
	if (err != -ENOENT)
		return err;
	if (t->n)
		qsort(t->v, t->n, sizeof(t->v[0]), key_cmp);
	return 0;
}

static const char *name_of(struct name_table *t,
			   const struct addr_spaces *as, __u32 tgid,
			   __u64 name, char *fallback, size_t len)
{
	struct sp_query_key key = { .name = name, .tgid = tgid };
	struct name_entry *e;

	if (name & SP_FUNC_TAG) {
		__u64 i = name & ~SP_FUNC_TAG;

		return i < t->nfnames ? t->fnames[i] : "<unknown function>";
	}
	if (name & SP_SPEC_TAG) {
		struct sp_spec_name v;

		if (bpf_map_lookup_elem(t->spec_fd, &name, &v))
			return "<unknown --query name>";	/* map was full */
		v.str[sizeof(v.str) - 1] = 0;
		snprintf(fallback, len, "%s", v.str);
		return fallback;
	}
	e = t->n ? bsearch(&key, t->v, t->n, sizeof(t->v[0]), key_cmp) : NULL;
	if (e)
		return e->str;
	/* The names map was full when this row appeared. */
	if (addr_spaces__read_str(as, (pid_t)tgid, name, fallback, len))
		snprintf(fallback, len, "<unnamed 0x%llx in pid %u>",
			 (unsigned long long)name, tgid);
	return fallback;
}

static int read_queries(int fd, struct name_table *t,
			const struct addr_spaces *as, struct summary *s,
			int ncpus)
{
	struct sp_query_key key, next, *prev = NULL;
	struct sp_query_stats *vals, sum;
	char fallback[SP_NAME_LEN];
	int err = 0, i;

	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, vals))
			continue;
		memset(&sum, 0, sizeof(sum));
		for (i = 0; i < ncpus; i++) {
			const struct sp_query_stats *v = &vals[i];

			if (v->count && (!sum.count || v->min_ns < sum.min_ns))
				sum.min_ns = v->min_ns;
			if (v->max_ns > sum.max_ns)
				sum.max_ns = v->max_ns;
			sum.count += v->count;
			sum.total_ns += v->total_ns;
			sum.self_ns += v->self_ns;
			sum.cache_hits += v->cache_hits;
			sum.incr_loads += v->incr_loads;
			sum.incr_load_ns += v->incr_load_ns;
			sum.blocked_count += v->blocked_count;
			sum.blocked_ns += v->blocked_ns;
		}
		err = summary__add_stats_pid(s, name_of(t, as, key.tgid,
							key.name, fallback,
							sizeof(fallback)),
					     key.tgid, &sum);
		if (err)
			break;
	}
	free(vals);
	return err;
}

static int read_hist(int fd, struct name_table *t,
		     const struct addr_spaces *as, struct summary *s,
		     int ncpus)
{
	struct sp_hist_key key, next, *prev = NULL;
	char fallback[SP_NAME_LEN];
	__u64 *vals, sum;
	int err = 0, i;

	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, vals))
			continue;
		for (sum = 0, i = 0; i < ncpus; i++)
			sum += vals[i];
		if (!sum)
			continue;
		err = summary__add_hist_pid(s, name_of(t, as, key.tgid,
						       key.name, fallback,
						       sizeof(fallback)),
					    key.tgid, key.bucket, sum);
		if (err)
			break;
	}
	free(vals);
	return err;
}

static int read_errors(int fd, struct summary *s, int ncpus)
{
	__u64 *vals;
	__u32 slot;
	int i;

	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (slot = 0; slot < SP_ERR__MAX; slot++) {
		if (bpf_map_lookup_elem(fd, &slot, vals))
			continue;
		for (i = 0; i < ncpus; i++)
			s->errors[slot] += vals[i];
	}
	free(vals);
	return 0;
}

int query_maps__read(struct query_bpf *skel, const struct addr_spaces *as,
		     const char *const *fnames, size_t nfnames,
		     struct summary *s)
{
	struct name_table t = {
		.fnames = fnames, .nfnames = nfnames,
		.spec_fd = bpf_map__fd(skel->maps.spec_names),
	};
	int ncpus = libbpf_num_possible_cpus(), err, i;
	__u32 zero = 0;
	__u64 *vals;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	err = load_names(bpf_map__fd(skel->maps.names), as, &t);
	if (!err)
		err = read_queries(bpf_map__fd(skel->maps.queries), &t, as, s,
				   ncpus);
	if (!err)
		err = read_hist(bpf_map__fd(skel->maps.hist), &t, as, s, ncpus);
	if (!err)
		err = read_errors(bpf_map__fd(skel->maps.errors), s, ncpus);
	/* BPF counts names it could not read in place; most are read here
	 * from the mapped file. Report only those still unknown. */
	s->errors[SP_ERR_NAME_READ] = t.unresolved;
	/* Plus --query strings that could not be read ("<unreadable>"). */
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals && !err)
		err = -ENOMEM;
	if (vals && !bpf_map_lookup_elem(bpf_map__fd(skel->maps.spec_unreadable),
					 &zero, vals))
		for (i = 0; i < ncpus; i++)
			s->errors[SP_ERR_NAME_READ] += vals[i];
	free(vals);
	/* Events the ring buffer could not take are the recording's loss. */
	s->lost += s->errors[SP_ERR_EVENTS_LOST];
	s->errors[SP_ERR_EVENTS_LOST] = 0;
	for (size_t j = 0; j < t.n; j++)
		free(t.v[j].str);
	free(t.v);
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

int query_maps__resize(struct query_bpf *skel, unsigned int max_queries,
		       unsigned int max_threads)
{
	int err = 0;

	if (max_queries) {
		err = bpf_map__set_max_entries(skel->maps.queries, max_queries);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.names,
						       max_queries);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.hist,
						       max_queries * 16);
	}
	if (!err && max_threads) {
		err = bpf_map__set_max_entries(skel->maps.threads, max_threads);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.thread_names,
						       max_threads);
	}
	return err;
}
