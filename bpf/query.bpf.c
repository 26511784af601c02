// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * In-kernel aggregation of sp query probes: per-thread stacks of open
 * intervals give each query its self and total time; per-CPU rows hold the
 * figures, so no two CPUs ever update the same map value.
 *
 * The query object is linked from four files, one per family, which share
 * the maps of query_maps.bpf.h and the event path of query_core.bpf.h:
 *   query.bpf.c        the sp probes, per event, and thread exits;
 *   query_batch.bpf.c  batched sp events: the rings in the host, drained;
 *   query_func.bpf.c   --func: entry and return probes on plain functions;
 *   query_spec.bpf.c   --query: third-party USDT probes, by spec line.
 * The loader loads only the families a session uses (query_provider.c).
 *
 * Every sp program is a plain uprobe on an sp probe site. The loader
 * attaches them itself (not through libbpf's USDT layer) and passes, in the
 * attach cookie, which register holds each argument: the sp probe header
 * guarantees register-only arguments, so one switch reads an argument with
 * no map lookup and no helper call. One program, sp_event, serves every
 * per-event probe name, told apart by the cookie's top byte: each program
 * is verified at load, and its shared path (the stack, the row, the drain
 * of batched rings) once instead of once per name cut sptrace's load from
 * seconds to milliseconds.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/query_abi.h>
#include <sptrace/record_abi.h>
#include <sptrace/tsc_map.h>
#include "sp_regs.bpf.h"
#include "query_core.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The variables of query_maps.bpf.h, defined once for the object. */
volatile bool armed;
volatile bool batching;
volatile bool sampling;
volatile __u64 armed_ns;
volatile __u64 disarmed_ns;
struct sp_tsc_clock tsc_clock;
const volatile bool record = false;
const volatile __u64 wakeup_bytes = SP_DEFAULT_RINGBUF / 4;
const volatile bool follow = false;
const volatile bool ladder = false;
const volatile bool query_keys = false;
const volatile bool batch_loaded = false;

/* Argument i of the site that fired, whose cookie is in hand. */
static __always_inline __u64 event_arg(struct pt_regs *ctx, __u64 cookie,
				       unsigned int i)
{
	return sp_reg_value(ctx, SP_COOKIE_ARG(cookie, i));
}

/* A keyed query site (SP_QUERY_BEGIN_KEY...): its second argument. */
static __always_inline bool has_key(__u64 cookie)
{
	return SP_COOKIE_ARG(cookie, 1) != SP_REG_NONE;
}

/* A text key's site (SP_QUERY_BEGIN_KEY_STR...): a third argument, 1. */
static __always_inline bool text_key(struct pt_regs *ctx, __u64 cookie)
{
	return SP_COOKIE_ARG(cookie, 2) != SP_REG_NONE &&
	       event_arg(ctx, cookie, 2) == SP_KEY_ARG_TEXT;
}

static __always_inline int on_begin(struct pt_regs *ctx, __u64 cookie,
				    __u32 kind, __u32 ev)
{
	__u64 id = bpf_get_current_pid_tgid(), now, name;

	if (!counting())
		return 0;
	drain_first(id, 1);
	name = event_arg(ctx, cookie, 0);
	if (has_key(cookie)) {	/* recorded under its name; counted keyed */
		now = bpf_ktime_get_ns();
		emit(ev, id, now, name, 0, 0);
		return begin_at(id, now, keyed_name(id, name,
						    event_arg(ctx, cookie, 1),
						    true, text_key(ctx, cookie),
						    true), kind, 0, 0);
	}
	return begin_at(id, bpf_ktime_get_ns(), name, kind, ev, 0);
}

static __always_inline int on_end(struct pt_regs *ctx, __u64 cookie,
				  __u32 kind, __u32 ev)
{
	/* The time before the drain, which takes microseconds: not the
	 * query's (on_begin's drain comes before its time for the same
	 * reason). The drained records all came before this END. */
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid(), name;

	if (!counting())
		return 0;
	drain_first(id, 1);
	name = event_arg(ctx, cookie, 0);
	if (has_key(cookie)) {
		emit(ev, id, now, name, 0, 0);
		return end_at(id, now, keyed_name(id, name,
						  event_arg(ctx, cookie, 1),
						  true, text_key(ctx, cookie),
						  false), kind, 0, 0);
	}
	return end_at(id, now, name, kind, ev, 0);
}

/*
 * Async queries: sp:query_poll_end(name, id, ready), fired by Rust's
 * sp_probe::Instrument at the end of each poll of a future, whose BEGIN was
 * an sp:query_begin of the same name on the same thread. A keyed
 * invocation (AsyncQuery::with_key, a tracing span's key field) adds the
 * key as a fourth argument (and a text key SP_KEY_ARG_TEXT as a fifth),
 * its BEGINs being keyed ones of the same key. A future runs in
 * polls, each on whichever thread polls it, with other futures' polls in
 * between; one poll is a frame of its thread's stack like a sync query
 * (nested futures' polls are its children), so the per-thread stack stays
 * right when the future migrates. The invocation is counted once, at the
 * poll that completes it (ready != 0), with the sums over all its polls as
 * its total and self time: until then they wait in `async_busy` under the
 * invocation's name and id (the host's count, unique per name pointer: an
 * executable and a plugin that each count from 1 have names of their own
 * for the same text). The host
 * sends a last, empty poll with ready set when it drops a future that did
 * not complete, so an entry lives only while its future is suspended.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_ASYNC);
	__type(key, struct sp_async_key);
	__type(value, struct sp_async_busy);
} async_busy SEC(".maps");

static __always_inline int poll_end_at(__u64 id, __u64 now, __u64 name,
				       __u64 inv, bool ready)
{
	struct sp_async_key key = { .id = inv, .name = name, .tgid = id >> 32 };
	struct sp_thread_stack *st;
	struct sp_query_stats *row;
	struct sp_async_busy *b;
	struct sp_closed c = {};
	int r;

	st = thread_stack((__u32)id, key.tgid, false);
	if (!st) {
		count_unbalanced(key.tgid, SP_ERR_END_WITHOUT_BEGIN, 1);
		return 0;
	}
	r = stack_pop(st, name, SP_FRAME_QUERY, now, &c);
	if (r == SP_POP_OVERFLOWED)
		return 0;
	if (r == SP_POP_UNMATCHED) {
		count_unbalanced(key.tgid, SP_ERR_END_WITHOUT_BEGIN, 1);
		return 0;
	}
	if (c.discarded)
		count_error(SP_ERR_END_MISMATCH, c.discarded);
	b = bpf_map_lookup_elem(&async_busy, &key);
	if (ready) {
		if (b) {
			c.total_ns += b->total_ns;
			c.self_ns += b->self_ns;
			bpf_map_delete_elem(&async_busy, &key);
		}
		add_closed(key.tgid, &c);
		return 0;
	}
	if (!b) {
		struct sp_async_busy v = { c.total_ns, c.self_ns };
		long err = bpf_map_update_elem(&async_busy, &key, &v,
					       BPF_NOEXIST);

		if (!err)
			return 0;
		if (err == -EEXIST)	/* another thread's poll made it */
			b = bpf_map_lookup_elem(&async_busy, &key);
	}
	if (b) {
		/* Atomic: a tracing span may be entered on two threads at
		 * once, each poll adding to the one invocation. */
		__sync_fetch_and_add(&b->total_ns, c.total_ns);
		__sync_fetch_and_add(&b->self_ns, c.self_ns);
		return 0;
	}
	/* Full: the poll's time goes straight to its row, so Time and Self
	 * stay exact; the invocation's latency (histogram, min, max) misses
	 * it, which the error says. */
	count_error(SP_ERR_ASYNC_FULL, 1);
	row = query_row(key.tgid, name);
	if (row) {
		row->total_ns += c.total_ns;
		row->self_ns += c.self_ns;
	}
	return 0;
}

