/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What every event of the query object does, whichever family fired it:
 * is it counted, the per-thread stack of open intervals (qstack.h), the
 * row an interval closes into, its histogram, and its record. The sp
 * probes (query.bpf.c), --func (query_func.bpf.c), --query specs
 * (query_spec.bpf.c) and the batched drain (query_batch.bpf.c) all go
 * through these, so the maps and the arithmetic are the same on every path.
 */
#ifndef SPTRACE_QUERY_CORE_BPF_H
#define SPTRACE_QUERY_CORE_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/query_abi.h>
#include <sptrace/record_abi.h>
#include <sptrace/hist.h>
#include <sptrace/ladder.h>
#include <sptrace/qstack.h>
#include "query_maps.bpf.h"
#include "query_stack.bpf.h"

/* Does process tgid count? With --follow, only followed ones. */
static __always_inline bool traced_tgid(__u32 tgid)
{
	return !follow || bpf_map_lookup_elem(&followed, &tgid);
}

/* Does the current process count? */
static __always_inline bool traced(void)
{
	return traced_tgid(bpf_get_current_pid_tgid() >> 32);
}

/* Counting is on (see `armed`) and the current process counts. */
static __always_inline bool counting(void)
{
	return armed && traced();
}

static __always_inline void count_error(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&errors, &slot);

	if (v)
		*v += n;
}

/* Adds n to what the probes did in process tgid (`probe_hits`). */
static __always_inline void count_hits(__u32 tgid, __u32 kind, __u64 n)
{
	struct sp_probe_hits *h;
	const void *zero;
	__u32 z = 0;

	if (kind >= SP_HIT__MAX)
		return;
	h = bpf_map_lookup_elem(&probe_hits, &tgid);
	/* The zeroed new value off the stack (drains run deep in it): the
	 * new-row template is zero and larger than a struct sp_probe_hits. */
	if (!h && (zero = bpf_map_lookup_elem(&zero_row, &z))) {
		bpf_map_update_elem(&probe_hits, &tgid, zero, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&probe_hits, &tgid);
	}
	if (!h) {
		tgid = 0;	/* full: the loader's catch-all */
		h = bpf_map_lookup_elem(&probe_hits, &tgid);
	}
	if (h)
		h->n[kind] += n;
}

static __always_inline void emit(__u32 kind, __u64 id, __u64 now, __u64 name,
				 __u64 arg1, __u64 arg2)
{
	struct sp_rec_event *e;

	if (!record || !kind)	/* kind 0: a batched event, staged instead */
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_error(SP_ERR_EVENTS_LOST, 1);
		return;
	}
	e->ts_ns = now;
	e->name = name;
	e->arg1 = arg1;
	e->arg2 = arg2;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->kind = kind;
	e->pad = 0;
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
				      wakeup_bytes ? BPF_RB_FORCE_WAKEUP
						   : BPF_RB_NO_WAKEUP);
}

/* --max-overhead: the window process tgid is sampled in now, or NULL when
 * it is not sampled. */
static __always_inline __u32 *sample_epoch(__u32 tgid)
{
	return sampling ? bpf_map_lookup_elem(&sample_epochs, &tgid) : NULL;
}

/* An unbalanced event: an error, but in a sampled process, where a
 * window's edge cuts intervals, a cut interval. */
static __always_inline void count_unbalanced(__u32 tgid, __u32 slot, __u64 n)
{
	count_error(sample_epoch(tgid) ? SP_CNT_SAMPLE_CUT : slot, n);
}

/* A stack whose frames were opened in an older sampling window: emptied,
 * its frames counted as cut (their ENDs, or BEGINs, fell outside). */
static __always_inline void sample_cut(struct sp_thread_stack *st, __u32 tgid)
{
	__u32 *e = sample_epoch(tgid);

	if (!e || st->epoch == *e)
		return;
	if (st->depth || st->overflow)
		count_error(SP_CNT_SAMPLE_CUT, (__u64)st->depth + st->overflow);
	st->depth = 0;
	st->overflow = 0;
	st->epoch = *e;
}

