// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * In-kernel aggregation of sp query probes: per-thread stacks of open
 * intervals give each query its self and total time; per-CPU rows hold the
 * figures, so no two CPUs ever update the same map value.
 *
 * Every program is a plain uprobe on an sp probe site. The loader attaches
 * them itself (not through libbpf's USDT layer) and passes, in the attach
 * cookie, which register holds each argument: the sp probe header guarantees
 * register-only arguments, so one switch reads an argument with no map
 * lookup and no helper call.
 *
 * --query specs are the exception: third-party USDT probes, attached
 * through libbpf's USDT layer, whose row name is a string argument hashed
 * here (or a fixed name the loader chose); see spec_name().
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include <sptrace/query_abi.h>
#include <sptrace/hist.h>
#include <sptrace/qstack.h>
#include <sptrace/record_abi.h>
#include <sptrace/follow_abi.h>
#include "sp_regs.bpf.h"
/* --follow: the processes that count, kept by follow.bpf.c (this map is
 * its map; sized down when unused). Links then serve every process. */
#define SP_FOLLOW_FILTER_ONLY
#include "follow_maps.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#ifndef EEXIST
#define EEXIST 17
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_thread_stack);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, struct sp_query_key);
	__type(value, struct sp_query_stats);
} queries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_HIST);
	__type(key, struct sp_hist_key);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, struct sp_query_key);
	__type(value, struct sp_name);
} names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_thread_name);
} thread_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_ERR__MAX);
	__type(key, __u32);
	__type(value, __u64);
} errors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SP_DEFAULT_RINGBUF);
} events SEC(".maps");

/* --query: the string of each hashed name, once (key: the tagged name). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, __u64);
	__type(value, struct sp_spec_name);
} spec_names SEC(".maps");

/* --query: where a name string is read before it is hashed. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_spec_name);
} spec_scratch SEC(".maps");

/* --query: name strings that could not be read (named "<unreadable>").
 * Apart from SP_ERR_NAME_READ, which userspace recomputes for sp names. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} spec_unreadable SEC(".maps");

/* Zeroed templates for map values too large for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_thread_stack);
} zero_stack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_name);
} zero_name SEC(".maps");

/*
 * Set by the loader once every site of a batch is attached. Attaching is
 * one site at a time; without this gate an END attached before its BEGIN
 * (or the reverse) would see half of the pairs while the loader works.
 */
volatile bool armed;

/* Set before load by `sptrace record`: every event also goes to `events`,
 * with the very timestamp aggregation uses. */
const volatile bool record = false;
/* Wake the reader only once this much is waiting: a wakeup per event
 * costs more than the event; the reader also drains on a timer. */
const volatile __u64 wakeup_bytes = SP_DEFAULT_RINGBUF / 4;

/* Set before load by --follow. */
const volatile bool follow = false;