/* An async probe's row name: its first argument, or, for a keyed
 * invocation (its key at argument `k`, SP_KEY_ARG_TEXT after it for a text
 * key), the key's row: its polls began keyed, so their frames and its row
 * are the key's. */
static __always_inline __u64 async_name(struct pt_regs *ctx, __u64 cookie,
					__u64 id, unsigned int k)
{
	__u64 name = event_arg(ctx, cookie, 0);

	if (SP_COOKIE_ARG(cookie, k) == SP_REG_NONE)
		return name;
	return keyed_name(id, name, event_arg(ctx, cookie, k), true,
			  SP_COOKIE_ARG(cookie, k + 1) != SP_REG_NONE &&
			  event_arg(ctx, cookie, k + 1) == SP_KEY_ARG_TEXT,
			  false);
}

static __always_inline int on_poll_end(struct pt_regs *ctx, __u64 cookie)
{
	/* As on_end(): the time before the drain of the thread's rings. */
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 1);
	/* (name, id, ready[, key[, SP_KEY_ARG_TEXT]]) */
	return poll_end_at(id, now, async_name(ctx, cookie, id, 3),
			   event_arg(ctx, cookie, 1),
			   event_arg(ctx, cookie, 2) != 0);
}

/*
 * sp:query_finish(name, id[, key[, SP_KEY_ARG_TEXT]]): an async invocation
 * ends after its last piece (a future dropped while suspended, a span
 * closed after its last exit). No frame is open for it: it is counted
 * with what its pieces left in `async_busy`, and takes no time itself
 * (the probe's own cost stays out, where an empty last piece, the older
 * way, added a BEGIN's and an END's). An invocation not in `async_busy`
 * (the map was full: its pieces' time went to the row) is counted with
 * none.
 */