static __always_inline struct sp_thread_stack *thread_stack(__u32 tid,
							     __u32 tgid,
							     bool create)
{
	struct sp_thread_stack *st;
	__u32 zero = 0;
	long err;

	st = bpf_map_lookup_elem(&threads, &tid);
	if (st) {
		sample_cut(st, tgid);
		return st;
	}
	if (!create)
		return st;
	st = bpf_map_lookup_elem(&zero_stack, &zero);
	if (!st)
		return NULL;
	err = bpf_map_update_elem(&threads, &tid, st, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_error(SP_ERR_THREADS_FULL, 1);
		return NULL;
	}
	st = bpf_map_lookup_elem(&threads, &tid);
	if (st) {
		st->tgid = tgid;
		sample_cut(st, tgid);
	}
	return st;
}

/* Copies the name string once, when its row is created: the hot path never
 * reads strings, and the name outlives the target. One it cannot read (a
 * page not present) is located later, at the process's exit or before its
 * library is unloaded (name_locate.bpf.c), if `unread_names` has room. */
static __always_inline void capture_name(const struct sp_query_key *key)
{
	struct sp_name *tmpl, *n;
	__u32 zero = 0;
	__u8 one = 1;
	long err;

	if (key->name & (SP_FUNC_TAG | SP_SPEC_TAG | SP_KEY_TAG))
		return;	/* --func, --query: named from a table or spec_names;
			 * a key row: from key_rows and its name's entry */
	tmpl = bpf_map_lookup_elem(&zero_name, &zero);
	if (!tmpl)
		return;
	err = bpf_map_update_elem(&names, key, tmpl, BPF_NOEXIST);
	if (err) {
		/* EEXIST: captured for a key row of the same name */
		if (err != -EEXIST)
			count_error(SP_ERR_NAMES_FULL, 1);
		return;
	}
	n = bpf_map_lookup_elem(&names, key);
	if (!n)
		return;
	/* Not from another process: the stop drain of batched records runs
	 * in sptrace's context. */
	if ((bpf_get_current_pid_tgid() >> 32) != key->tgid ||
	    bpf_probe_read_user_str(n->str, sizeof(n->str),
				    (const void *)key->name) <= 0) {
		n->str[0] = 0;	/* userspace retries through /proc/PID/mem */
		count_error(SP_ERR_NAME_READ, 1);
		bpf_map_update_elem(&unread_names, &key->tgid, &one, BPF_ANY);
	}
}