/* Does the current process count? With --follow, only followed ones. */
static __always_inline bool traced(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	return !follow || bpf_map_lookup_elem(&followed, &tgid);
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

static __always_inline void emit(__u32 kind, __u64 id, __u64 now, __u64 name,
				 __u64 arg1, __u64 arg2)
{
	struct sp_rec_event *e;

	if (!record)
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

static __always_inline struct sp_thread_stack *thread_stack(__u32 tid,
							     __u32 tgid,
							     bool create)
{
	struct sp_thread_stack *st;
	__u32 zero = 0;
	long err;

	st = bpf_map_lookup_elem(&threads, &tid);
	if (st || !create)
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
	if (st)
		st->tgid = tgid;
	return st;
}

/* Copies the name string once, when its row is created: the hot path never
 * reads strings, and the name outlives the target. */
static __always_inline void capture_name(const struct sp_query_key *key)
{
	struct sp_name *tmpl, *n;
	__u32 zero = 0;

	if (key->name & (SP_FUNC_TAG | SP_SPEC_TAG))
		return;	/* --func, --query: named from a table or spec_names */
	tmpl = bpf_map_lookup_elem(&zero_name, &zero);
	if (!tmpl)
		return;
	if (bpf_map_update_elem(&names, key, tmpl, BPF_NOEXIST)) {
		count_error(SP_ERR_NAMES_FULL, 1);
		return;
	}
	n = bpf_map_lookup_elem(&names, key);
	if (!n)
		return;
	if (bpf_probe_read_user_str(n->str, sizeof(n->str),
				    (const void *)key->name) <= 0) {
		n->str[0] = 0;	/* userspace retries through /proc/PID/mem */
		count_error(SP_ERR_NAME_READ, 1);
	}
}

static __always_inline struct sp_query_stats *query_row(__u32 tgid, __u64 name)
{
	struct sp_query_key key = { .name = name, .tgid = tgid };
	struct sp_query_stats zero = {}, *row;
	long err;

	row = bpf_map_lookup_elem(&queries, &key);
	if (row)
		return row;
	err = bpf_map_update_elem(&queries, &key, &zero, BPF_NOEXIST);
	if (!err)
		capture_name(&key);
	else if (err != -EEXIST) {
		count_error(SP_ERR_QUERIES_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&queries, &key);
}

static __always_inline void hist_add(__u32 tgid, __u64 name, __u64 ns)
{
	struct sp_hist_key key = {
		.name = name, .tgid = tgid, .bucket = sp_hist_bucket(ns),
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

/*
 * BEGIN of an interval named `name`. `sp` is 0 for sp probes; for --func
 * entries it is the stack pointer, saved in the frame so that frames a
 * longjmp or an exception skipped can be recognised and dropped.
 */
static __always_inline int begin(__u64 name, __u32 kind, __u32 ev, __u64 sp)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct sp_thread_stack *st;
	__u32 n;

	if (!counting())
		return 0;
	emit(ev, id, now, name, 0, 0);
	st = thread_stack((__u32)id, id >> 32, true);
	if (!st)
		return 0;
	if (sp) {
		n = sp_stack_unwind(st, sp);
		if (n)
			count_error(SP_ERR_FUNC_UNWOUND, n);
	}
	if (sp_stack_push(st, name, kind, now)) {
		count_error(SP_ERR_STACK_OVERFLOW, 1);
		return 0;
	}
	if (sp && st->depth > 0 && st->depth <= SP_MAX_DEPTH)
		st->frames[(st->depth - 1) & (SP_MAX_DEPTH - 1)].sp = sp;
	return 0;
}

static __always_inline int on_begin(struct pt_regs *ctx, __u32 kind,
				    __u32 ev)
{
	return begin(sp_probe_arg(ctx, 0), kind, ev, 0);
}

/* END of an interval; `sp` as for begin(), for --func returns. */
static __always_inline int end(__u64 name, __u32 kind, __u32 ev, __u64 sp)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32;
	struct sp_thread_stack *st;
	struct sp_query_stats *row;
	struct sp_closed c = {};
	int r;

	if (!counting())
		return 0;
	emit(ev, id, now, name, 0, 0);
	st = thread_stack((__u32)id, tgid, false);
	if (!st) {
		count_error(SP_ERR_END_WITHOUT_BEGIN, 1);
		return 0;
	}
	if (sp) {
		__u32 n = sp_stack_unwind(st, sp);

		if (n)
			count_error(SP_ERR_FUNC_UNWOUND, n);
	}
	r = sp_stack_pop(st, name, kind, now, &c);
	if (r == SP_POP_OVERFLOWED)
		return 0;
	if (r == SP_POP_UNMATCHED) {
		count_error(SP_ERR_END_WITHOUT_BEGIN, 1);
		return 0;
	}
	if (c.discarded)
		count_error(SP_ERR_END_MISMATCH, c.discarded);

	row = query_row(tgid, c.name);
	if (!row)
		return 0;
	row->total_ns += c.total_ns;
	row->self_ns += c.self_ns;
	switch (kind) {
	case SP_FRAME_QUERY:
		if (!row->count || c.total_ns < row->min_ns)
			row->min_ns = c.total_ns;
		if (c.total_ns > row->max_ns)
			row->max_ns = c.total_ns;
		row->count++;
		hist_add(tgid, c.name, c.total_ns);
		break;
	case SP_FRAME_BLOCKED:
		row->blocked_count++;
		row->blocked_ns += c.total_ns;
		break;
	case SP_FRAME_INCR_LOAD:
		row->incr_loads++;
		row->incr_load_ns += c.total_ns;
		break;
	}
	return 0;
}

static __always_inline int on_end(struct pt_regs *ctx, __u32 kind, __u32 ev)
{
	return end(sp_probe_arg(ctx, 0), kind, ev, 0);
}

SEC("uprobe")
int sp_query_begin(struct pt_regs *ctx)
{
	return on_begin(ctx, SP_FRAME_QUERY, SP_EV_QUERY_BEGIN);
}

SEC("uprobe")
int sp_query_end(struct pt_regs *ctx)
{
	return on_end(ctx, SP_FRAME_QUERY, SP_EV_QUERY_END);
}

SEC("uprobe")
int sp_blocked_begin(struct pt_regs *ctx)
{
	return on_begin(ctx, SP_FRAME_BLOCKED, SP_EV_BLOCKED_BEGIN);
}

SEC("uprobe")
int sp_blocked_end(struct pt_regs *ctx)
{
	return on_end(ctx, SP_FRAME_BLOCKED, SP_EV_BLOCKED_END);
}

SEC("uprobe")
int sp_incr_load_begin(struct pt_regs *ctx)
{
	return on_begin(ctx, SP_FRAME_INCR_LOAD,
			SP_EV_INCR_LOAD_BEGIN);
}

SEC("uprobe")
int sp_incr_load_end(struct pt_regs *ctx)
{
	return on_end(ctx, SP_FRAME_INCR_LOAD, SP_EV_INCR_LOAD_END);
}

SEC("uprobe")
int sp_cache_hit(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), name = sp_probe_arg(ctx, 0);
	struct sp_query_stats *row;

	if (!counting())
		return 0;
	emit(SP_EV_CACHE_HIT, id, bpf_ktime_get_ns(), name, 0, 0);
	row = query_row(id >> 32, name);
	if (row)
		row->cache_hits++;
	return 0;
}

SEC("uprobe")
int sp_thread_name(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_thread_name *tn;
	__u32 tid = (__u32)id;

	if (!traced())
		return 0;
	if (armed)
		emit(SP_EV_THREAD_NAME, id, bpf_ktime_get_ns(),
		     sp_probe_arg(ctx, 0), 0, 0);
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
				    (const void *)sp_probe_arg(ctx, 0)) <= 0) {
		tn->str[0] = 0;
		count_error(SP_ERR_NAME_READ, 1);
	}
	return 0;
}