static __always_inline int finish_at(__u64 id, __u64 name, __u64 inv)
{
	struct sp_async_key key = { .id = inv, .name = name, .tgid = id >> 32 };
	struct sp_closed c = { .name = name, .kind = SP_FRAME_QUERY };
	struct sp_async_busy *b;

	b = bpf_map_lookup_elem(&async_busy, &key);
	if (b) {
		c.total_ns = b->total_ns;
		c.self_ns = b->self_ns;
		bpf_map_delete_elem(&async_busy, &key);
	}
	add_closed(key.tgid, &c);
	return 0;
}

static __always_inline int on_finish(struct pt_regs *ctx, __u64 cookie)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 1);
	/* (name, id[, key[, SP_KEY_ARG_TEXT]]) */
	return finish_at(id, async_name(ctx, cookie, id, 2),
			 event_arg(ctx, cookie, 1));
}

static __always_inline int on_cache_hit(struct pt_regs *ctx, __u64 cookie)
{
	__u64 id = bpf_get_current_pid_tgid(), now, name;

	if (!counting())
		return 0;
	drain_first(id, 1);
	name = event_arg(ctx, cookie, 0);
	if (has_key(cookie)) {
		now = bpf_ktime_get_ns();
		emit(SP_EV_CACHE_HIT, id, now, name, 0, 0);
		cache_hit_at(id, now, keyed_name(id, name,
						 event_arg(ctx, cookie, 1),
						 true, text_key(ctx, cookie),
						 true), 0);
		return 0;
	}
	cache_hit_at(id, bpf_ktime_get_ns(), name, SP_EV_CACHE_HIT);
	return 0;
}

static __always_inline int on_thread_name(struct pt_regs *ctx, __u64 cookie)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 str = event_arg(ctx, cookie, 0);
	struct sp_thread_name *tn;
	__u32 tid = (__u32)id;

	if (!traced())
		return 0;
	if (armed) {
		if (record)	/* its place among the thread's events */
			drain_first(id, 0);
		emit(SP_EV_THREAD_NAME, id, bpf_ktime_get_ns(), str, 0, 0);
	}
	tn = bpf_map_lookup_elem(&thread_names, &tid);
	if (!tn) {
		struct sp_thread_name init = { .tgid = id >> 32 };

		if (bpf_map_update_elem(&thread_names, &tid, &init, BPF_ANY)) {
			count_error(SP_ERR_THREADS_FULL, 1);
			return 0;
		}
		tn = bpf_map_lookup_elem(&thread_names, &tid);
		if (!tn)
			return 0;
	}
	tn->tgid = id >> 32;
	if (bpf_probe_read_user_str(tn->str, sizeof(tn->str),
				    (const void *)str) <= 0) {
		tn->str[0] = 0;
		count_error(SP_ERR_NAME_READ, 1);
	}
	return 0;
}