/* A new row (not inlined: once per row, out of the events' path). */
static __noinline struct sp_query_stats *query_row_new(__u32 tgid, __u64 name)
{
	struct sp_query_key key = { .name = name, .tgid = tgid };
	struct sp_query_stats *zero;
	__u32 slot = 0;
	long err;

	zero = bpf_map_lookup_elem(&zero_row, &slot);
	if (!zero)
		return NULL;	/* cannot happen: slot 0 of an array */
	err = bpf_map_update_elem(&queries, &key, zero, BPF_NOEXIST);
	if (!err)
		capture_name(&key);
	else if (err != -EEXIST) {
		count_error(SP_ERR_QUERIES_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&queries, &key);
}

static __always_inline struct sp_query_stats *query_row(__u32 tgid, __u64 name)
{
	struct sp_query_key key = { .name = name, .tgid = tgid };
	struct sp_query_stats *row;

	row = bpf_map_lookup_elem(&queries, &key);
	if (row)
		return row;
	return query_row_new(tgid, name);
}

/*
 * --query-keys: the row of query `name` with `key` in process tgid (see
 * query_abi.h). A BEGIN or cache hit (`admit`) makes it while key_rows has
 * room, else it is the process's "<other>"; an END only finds it, so it
 * closes into the row its BEGIN opened. Not inlined: keyed events only.
 */
static __noinline __u64 key_row(__u32 tgid, __u64 name, __u64 key,
				__u32 flags, bool admit)
{
	struct sp_key_row v = { .name = name, .key = key, .tgid = tgid,
				.flags = flags };
	struct sp_query_key nk = { .name = name, .tgid = tgid };
	struct sp_query_key kk = { .name = key, .tgid = tgid };
	struct sp_key_row *found;
	__u64 h = SP_FNV_OFFSET, row;
	long err;

	h = (h ^ name) * SP_FNV_PRIME;
	h = (h ^ key) * SP_FNV_PRIME;
	h = (h ^ tgid) * SP_FNV_PRIME;
	h = (h ^ flags) * SP_FNV_PRIME;
	h ^= h >> 29;
	row = SP_KEY_TAG | (h & SP_KEY_HASH_MASK);
	if (row == SP_KEY_OTHER)
		row++;
	found = bpf_map_lookup_elem(&key_rows, &row);
	if (found)	/* another (name, key) of the same hash: "<other>" */
		return found->name == name && found->key == key &&
		       found->tgid == tgid && found->flags == flags ?
			       row : SP_KEY_OTHER;
	if (!admit)
		return SP_KEY_OTHER;
	err = bpf_map_update_elem(&key_rows, &row, &v, BPF_NOEXIST);
	if (err == -EEXIST)
		return row;	/* made by another thread meanwhile */
	if (err)
		return SP_KEY_OTHER;	/* full: the bound of --max-queries */
	capture_name(&nk);	/* the text the row's name starts with */
	if (flags & SP_KEY_ROW_TEXT)
		capture_name(&kk);	/* and the key's, read once like it */
	return row;
}

/* The row name of a query event with `key` (has_key: the site gave one;
 * text: the key is an interned text's address). */
static __always_inline __u64 keyed_name(__u64 id, __u64 name, __u64 key,
					bool has_key, bool text, bool admit)
{
	if (!has_key || !query_keys)
		return name;
	return key_row(id >> 32, name, key, text ? SP_KEY_ROW_TEXT : 0,
		       admit);
}

static __always_inline void hist_add(__u32 tgid, __u64 name, __u64 ns)
{
	struct sp_hist_key key = {
		.name = name, .tgid = tgid,
		.bucket = ladder ? sp_ladder_hist_bucket(ns) :
				   sp_hist_bucket(ns),
	};
	__u64 one = 1, *v;
	long err;

	v = bpf_map_lookup_elem(&hist, &key);
	if (v) {
		*v += 1;
		return;
	}
	err = bpf_map_update_elem(&hist, &key, &one, BPF_NOEXIST);
	if (!err)
		return;
	if (err == -EEXIST) {
		v = bpf_map_lookup_elem(&hist, &key);
		if (v)
			*v += 1;
		return;
	}
	count_error(SP_ERR_HIST_FULL, 1);
}

/* A --func frame's stack pointer `sp` (0 for every other frame): frames
 * a longjmp or an exception skipped are dropped, counted. */
static __always_inline void unwind_to(struct sp_thread_stack *st, __u64 sp)
{
	__u32 n;

	if (!sp)
		return;
	n = stack_unwind(st, sp);
	if (n)
		count_error(SP_ERR_FUNC_UNWOUND, n);
}

/*
 * BEGIN of an interval named `name`. `sp` is 0 for sp probes; for --func
 * entries it is the stack pointer, saved in the frame so that frames a
 * longjmp or an exception skipped can be recognised and dropped.
 */
static __always_inline int begin_at(__u64 id, __u64 now, __u64 name,
				    __u32 kind, __u32 ev, __u64 sp)
{
	struct sp_thread_stack *st;

	emit(ev, id, now, name, 0, 0);
	st = thread_stack((__u32)id, id >> 32, true);
	if (!st)
		return 0;
	unwind_to(st, sp);
	if (sp_stack_push(st, name, kind, now)) {
		count_error(SP_ERR_STACK_OVERFLOW, 1);
		return 0;
	}
	if (sp && st->depth > 0 && st->depth <= SP_MAX_DEPTH)
		st->frames[(st->depth - 1) & (SP_MAX_DEPTH - 1)].sp = sp;
	return 0;
}

/* The figures of an interval END closed, into its row. */
static __always_inline struct sp_query_stats *
add_closed(__u32 tgid, const struct sp_closed *c)
{
	struct sp_query_stats *row;

	row = query_row(tgid, c->name);
	if (!row)
		return NULL;
	row->total_ns += c->total_ns;
	row->self_ns += c->self_ns;
	switch (c->kind) {
	case SP_FRAME_QUERY:
		if (!row->count || c->total_ns < row->min_ns)
			row->min_ns = c->total_ns;
		if (c->total_ns > row->max_ns)
			row->max_ns = c->total_ns;
		row->count++;
		hist_add(tgid, c->name, c->total_ns);
		break;
	case SP_FRAME_BLOCKED:
		row->blocked_count++;
		row->blocked_ns += c->total_ns;
		break;
	case SP_FRAME_INCR_LOAD:
		row->incr_loads++;
		row->incr_load_ns += c->total_ns;
		break;
	}
	return row;
}

/* END of an interval; `sp` as for begin_at(), for --func returns. */
static __always_inline int end_at(__u64 id, __u64 now, __u64 name,
				  __u32 kind, __u32 ev, __u64 sp)
{
	__u32 tgid = id >> 32;
	struct sp_thread_stack *st;
	struct sp_closed c = {};
	int r;

	emit(ev, id, now, name, 0, 0);
	st = thread_stack((__u32)id, tgid, false);
	if (!st) {
		count_unbalanced(tgid, SP_ERR_END_WITHOUT_BEGIN, 1);
		return 0;
	}
	unwind_to(st, sp);
	r = stack_pop(st, name, kind, now, &c);
	if (r == SP_POP_OVERFLOWED)
		return 0;
	if (r == SP_POP_UNMATCHED) {
		count_unbalanced(tgid, SP_ERR_END_WITHOUT_BEGIN, 1);
		return 0;
	}
	if (c.discarded)
		count_error(SP_ERR_END_MISMATCH, c.discarded);

	add_closed(tgid, &c);
	return 0;
}

static __always_inline void cache_hit_at(__u64 id, __u64 now, __u64 name,
					 __u32 ev)
{
	struct sp_query_stats *row;

	emit(ev, id, now, name, 0, 0);
	row = query_row(id >> 32, name);
	if (row)
		row->cache_hits++;
}

/* Defined with the batched events (query_batch.bpf.c): a per-event probe
 * first drains the thread's rings, whose records all came before it.
 * Global, so the verifier checks it once per program, not once per
 * caller's path. `site` is 1 for the per-event sites of the batched probe
 * names, which also count the events that fell back to them (see sp_tsc). */
int drain_before_event(__u64 id, __u32 site);

/* What an exiting thread leaves: its --query stacks (query_spec.bpf.c)
 * and its batched rings (query_batch.bpf.c). Global, called by
 * sp_thread_exit (query.bpf.c). */
int spec_thread_exit(__u32 tid);
int batch_thread_exit(__u64 id);
/* query_spec.bpf.c's: the --query lines' stacks (0: no --query). */
extern const volatile __u32 spec_ntracks;

/* Every per-event program drains the thread's rings first (one hash
 * lookup for a thread without any), once some file is attached batched:
 * a --func frame, a mark or a spec event must come after the batched
 * events that happened before it, on the stack and in a recording. */
static __always_inline void drain_first(__u64 id, __u32 site)
{
	if (batch_loaded && batching)
		drain_before_event(id, site);
}

#endif /* SPTRACE_QUERY_CORE_BPF_H */