/*
 * --func: plain functions. The cookie is the row's name (SP_FUNC_TAG |
 * index); the stack pointer tells unwound frames apart. At a return probe
 * `ret` has popped the return address: the function entered at sp - 8.
 */
SEC("uprobe")
int sp_func_entry(struct pt_regs *ctx)
{
	return begin(bpf_get_attach_cookie(ctx), SP_FRAME_QUERY,
		     SP_EV_QUERY_BEGIN, SP_CTX_REG(ctx, rsp));
}

SEC("uretprobe")
int sp_func_return(struct pt_regs *ctx)
{
	/* Frames entered below sp - 8 are gone; sp - 8 is this one. */
	return end(bpf_get_attach_cookie(ctx), SP_FRAME_QUERY,
		   SP_EV_QUERY_END, SP_CTX_REG(ctx, rsp) - 16);
}

/*
 * --query: the row name of a spec probe. A string argument is read into a
 * per-CPU buffer and hashed (FNV-1a 64): third-party names are no literals,
 * so their address says nothing. The string is kept once per hash. Returns
 * 0 when no name can be formed (counted).
 */
static __always_inline __u64 spec_name(struct pt_regs *ctx, __u64 cookie)
{
	static const char unreadable[] = "<unreadable>";
	struct sp_spec_name *buf;
	__u64 h = SP_FNV_OFFSET, name;
	__u32 zero = 0, i;
	long ptr = 0, len = -1, err;

	if (cookie & SP_SPEC_LITERAL)
		return SP_FUNC_TAG | SP_SPEC_INDEX(cookie);
	buf = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!buf)
		return 0;
	if (!bpf_usdt_arg(ctx, SP_SPEC_ARG(cookie), &ptr) && ptr)
		len = bpf_probe_read_user_str(buf->str, sizeof(buf->str),
					      (const void *)ptr);
	if (len <= 0) {
		__u64 *v = bpf_map_lookup_elem(&spec_unreadable, &zero);

		if (v)
			*v += 1;
		__builtin_memcpy(buf->str, unreadable, sizeof(unreadable));
		len = sizeof(unreadable);
	}
	for (i = 0; i < SP_SPEC_NAME_LEN; i++) {
		if (i + 1 >= len)	/* len counts the NUL */
			break;
		h ^= (__u8)buf->str[i];
		h *= SP_FNV_PRIME;
	}
	name = SP_SPEC_TAG | (h >> 2);
	if (!bpf_map_lookup_elem(&spec_names, &name)) {
		err = bpf_map_update_elem(&spec_names, &name, buf, BPF_NOEXIST);
		if (err && err != -EEXIST)
			count_error(SP_ERR_NAMES_FULL, 1);
	}
	return name;
}