/* Marks and typed allocations are recorded here; their aggregation
 * belongs to the latency and memory programs. A mark's arguments are its
 * name and key, an allocation's its type, size and pointer, a free's its
 * type and pointer. */
static __always_inline int on_record_only(struct pt_regs *ctx, __u64 cookie,
					  __u32 ev)
{
	__u64 id = bpf_get_current_pid_tgid(), a1, a2 = 0;

	if (!counting())
		return 0;
	drain_first(id, 0);
	a1 = event_arg(ctx, cookie, 1);
	if (ev == SP_EV_ALLOC) {
		a2 = event_arg(ctx, cookie, 2);
	} else if (ev == SP_EV_FREE) {
		a2 = a1;
		a1 = 0;
	}
	emit(ev, id, bpf_ktime_get_ns(), event_arg(ctx, cookie, 0), a1, a2);
	return 0;
}

/* Every sp probe that fires per event (not batched, or in a file without
 * batching): which one is the cookie's top byte (query_abi.h). */
SEC("uprobe")
int sp_event(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 ev = SP_COOKIE_EVENT(cookie), kind;

	if (counting())
		count_hits(bpf_get_current_pid_tgid() >> 32, SP_HIT_EVENT, 1);
	switch (ev) {
	case SP_EV_QUERY_BEGIN:
	case SP_EV_QUERY_END:
		kind = SP_FRAME_QUERY;
		break;
	case SP_EV_BLOCKED_BEGIN:
	case SP_EV_BLOCKED_END:
		kind = SP_FRAME_BLOCKED;
		break;
	case SP_EV_INCR_LOAD_BEGIN:
	case SP_EV_INCR_LOAD_END:
		kind = SP_FRAME_INCR_LOAD;
		break;
	case SP_COOKIE_POLL_END:
		return on_poll_end(ctx, cookie);
	case SP_COOKIE_FINISH:
		return on_finish(ctx, cookie);
	case SP_EV_CACHE_HIT:
		return on_cache_hit(ctx, cookie);
	case SP_EV_THREAD_NAME:
		return on_thread_name(ctx, cookie);
	case SP_EV_MARK:
	case SP_EV_ALLOC:
	case SP_EV_FREE:
		return on_record_only(ctx, cookie, ev);
	default:
		return 0;
	}
	if (ev == SP_EV_QUERY_BEGIN || ev == SP_EV_BLOCKED_BEGIN ||
	    ev == SP_EV_INCR_LOAD_BEGIN)
		return on_begin(ctx, cookie, kind, ev);
	return on_end(ctx, cookie, kind, ev);
}

/*
 * A thread that exits with open frames: count them and free its stack, so
 * short-lived threads never fill the `threads` map. Runs for every exiting
 * thread on the system; untraced ones cost one failed lookup.
 */
SEC("raw_tracepoint/sched_process_exit")
int sp_thread_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct sp_thread_stack *st;

	(void)ctx;
	if (spec_ntracks)
		spec_thread_exit(tid);
	/* Its rings first: this tracepoint runs before the exiting thread
	 * lets go of its memory, so they are still readable. */
	if (batch_loaded)
		batch_thread_exit(id);
	st = bpf_map_lookup_elem(&threads, &tid);
	if (!st)
		return 0;
	if (armed)
		emit(SP_EV_THREAD_EXIT, id, bpf_ktime_get_ns(), 0, 0, 0);
	if (st->depth || st->overflow)
		count_unbalanced(id >> 32, SP_ERR_THREAD_EXIT_OPEN,
				 (__u64)st->depth + st->overflow);
	bpf_map_delete_elem(&threads, &tid);
	return 0;
}