static __always_inline __u32 spec_kind(__u64 cookie)
{
	__u32 kind = SP_SPEC_KIND(cookie);

	return kind < SP_FRAME__MAX ? kind : SP_FRAME_QUERY;
}

/* The record event of a spec probe's BEGIN or END. */
static __always_inline __u32 spec_event(__u32 kind, bool begin)
{
	switch (kind) {
	case SP_FRAME_BLOCKED:
		return begin ? SP_EV_BLOCKED_BEGIN : SP_EV_BLOCKED_END;
	case SP_FRAME_INCR_LOAD:
		return begin ? SP_EV_INCR_LOAD_BEGIN : SP_EV_INCR_LOAD_END;
	}
	return begin ? SP_EV_QUERY_BEGIN : SP_EV_QUERY_END;
}

SEC("usdt")
int sp_spec_begin(struct pt_regs *ctx)
{
	__u64 cookie = bpf_usdt_cookie(ctx), name;
	__u32 kind = spec_kind(cookie);

	if (!counting())
		return 0;
	name = spec_name(ctx, cookie);
	return name ? begin(name, kind, spec_event(kind, true), 0) : 0;
}

SEC("usdt")
int sp_spec_end(struct pt_regs *ctx)
{
	__u64 cookie = bpf_usdt_cookie(ctx), name;
	__u32 kind = spec_kind(cookie);

	if (!counting())
		return 0;
	name = spec_name(ctx, cookie);
	return name ? end(name, kind, spec_event(kind, false), 0) : 0;
}

SEC("usdt")
int sp_spec_cache(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), name;
	struct sp_query_stats *row;

	if (!counting())
		return 0;
	name = spec_name(ctx, bpf_usdt_cookie(ctx));
	if (!name)
		return 0;
	emit(SP_EV_CACHE_HIT, id, bpf_ktime_get_ns(), name, 0, 0);
	row = query_row(id >> 32, name);
	if (row)
		row->cache_hits++;
	return 0;
}

/* Marks and typed allocations are recorded here; their aggregation
 * belongs to the latency and memory programs. */
SEC("uprobe")
int sp_mark(struct pt_regs *ctx)
{
	if (counting())
		emit(SP_EV_MARK, bpf_get_current_pid_tgid(), bpf_ktime_get_ns(),
		     sp_probe_arg(ctx, 0), sp_probe_arg(ctx, 1), 0);
	return 0;
}

SEC("uprobe")
int sp_alloc(struct pt_regs *ctx)
{
	if (counting())
		emit(SP_EV_ALLOC, bpf_get_current_pid_tgid(), bpf_ktime_get_ns(),
		     sp_probe_arg(ctx, 0), sp_probe_arg(ctx, 1), sp_probe_arg(ctx, 2));
	return 0;
}

SEC("uprobe")
int sp_free(struct pt_regs *ctx)
{
	if (counting())
		emit(SP_EV_FREE, bpf_get_current_pid_tgid(), bpf_ktime_get_ns(),
		     sp_probe_arg(ctx, 0), 0, sp_probe_arg(ctx, 1));
	return 0;
}

/*
 * A thread that exits with open frames: count them and free its stack, so
 * short-lived threads never fill the `threads` map. Runs for every exiting
 * thread on the system; untraced ones cost one failed lookup.
 */
SEC("raw_tracepoint/sched_process_exit")
int sp_thread_exit(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct sp_thread_stack *st;

	(void)ctx;
	st = bpf_map_lookup_elem(&threads, &tid);
	if (!st)
		return 0;
	if (armed)
		emit(SP_EV_THREAD_EXIT, bpf_get_current_pid_tgid(),
		     bpf_ktime_get_ns(), 0, 0, 0);
	if (st->depth || st->overflow)
		count_error(SP_ERR_THREAD_EXIT_OPEN,
			    (__u64)st->depth + st->overflow);
	bpf_map_delete_elem(&threads, &tid);
	return 0;
}
