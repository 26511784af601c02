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
 * through libbpf's USDT layer. Each spec line has its own per-thread stack
 * (its track, shared only by lines that say stack=NAME), so a provider's
 * overlapping intervals never disturb each other or the sp probes; its
 * row name is formed once, at BEGIN (see spec_name()).
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>
#include <sptrace/query_abi.h>
#include <sptrace/batch_abi.h>
#include <sptrace/tsc_map.h>
#include <sptrace/hist.h>
#include <sptrace/ladder.h>
#include <sptrace/qstack.h>
#include <sptrace/spec_norm.h>
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
	__uint(max_entries, SP_CNT__END);
	__type(key, __u32);
	__type(value, __u64);
} errors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SP_DEFAULT_RINGBUF);
} events SEC(".maps");

/* --query: the string of each row value, once (key: the row's name with
 * outcome 0); also the set of a line's values, for its row cap. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SP_DEFAULT_MAX_QUERIES);
	__type(key, __u64);
	__type(value, struct sp_spec_name);
} spec_names SEC(".maps");

/* --query, per CPU: a direct-mapped cache of names known to be in
 * `spec_names` (never deleted during a session), so a BEGIN of a known name
 * looks nothing up to learn it is admitted. It only chooses which lookup
 * comes first. The name string itself is read into the program's stack,
 * a line that is hot at every event, where a per-CPU buffer was one more
 * cold line under a busy host. */
#define SPEC_ADMITTED_SLOTS 64
struct spec_scratch {
	__u64 admitted[SPEC_ADMITTED_SLOTS];
	/* Admission only: the string as it goes into spec_names, zeroed
	 * after its NUL (the stack buffer holds stale kernel stack there). */
	struct sp_spec_name admit;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct spec_scratch);
} spec_scratch SEC(".maps");

/* --query: one stack of open intervals per thread and track. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, struct sp_spec_tkey);
	__type(value, struct sp_thread_stack);
} spec_stacks SEC(".maps");

/* --query: one bit per value hash, set before the value enters
 * `spec_names` and never cleared: a clear bit proves a value was never
 * admitted. A line at its cap admits nothing more, so there one load
 * sends most new values to "<other>" without a hash lookup (64 KiB). */
#define SPEC_ADMIT_BITS (1u << 19)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPEC_ADMIT_BITS / 64);
	__type(key, __u32);
	__type(value, __u64);
} spec_admit_bits SEC(".maps");

/* --query: distinct values per line, against its row cap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SP_SPEC_MAX_LINES);
	__type(key, __u32);
	__type(value, __u64);
} spec_rows SEC(".maps");

/* --query: enum sp_spec_error per line (slot line * SP_SPEC_ERR__MAX + e). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_SPEC_MAX_LINES * SP_SPEC_ERR__MAX);
	__type(key, __u32);
	__type(value, __u64);
} spec_errors SEC(".maps");

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

/* And for a new row: off the stack of query_row_new(), which a --query
 * cache line calls below its name buffer (see sp_spec_cache). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_query_stats);
} zero_row SEC(".maps");

/*
 * Set by the loader once every site of a batch is attached. Attaching is
 * one site at a time; without this gate an END attached before its BEGIN
 * (or the reverse) would see half of the pairs while the loader works.
 */
volatile bool armed;
/* Set by the loader before it attaches the first file batched: only then
 * has a per-event program any ring to drain first (see drain_first()). */
volatile bool batching;
/* CLOCK_MONOTONIC when the loader armed and disarmed (0: not yet): batched
 * records, timed in the host, count only in between. */
volatile __u64 armed_ns;
volatile __u64 disarmed_ns;
/* Batched records stamped with the TSC: the map to CLOCK_MONOTONIC that
 * sptrace publishes and keeps recalibrating (include/sptrace/tsc_map.h,
 * userspace/live/tsc_clock.c). count 0: no calibration. */
struct sp_tsc_clock tsc_clock;

/* Set before load by `sptrace record`: every event also goes to `events`,
 * with the very timestamp aggregation uses. */
const volatile bool record = false;
/* Wake the reader only once this much is waiting: a wakeup per event
 * costs more than the event; the reader also drains on a timer. */
const volatile __u64 wakeup_bytes = SP_DEFAULT_RINGBUF / 4;

/* Set before load by --follow. */
const volatile bool follow = false;

/* Set before load by `sptrace serve`: `hist` counts an invocation under its
 * ladder slot (include/sptrace/ladder.h), exact at the bounds serve shows,
 * in at most 23 entries per query; every other command keeps the fine
 * buckets its percentiles need. */
const volatile bool ladder = false;

/* Set before load by --query: its lines, and how many tracks they use. */
const volatile struct sp_spec_line spec_lines[SP_SPEC_MAX_LINES];
const volatile __u32 spec_ntracks = 0;
/* --query: a bit per line some CPU saw at its row cap. Next to `armed`,
 * which every event reads anyway; written once per line. */
volatile __u64 spec_full;

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

/*
 * May a drain of batched records count anything? While armed; and after
 * the disarm too, until sptrace detaches: records stamped before the
 * disarm may still sit in the rings (batch_event() drops the later ones by
 * their time), and a running host keeps flushing. Draining only while
 * armed left its rings to be overwritten between the disarm and sptrace's
 * last read of them, which counted every record of that window as lost.
 */
static __always_inline bool rings_count(void)
{
	return armed || disarmed_ns;
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
	/* Not from another process: the stop drain of batched records runs
	 * in sptrace's context. */
	if ((bpf_get_current_pid_tgid() >> 32) != key->tgid ||
	    bpf_probe_read_user_str(n->str, sizeof(n->str),
				    (const void *)key->name) <= 0) {
		n->str[0] = 0;	/* userspace retries through /proc/PID/mem */
		count_error(SP_ERR_NAME_READ, 1);
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

/*
 * BEGIN of an interval named `name`. `sp` is 0 for sp probes; for --func
 * entries it is the stack pointer, saved in the frame so that frames a
 * longjmp or an exception skipped can be recognised and dropped.
 */
static __always_inline int begin_at(__u64 id, __u64 now, __u64 name,
				    __u32 kind, __u32 ev, __u64 sp)
{
	struct sp_thread_stack *st;
	__u32 n;

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

/* Defined with the batched events below: a per-event probe first drains
 * the thread's rings, whose records all came before it. Global, so the
 * verifier checks it once per program, not once per caller's path.
 * `site` is 1 for the per-event sites of the batched probe names, which
 * also count the events that fell back to them (see sp_tsc). */
int drain_before_event(__u64 id, __u32 site);

/* Every per-event program drains the thread's rings first (one hash
 * lookup for a thread without any), once some file is attached batched:
 * a --func frame, a mark or a spec event must come after the batched
 * events that happened before it, on the stack and in a recording. */
static __always_inline void drain_first(__u64 id, __u32 site)
{
	if (batching)
		drain_before_event(id, site);
}

static __always_inline int on_begin(struct pt_regs *ctx, __u32 kind,
				    __u32 ev)
{
	if (!counting())
		return 0;
	drain_first(bpf_get_current_pid_tgid(), 1);
	return begin_at(bpf_get_current_pid_tgid(), bpf_ktime_get_ns(),
			sp_probe_arg(ctx, 0), kind, ev, 0);
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

/* END of an interval; `sp` as for begin(), for --func returns. */
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

	add_closed(tgid, &c);
	return 0;
}

static __always_inline int on_end(struct pt_regs *ctx, __u32 kind, __u32 ev)
{
	/* The time before the drain, which takes microseconds: not the
	 * query's (on_begin's drain comes before its time for the same
	 * reason). The drained records all came before this END. */
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 1);
	return end_at(id, now, sp_probe_arg(ctx, 0), kind, ev, 0);
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

static __always_inline void cache_hit_at(__u64 id, __u64 now, __u64 name,
					 __u32 ev)
{
	struct sp_query_stats *row;

	emit(ev, id, now, name, 0, 0);
	row = query_row(id >> 32, name);
	if (row)
		row->cache_hits++;
}

SEC("uprobe")
int sp_cache_hit(struct pt_regs *ctx)
{
	if (!counting())
		return 0;
	drain_first(bpf_get_current_pid_tgid(), 1);
	cache_hit_at(bpf_get_current_pid_tgid(), bpf_ktime_get_ns(),
		     sp_probe_arg(ctx, 0), SP_EV_CACHE_HIT);
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
	if (armed) {
		if (record)	/* its place among the thread's events */
			drain_first(id, 0);
		emit(SP_EV_THREAD_NAME, id, bpf_ktime_get_ns(),
		     sp_probe_arg(ctx, 0), 0, 0);
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
	__u64 id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 0);
	return begin_at(id, bpf_ktime_get_ns(), bpf_get_attach_cookie(ctx),
			SP_FRAME_QUERY, SP_EV_QUERY_BEGIN, SP_CTX_REG(ctx, rsp));
}

SEC("uretprobe")
int sp_func_return(struct pt_regs *ctx)
{
	/* The time before the drain, as on_end() takes it. */
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 0);
	/* Frames entered below sp - 8 are gone; sp - 8 is this one. */
	return end_at(id, now, bpf_get_attach_cookie(ctx), SP_FRAME_QUERY,
		      SP_EV_QUERY_END, SP_CTX_REG(ctx, rsp) - 16);
}

/* ---- --query specs -------------------------------------------------- */

static __always_inline void spec_error(__u32 line, __u32 e)
{
	__u32 slot = line * SP_SPEC_ERR__MAX + e;
	__u64 *v;

	if (slot >= SP_SPEC_MAX_LINES * SP_SPEC_ERR__MAX)
		return;
	v = bpf_map_lookup_elem(&spec_errors, &slot);
	if (v)
		*v += 1;
}

/*
 * The libbpf USDT spec of the site that fired, looked up once per event:
 * bpf_usdt_cookie() and each bpf_usdt_arg() would each read the attach
 * cookie and look the spec up again.
 */
static __always_inline struct __bpf_usdt_spec *spec_usdt(struct pt_regs *ctx)
{
	int id = __bpf_usdt_spec_id(ctx);

	if (id < 0)
		return NULL;
	return bpf_map_lookup_elem(&__bpf_usdt_specs, &id);
}

/* A pt_regs field at a libbpf reg_off, loaded directly for the registers
 * USDT arguments use (bpf_usdt_arg() calls bpf_probe_read_kernel() for
 * each: the verifier refuses a ctx load at a variable offset). */
static __always_inline int spec_reg(struct pt_regs *ctx, short off,
				    unsigned long *v)
{
#define SP_REG_CASE(r)                                                         	case __builtin_offsetof(struct pt_regs, r):                            		*v = SP_CTX_REG(ctx, r);                                       		return 0
	switch (off) {
	SP_REG_CASE(rax); SP_REG_CASE(rbx); SP_REG_CASE(rcx);
	SP_REG_CASE(rdx); SP_REG_CASE(rsi); SP_REG_CASE(rdi);
	SP_REG_CASE(rbp); SP_REG_CASE(rsp); SP_REG_CASE(r8);
	SP_REG_CASE(r9); SP_REG_CASE(r10); SP_REG_CASE(r11);
	SP_REG_CASE(r12); SP_REG_CASE(r13); SP_REG_CASE(r14);
	SP_REG_CASE(r15);
	}
#undef SP_REG_CASE
	return bpf_probe_read_kernel(v, sizeof(*v), (void *)ctx + off);
}

/* bpf_usdt_arg() of the spec in hand: the same decoding. */
static __noinline int spec_arg(struct pt_regs *ctx,
				    const struct __bpf_usdt_spec *u,
				    __u32 n, long *res)
{
	const struct __bpf_usdt_arg_spec *a;
	unsigned long val = 0;
	int err;

	*res = 0;
	if (n >= BPF_USDT_MAX_ARG_CNT || n >= (__u32)u->arg_cnt)
		return -ENOENT;
	a = &u->args[n];
	switch (a->arg_type) {
	case BPF_USDT_ARG_CONST:
		val = a->val_off;
		break;
	case BPF_USDT_ARG_REG:
		err = spec_reg(ctx, a->reg_off, &val);
		if (err)
			return err;
		break;
	case BPF_USDT_ARG_REG_DEREF:
		err = spec_reg(ctx, a->reg_off, &val);
		if (!err)
			err = bpf_probe_read_user(&val, sizeof(val),
						  (void *)val + a->val_off);
		if (err)
			return err;
		break;
	default:
		return -EINVAL;
	}
	val <<= a->arg_bitshift;
	if (a->arg_signed)
		val = ((long)val) >> a->arg_bitshift;
	else
		val = val >> a->arg_bitshift;
	*res = val;
	return 0;
}

/* An if= or hit= condition on an integer argument; an argument that
 * cannot be read makes it false. Not inlined: most lines have none, and
 * the program's code is cold at each event under a busy host, so the
 * path an event takes is kept short and together. */
static __noinline bool spec_cond_test(struct pt_regs *ctx,
				      const struct __bpf_usdt_spec *u,
				      __u32 arg, __u32 op, __s64 val)
{
	long v = 0;

	if (spec_arg(ctx, u, arg, &v))
		return false;
	switch (op) {
	case SP_OP_EQ: return v == val;
	case SP_OP_NE: return v != val;
	case SP_OP_LT: return v < val;
	case SP_OP_LE: return v <= val;
	case SP_OP_GT: return v > val;
	case SP_OP_GE: return v >= val;
	}
	return false;
}

/* The if= (hit false) or hit= condition `op` of line l: l is read only
 * when there is one (op comes from the cookie). */
static __always_inline bool spec_cond(struct pt_regs *ctx,
				      const struct __bpf_usdt_spec *u,
				      const volatile struct sp_spec_line *l,
				      __u32 op, bool hit)
{
	if (op == SP_OP_NONE)
		return true;
	if (hit)
		return spec_cond_test(ctx, u, l->hit_arg, op, l->hit_val);
	return spec_cond_test(ctx, u, l->if_arg, op, l->if_val);
}

/* The state of one normalizing hash pass (a bpf_loop callback's). */
struct norm_pass {
	struct sp_spec_name *buf;
	struct sp_norm st;
	__u32 mode;
	long len;
	__u64 h;
};

static __always_inline __u64 fnv_bytes(__u64 h, __u32 out)
{
	__u32 k;

	for (k = 0; k < 3 && out; k++) {
		h ^= out & 0xff;
		h *= SP_FNV_PRIME;
		out >>= 8;
	}
	return h;
}

/* One byte of normalize=sql|digits. A callback of bpf_loop(): the state
 * machine's branches inside an unrolled 256-byte loop are more than the
 * verifier explores. */
static long norm_byte(__u32 i, void *data)
{
	struct norm_pass *p = data;
	__u8 c, next;

	if (i + 1 >= p->len)	/* len counts the NUL */
		return 1;
	c = (__u8)p->buf->str[i & (SP_SPEC_NAME_LEN - 1)];
	next = (__u8)p->buf->str[(i + 1) & (SP_SPEC_NAME_LEN - 1)];
	p->h = fnv_bytes(p->h, sp_norm_step(&p->st, p->mode, c, next));
	return 0;
}

/*
 * The value of a string argument: read into the caller's stack buffer
 * and hashed (FNV-1a 64), raw or in one pass with its normalization
 * (spec_norm.h); the row keeps the raw string once. An unreadable string is named
 * "<unreadable>".
 */
static __always_inline __u64 spec_str_value(struct pt_regs *ctx,
					     const struct __bpf_usdt_spec *u,
					     __u32 line, __u32 arg, __u32 reg,
					     __u32 norm,
					     struct sp_spec_name *buf)
{
	struct norm_pass p = { .buf = buf, .mode = norm, .h = SP_FNV_OFFSET };
	long ptr = 0;
	__u32 i;

	p.len = -1;
	if (reg)
		ptr = (long)sp_reg_value(ctx, reg);
	else if (spec_arg(ctx, u, arg, &ptr))
		ptr = 0;
	if (ptr)
		p.len = bpf_probe_read_user_str(buf->str, sizeof(buf->str),
						(const void *)ptr);
	if (p.len <= 0) {
		spec_error(line, SP_SPEC_ERR_NAME_READ);
		/* Stores of constants: a static string here would be a
		 * .rodata variable libbpf 1.1 places wrongly in its BTF. */
		__builtin_memcpy(buf->str, "<unreadable>", 13);
		p.len = 13;
	}
	if (norm == SP_NORM_NONE) {
		/* Raw: FNV-1a over 8-byte words (the bytes past the NUL
		 * masked off), an eighth of the byte loop's work. */
		__u32 n = (__u32)p.len - 1, at;
		__u64 w;

		/* A loop, not 32 unrolled copies: under a busy host the
		 * program's code is cold at each event. */
#pragma clang loop unroll(disable)
		for (i = 0; i < SP_SPEC_NAME_LEN / 8; i++) {
			at = i * 8;
			if (at >= n)
				break;
			w = *(__u64 *)&buf->str[at & (SP_SPEC_NAME_LEN - 8)];
			if (n - at < 8)
				w &= (1ull << ((n - at) * 8)) - 1;
			p.h ^= w;
			p.h *= SP_FNV_PRIME;
		}
		p.h ^= p.h >> 29;	/* low bits up before ">> 14" */
		p.h *= SP_FNV_PRIME;
		return p.h >> 14;
	}
	bpf_loop(SP_SPEC_NAME_LEN - 1, norm_byte, &p, 0);
	p.h = fnv_bytes(p.h, sp_norm_finish(&p.st));
	return p.h >> 14;
}

/*
 * The row name of an event of spec line `line` (a fixed name, an integer,
 * or a string hashed into buf). Whether the value is admitted is
 * spec_admit()'s question, asked only when no row has it yet.
 */
static __always_inline __u64 spec_name(struct pt_regs *ctx,
				       const struct __bpf_usdt_spec *u,
				       __u32 line, __u64 cookie,
				       struct sp_spec_name *buf)
{
	__u32 type = SP_SPEC_COOKIE_NAME_TYPE(cookie);
	__u32 arg = SP_SPEC_COOKIE_NAME_ARG(cookie);
	__u32 reg = SP_SPEC_COOKIE_NAME_REG(cookie);
	long v = 0;

	if (type == SP_SPEC_NAME_FIXED)
		return SP_SPEC_NAME(line, 0, 0);
	if (type == SP_SPEC_NAME_INT) {
		if (reg)
			v = (long)sp_reg_value(ctx, reg);
		else if (spec_arg(ctx, u, arg, &v)) {
			spec_error(line, SP_SPEC_ERR_NAME_READ);
			return SP_SPEC_NAME(line, SP_SPEC_OUTCOME_OTHER, 0);
		}
		buf->str[0] = 0;
		return SP_SPEC_NAME(line, 0, (__u64)v);
	}
	return SP_SPEC_NAME(line, 0, spec_str_value(ctx, u, line, arg, reg,
				SP_SPEC_COOKIE_NORMALIZE(cookie), buf));
}

/* Was the line seen at its cap? Then a value without a row in this
 * process is more likely one of "<other>" than one admitted. */
static __always_inline bool spec_line_full(__u32 line)
{
	return spec_full & (1ull << (line & (SP_SPEC_MAX_LINES - 1)));
}

/*
 * A value not seen before joins the line's rows (its string kept once in
 * `spec_names`) while the line has fewer than max_rows; after that its
 * events go to the line's "<other>" row, so counts stay exact while the
 * maps stay bounded. Returns the name to count under.
 */
static __noinline __u64 spec_admit_new(__u32 line,
				       const volatile struct sp_spec_line *l,
				       __u64 name,
				       const struct sp_spec_name *buf,
				       __u64 *slot)
{
	__u64 other = SP_SPEC_NAME(line, SP_SPEC_OUTCOME_OTHER, 0), *rows;
	struct spec_scratch *sc;
	__u64 *bits, lbit;
	__u32 bit, word, zero = 0;
	long err;

	bit = (__u32)(name ^ (name >> 40)) & (SPEC_ADMIT_BITS - 1);
	word = bit / 64;
	bits = bpf_map_lookup_elem(&spec_admit_bits, &word);
	if (!bits)
		return other;	/* cannot happen: an array slot in range */
	if (spec_line_full(line) && !(*bits & (1ull << (bit & 63)))) {
		spec_error(line, SP_SPEC_ERR_OTHER);
		return other;
	}
	if (bpf_map_lookup_elem(&spec_names, &name)) {
		*slot = name;
		return name;
	}
	rows = bpf_map_lookup_elem(&spec_rows, &line);
	if (rows && l->max_rows && *rows >= l->max_rows) {
		lbit = 1ull << (line & (SP_SPEC_MAX_LINES - 1));
		if (!(spec_full & lbit))
			__sync_fetch_and_or(&spec_full, lbit);
		spec_error(line, SP_SPEC_ERR_OTHER);
		return other;
	}
	sc = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!sc)
		return other;	/* cannot happen: an array slot in range */
	__builtin_memset(&sc->admit, 0, sizeof(sc->admit));
	bpf_probe_read_kernel_str(sc->admit.str, sizeof(sc->admit.str),
				  buf->str);
	/* Before the value is in spec_names and counted in rows: a CPU that
	 * sees the line full then sees the bit too. */
	__sync_fetch_and_or(bits, 1ull << (bit & 63));
	err = bpf_map_update_elem(&spec_names, &name, &sc->admit, BPF_NOEXIST);
	if (!err && rows)
		__sync_fetch_and_add(rows, 1);
	else if (err && err != -EEXIST) {
		spec_error(line, SP_SPEC_ERR_NAMES_FULL);
		count_error(SP_ERR_NAMES_FULL, 1);
		return other;
	}
	*slot = name;
	return name;
}

/* The admitted-name cache first; the rest (not inlined) only for a name
 * this CPU has not seen admitted. */
static __always_inline __u64 spec_admit(__u32 line,
					const volatile struct sp_spec_line *l,
					__u64 cookie, __u64 name,
					const struct sp_spec_name *buf)
{
	struct spec_scratch *sc;
	__u32 zero = 0;
	__u64 *slot;

	if (SP_SPEC_NAME_OUTCOME(name) ||
	    SP_SPEC_COOKIE_NAME_TYPE(cookie) == SP_SPEC_NAME_FIXED)
		return name;
	sc = bpf_map_lookup_elem(&spec_scratch, &zero);
	if (!sc)	/* cannot happen: slot 0 of a per-CPU array */
		return SP_SPEC_NAME(line, SP_SPEC_OUTCOME_OTHER, 0);
	slot = &sc->admitted[(name ^ (name >> 29)) & (SPEC_ADMITTED_SLOTS - 1)];
	if (*slot == name)
		return name;
	return spec_admit_new(line, l, name, buf, slot);
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

static __always_inline struct sp_thread_stack *
spec_stack(__u32 tid, __u32 track, bool create)
{
	struct sp_spec_tkey key = { .tid = tid, .track = track };
	struct sp_thread_stack *st;
	__u32 zero = 0;
	long err;

	st = bpf_map_lookup_elem(&spec_stacks, &key);
	if (st || !create)
		return st;
	st = bpf_map_lookup_elem(&zero_stack, &zero);
	if (!st)
		return NULL;
	err = bpf_map_update_elem(&spec_stacks, &key, st, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count_error(SP_ERR_THREADS_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&spec_stacks, &key);
}

/*
 * What each spec program does first: is this event counted (armed, the
 * process followed), and which line and END fired. One read of the
 * thread id and one of the USDT spec serve the whole event.
 */
struct spec_ev {
	const struct __bpf_usdt_spec *u;
	const volatile struct sp_spec_line *l;
	__u64 id;
	__u64 cookie;	/* SP_SPEC_COOKIE(): the line's hot fields */
	__u32 line;
	__u32 end;
};

static __always_inline bool spec_event_start(struct pt_regs *ctx,
					     struct spec_ev *e)
{
	__u64 cookie;

	if (!armed)
		return false;
	e->id = bpf_get_current_pid_tgid();
	if (!traced_tgid(e->id >> 32))
		return false;
	/* Own stacks, but one recording: after the batched events before
	 * (`record` is constant: live sessions do not even test it). */
	if (record)
		drain_first(e->id, 0);
	e->u = spec_usdt(ctx);
	if (!e->u)
		return false;
	e->cookie = cookie = e->u->usdt_cookie;
	e->line = SP_SPEC_COOKIE_LINE(cookie) & (SP_SPEC_MAX_LINES - 1);
	e->end = SP_SPEC_COOKIE_END(cookie);
	e->l = &spec_lines[e->line];
	return true;
}

static __noinline int spec_begin_apply(struct pt_regs *ctx,
					    const struct spec_ev *e)
{
	const volatile struct sp_spec_line *l;
	struct sp_thread_stack *st;
	struct sp_spec_name buf;
	__u32 kind, d;
	__u64 now, name;

	l = e->l;
	kind = l->kind;
	if (!spec_cond(ctx, e->u, l, SP_SPEC_COOKIE_IF_OP(e->cookie), false))
		return 0;
	/* The row is made at END, without the string: admit it now. */
	name = spec_admit(e->line, l, e->cookie,
			  spec_name(ctx, e->u, e->line, e->cookie, &buf), &buf);
	now = bpf_ktime_get_ns();
	/* arg1: the track + 1, arg2: the line + 1, so a replay closes the
	 * same frame of the same stack as this program does. */
	emit(spec_event(kind, true), e->id, now, name, l->track + 1, e->line + 1);
	st = spec_stack((__u32)e->id, l->track, true);
	if (!st)
		return 0;
	if (sp_stack_push(st, name, kind, now)) {
		spec_error(e->line, SP_SPEC_ERR_STACK_OVERFLOW);
		count_error(SP_ERR_STACK_OVERFLOW, 1);
		return 0;
	}
	d = st->depth;
	if (d > 0 && d <= SP_MAX_DEPTH)
		st->frames[(d - 1) & (SP_MAX_DEPTH - 1)].tag = e->line + 1;
	return 0;
}

/* The event's own frame is small, and its name buffer in the subprogram:
 * the drain of spec_event_start() would not fit next to it in the 512
 * bytes of BPF stack. */
SEC("usdt")
int sp_spec_begin(struct pt_regs *ctx)
{
	struct spec_ev e;

	if (!spec_event_start(ctx, &e))
		return 0;
	return spec_begin_apply(ctx, &e);
}

/* Any END of a line closes the line's innermost open interval; it reads
 * no name (the BEGIN formed it). With outcomes, each END also counts in
 * its own row. An END without BEGIN on a line with if= is expected (the
 * BEGIN did not apply), so not an error there. */
SEC("usdt")
int sp_spec_end(struct pt_regs *ctx)
{
	const volatile struct sp_spec_line *l;
	struct sp_thread_stack *st;
	struct sp_query_stats *row;
	struct sp_closed c = {};
	int r = SP_POP_UNMATCHED;
	struct spec_ev e;
	__u32 line;
	__u64 now;

	if (!spec_event_start(ctx, &e))
		return 0;
	now = bpf_ktime_get_ns();
	l = e.l;
	line = e.line;
	st = spec_stack((__u32)e.id, l->track, false);
	if (st)
		r = sp_stack_pop_tag(st, line + 1, now, &c);
	if (r == SP_POP_OVERFLOWED)
		return 0;
	if (r == SP_POP_UNMATCHED) {
		if (SP_SPEC_COOKIE_IF_OP(e.cookie) == SP_OP_NONE) {
			spec_error(line, SP_SPEC_ERR_END_WITHOUT_BEGIN);
			count_error(SP_ERR_END_WITHOUT_BEGIN, 1);
		}
		return 0;
	}
	if (c.discarded) {
		spec_error(line, SP_SPEC_ERR_END_MISMATCH);
		count_error(SP_ERR_END_MISMATCH, c.discarded);
	}
	emit(spec_event(c.kind, false), e.id, now, c.name, l->track + 1,
	     line + 1);
	row = add_closed(e.id >> 32, &c);
	/* Each count below is also a CACHE_HIT event, for the replay. */
	if (row && SP_SPEC_COOKIE_HIT_OP(e.cookie) &&
	    spec_cond(ctx, e.u, l, SP_SPEC_COOKIE_HIT_OP(e.cookie), true)) {
		row->cache_hits++;
		emit(SP_EV_CACHE_HIT, e.id, now, c.name, 0, 0);
	}
	if ((l->flags & SP_SPEC_F_OUTCOMES) && e.end &&
	    e.end < SP_SPEC_OUTCOME_OTHER) {
		row = query_row(e.id >> 32, SP_SPEC_NAME(line, e.end, 0));
		if (row) {
			row->cache_hits++;
			emit(SP_EV_CACHE_HIT, e.id, now,
			     SP_SPEC_NAME(line, e.end, 0), 0, 0);
		}
	}
	return 0;
}

/* A one-probe line: counts per row; with hit=, count is the number of
 * events (reads) and cache_hits those where the condition held. */
static __noinline int spec_cache_apply(struct pt_regs *ctx,
					    const struct spec_ev *e)
{
	const volatile struct sp_spec_line *l;
	struct sp_query_key key = {};
	struct sp_query_stats *row = NULL;
	struct sp_spec_name buf;
	bool hit;

	l = e->l;
	if (!spec_cond(ctx, e->u, l, SP_SPEC_COOKIE_IF_OP(e->cookie), false))
		return 0;
	key.tgid = e->id >> 32;
	key.name = spec_name(ctx, e->u, e->line, e->cookie, &buf);
	/* A row of this process has the value: admitted long ago. Once the
	 * line is full, most values are not, and admission says so with one
	 * lookup less (rows are per process: a miss here proves nothing). */
	if (!spec_line_full(e->line))
		row = bpf_map_lookup_elem(&queries, &key);
	if (!row) {
		key.name = spec_admit(e->line, l, e->cookie, key.name, &buf);
		row = query_row(key.tgid, key.name);
		if (!row)
			return 0;
	}
	hit = spec_cond(ctx, e->u, l, SP_SPEC_COOKIE_HIT_OP(e->cookie), true);
	if (hit && record)	/* no clock read when not recording */
		emit(SP_EV_CACHE_HIT, e->id, bpf_ktime_get_ns(), key.name, 0, 0);
	if (SP_SPEC_COOKIE_HIT_OP(e->cookie) != SP_OP_NONE)
		row->count++;
	if (hit)
		row->cache_hits++;
	return 0;
}

/* As sp_spec_begin: the drain and the name buffer in separate frames. */
SEC("usdt")
int sp_spec_cache(struct pt_regs *ctx)
{
	struct spec_ev e;

	if (!spec_event_start(ctx, &e))
		return 0;
	return spec_cache_apply(ctx, &e);
}

/* An exiting thread's spec stacks: open frames counted, stacks freed. */
static __always_inline void spec_thread_exit(__u32 tid)
{
	struct sp_spec_tkey key = { .tid = tid };
	struct sp_thread_stack *st;
	__u32 t;

	for (t = 0; t < SP_SPEC_MAX_LINES; t++) {
		if (t >= spec_ntracks)
			break;
		key.track = t;
		st = bpf_map_lookup_elem(&spec_stacks, &key);
		if (!st)
			continue;
		if (st->depth || st->overflow)
			count_error(SP_ERR_THREAD_EXIT_OPEN,
				    (__u64)st->depth + st->overflow);
		bpf_map_delete_elem(&spec_stacks, &key);
	}
}

/* Marks and typed allocations are recorded here; their aggregation
 * belongs to the latency and memory programs. */
SEC("uprobe")
int sp_mark(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 0);
	emit(SP_EV_MARK, id, bpf_ktime_get_ns(), sp_probe_arg(ctx, 0),
	     sp_probe_arg(ctx, 1), 0);
	return 0;
}

SEC("uprobe")
int sp_alloc(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 0);
	emit(SP_EV_ALLOC, id, bpf_ktime_get_ns(), sp_probe_arg(ctx, 0),
	     sp_probe_arg(ctx, 1), sp_probe_arg(ctx, 2));
	return 0;
}

SEC("uprobe")
int sp_free(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (!counting())
		return 0;
	drain_first(id, 0);
	emit(SP_EV_FREE, id, bpf_ktime_get_ns(), sp_probe_arg(ctx, 0), 0,
	     sp_probe_arg(ctx, 1));
	return 0;
}

/* ---- batched events ------------------------------------------------------
 * With batching on (sp_probe.h, BATCHED EVENTS), the query probes of a file
 * append records to a per-thread ring in the host and only sp:flush traps.
 * Each flush registers its ring under the thread, then drains every ring
 * the thread registered (one per instrumented object), merging them by the
 * host's timestamps, through the same begin_at()/end_at() as single events:
 * the maps and the arithmetic are those of the per-event path.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_DEFAULT_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct sp_batch_reg);
} batch_rings SEC(".maps");

/* A drain in progress: per ring the next record, the end, and the record
 * at the head (bpf_loop callbacks keep their state in a map). */
struct sp_drain_state {
	__u64 addr[SP_BATCH_MAX_RINGS];
	__u64 pos[SP_BATCH_MAX_RINGS];
	__u64 end[SP_BATCH_MAX_RINGS];
	struct sp_batch_rec head[SP_BATCH_MAX_RINGS];
	__u64 id;
	__u64 lost;
	__u32 n;	/* rings in use: the loops stop there */
	__u32 past;	/* a record past the disarm was reached (see
			 * sp_batch_reg.past) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_drain_state);
} drain_state SEC(".maps");

/* A copy of each ring's records, read with one bpf_probe_read_user per
 * ring and drain (a read per record cost more than the record's work).
 * Twice the ring: the verifier bounds offset and size separately. */
struct sp_ring_copy {
	struct sp_batch_rec rec[2 * SP_BATCH_CAP];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_BATCH_MAX_RINGS);
	__type(key, __u32);
	__type(value, struct sp_ring_copy);
} ring_copy SEC(".maps");

/* A new thread's registration, zeroed but for tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_batch_reg);
} reg_tmpl SEC(".maps");

/* Filled by sptrace at stop with what it read from the rings itself. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_batch_feed);
} batch_feed SEC(".maps");

/*
 * `sptrace record` of batched events: what one drain applies goes to the
 * ring buffer as one record (struct sp_rec_batch, record_abi.h) instead of
 * one per event, so the recorder's cost follows the flushes, not the
 * events. Staged per CPU during the drain and sent at its end (or when
 * SP_REC_BATCH_MAX items are staged); a batch the ring buffer cannot take
 * counts its items as lost events, as emit() counts one.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_rec_batch);
} rec_stage SEC(".maps");

static __always_inline void stage_send(struct sp_rec_batch *b)
{
	__u64 n = b->hdr.arg1, size;

	if (!n)
		return;
	if (n > SP_REC_BATCH_MAX)
		n = SP_REC_BATCH_MAX;
	size = sizeof(b->hdr) + n * sizeof(b->item[0]);
	if (size > sizeof(*b))
		size = sizeof(*b);
	if (bpf_ringbuf_output(&events, b, size,
			       bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) +
					       size >= wakeup_bytes ?
				       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP))
		/* The pauses in it were sptrace's own bookkeeping, not the
		 * user's events: `lost` counts those only. */
		count_error(SP_ERR_EVENTS_LOST,
			    n - (b->hdr.arg2 < n ? b->hdr.arg2 : n));
	b->hdr.arg1 = 0;
	b->hdr.arg2 = 0;
}

/* Sends what is staged (the end of a drain or feed). */
static __always_inline void stage_flush(void)
{
	struct sp_rec_batch *b;
	__u32 zero = 0;

	if (!record)
		return;
	b = bpf_map_lookup_elem(&rec_stage, &zero);
	if (b)
		stage_send(b);
}

/* One batched event of thread `id`, into the staged batch. */
static __always_inline void stage_event(__u64 id, __u64 now, __u64 name,
					__u32 ev, __u64 arg)
{
	struct sp_rec_batch *b;
	struct sp_rec_item *it;
	__u32 zero = 0;
	__u64 n;

	if (!record)
		return;
	b = bpf_map_lookup_elem(&rec_stage, &zero);
	if (!b)
		return;
	n = b->hdr.arg1;
	/* A batch is one thread's: another's left here (a drain preempted
	 * on this CPU) goes first. */
	if (n && (b->hdr.pid != id >> 32 || b->hdr.tid != (__u32)id)) {
		stage_send(b);
		n = 0;
	}
	if (n >= SP_REC_BATCH_MAX) {
		stage_send(b);
		n = 0;
	}
	b->hdr.ts_ns = 0;
	b->hdr.name = 0;
	/* arg2: the pause items staged, for the loss count of stage_send()
	 * (the recorder ignores it). */
	if (!n)
		b->hdr.arg2 = 0;
	if (ev == SP_EV_PAUSE)
		b->hdr.arg2++;
	b->hdr.pid = id >> 32;
	b->hdr.tid = (__u32)id;
	b->hdr.kind = SP_REC_BATCH;
	b->hdr.pad = 0;
	it = &b->item[n & (SP_REC_BATCH_MAX - 1)];
	it->ts_ns = now;
	it->name = name;
	it->arg1 = arg;
	it->kind = ev;
	it->pad = 0;
	b->hdr.arg1 = n + 1;
}

/* batch_event()'s answer for a record stamped after the disarm. */
#define SP_BATCH_PAST 0x7370

/*
 * One record of thread `id`, with its own timestamp. A global function: the
 * verifier checks it once, not once per path of the drain loops around it.
 * 0, or SP_BATCH_PAST (not counted: after the disarm).
 */
__noinline int batch_event(__u64 id, __u64 now, __u64 name, __u32 bkind,
			   __u64 arg)
{
	struct sp_thread_stack *st;
	__u32 kind, ev;

	if (bkind & SP_BK_TSC) {
		__u64 t = now;

		now = sp_tsc_ns(&tsc_clock, t);
		if (!now)
			return 0;	/* no calibration: not ours */
		/* A flush's time through the same map: its end tick's ns
		 * minus its start's, as the intervals it moves see them. */
		if (bkind == (SP_BK_PAUSE | SP_BK_TSC))
			arg = sp_tsc_ns(&tsc_clock, t + arg) - now;
		bkind &= ~SP_BK_TSC;
	}

	if (disarmed_ns && now >= disarmed_ns)
		return SP_BATCH_PAST;	/* after disarming */
	if (now < armed_ns)
		return 0;	/* before arming (a stale ring) */
	switch (bkind) {
	case SP_BK_QUERY_BEGIN:
		kind = SP_FRAME_QUERY; ev = SP_EV_QUERY_BEGIN; break;
	case SP_BK_QUERY_END:
		kind = SP_FRAME_QUERY; ev = SP_EV_QUERY_END; break;
	case SP_BK_BLOCKED_BEGIN:
		kind = SP_FRAME_BLOCKED; ev = SP_EV_BLOCKED_BEGIN; break;
	case SP_BK_BLOCKED_END:
		kind = SP_FRAME_BLOCKED; ev = SP_EV_BLOCKED_END; break;
	case SP_BK_INCR_LOAD_BEGIN:
		kind = SP_FRAME_INCR_LOAD; ev = SP_EV_INCR_LOAD_BEGIN; break;
	case SP_BK_INCR_LOAD_END:
		kind = SP_FRAME_INCR_LOAD; ev = SP_EV_INCR_LOAD_END; break;
	case SP_BK_CACHE_HIT:
		stage_event(id, now, name, SP_EV_CACHE_HIT, 0);
		cache_hit_at(id, now, name, 0);
		return 0;
	case SP_BK_PAUSE:
		st = thread_stack((__u32)id, id >> 32, false);
		/* Recorded only when it moved an interval: replay then does
		 * the same to the same stack. */
		if (st && sp_stack_shift(st, now, arg))
			stage_event(id, now, 0, SP_EV_PAUSE, arg);
		return 0;
	default:
		return 0;
	}
	/* Staged, not emitted (ev 0): the drain sends them as one record. */
	stage_event(id, now, name, ev, 0);
	if (bkind & 1)
		begin_at(id, now, name, kind, 0, 0);
	else
		end_at(id, now, name, kind, 0, 0);
	return 0;
}

/* SP_BATCH_PAST when r is stamped after the disarm, else 0. */
static __always_inline int batch_apply(__u64 id, const struct sp_batch_rec *r)
{
	return batch_event(id, r->ts, r->name, r->kind, r->arg);
}

/* Copies records [pos, end) of ring k to its slots of ring_copy (two
 * reads when they wrap). On a fault the ring is given up, counted. */
static __always_inline void ring_load(struct sp_drain_state *s, __u32 k)
{
	__u64 pos, cnt, first, n1, n2, addr;
	struct sp_ring_copy *c;
	__u32 key = k;

	k &= SP_BATCH_MAX_RINGS - 1;
	pos = s->pos[k];
	cnt = s->end[k] - pos;
	addr = s->addr[k];
	if (!cnt || cnt > SP_BATCH_CAP)
		return;
	c = bpf_map_lookup_elem(&ring_copy, &key);
	if (!c)
		return;
	first = pos & (SP_BATCH_CAP - 1);
	n1 = SP_BATCH_CAP - first;
	if (n1 > cnt)
		n1 = cnt;
	n2 = cnt - n1;
	n1 &= 2 * SP_BATCH_CAP - 1;
	n2 &= 2 * SP_BATCH_CAP - 1;
	if (bpf_probe_read_user(&c->rec[first], n1 * sizeof(struct sp_batch_rec),
				(const void *)(addr + SP_BATCH_REC_OFF +
					       first * sizeof(struct sp_batch_rec))) ||
	    (n2 && bpf_probe_read_user(&c->rec[0], n2 * sizeof(struct sp_batch_rec),
				       (const void *)(addr + SP_BATCH_REC_OFF)))) {
		s->lost += cnt;
		s->end[k & (SP_BATCH_MAX_RINGS - 1)] = pos;
	}
}

/* Loads the head record of ring k from its copy; ends the ring at an
 * uncommitted one (an append a signal interrupted: drained next time). */
static __always_inline void ring_head(struct sp_drain_state *s, __u32 k)
{
	struct sp_ring_copy *c;
	__u32 key = k;
	__u64 pos;

	k &= SP_BATCH_MAX_RINGS - 1;
	pos = s->pos[k];
	if (pos >= s->end[k])
		return;
	c = bpf_map_lookup_elem(&ring_copy, &key);
	k &= SP_BATCH_MAX_RINGS - 1;
	if (!c) {
		s->end[k] = pos;
		return;
	}
	s->head[k] = c->rec[pos & (SP_BATCH_CAP - 1)];
	if (s->head[k].commit != (__u32)(pos + 1))
		s->end[k] = pos;
}

static long drain_step(__u32 i, void *ctx)
{
	__u32 zero = 0, k, best = SP_BATCH_MAX_RINGS;
	struct sp_drain_state *s;
	__u64 ts = ~0ull;

	(void)i;
	(void)ctx;
	s = bpf_map_lookup_elem(&drain_state, &zero);
	if (!s)
		return 1;
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++) {
		if (k >= s->n)
			break;
		if (s->pos[k] < s->end[k] && s->head[k].ts < ts) {
			ts = s->head[k].ts;
			best = k;
		}
	}
	if (best >= SP_BATCH_MAX_RINGS)
		return 1;
	if (batch_apply(s->id, &s->head[best]) == SP_BATCH_PAST)
		s->past = 1;
	s->pos[best]++;
	ring_head(s, best);
	return 0;
}

/* Ring k of a drain: its records from the registration's consumed count
 * (in pos[k] on entry) to its head, copied. A bpf_loop callback, so the
 * verifier checks it once, not once per ring of SP_BATCH_MAX_RINGS in
 * each program that drains (with 32 rings, 20 s of load instead of 8). */
static long ring_init_step(__u32 k, void *ctx)
{
	struct { __u64 magic, seq; } h;
	struct sp_drain_state *s;
	__u32 zero = 0;
	__u64 c, addr;

	(void)ctx;
	s = bpf_map_lookup_elem(&drain_state, &zero);
	if (!s || k >= s->n)
		return 1;
	k &= SP_BATCH_MAX_RINGS - 1;
	addr = s->addr[k];
	c = s->pos[k];
	if (!addr) {
		s->end[k] = c;	/* a free slot: nothing, consumed kept */
		return 0;
	}
	s->pos[k] = s->end[k] = 0;
	if (bpf_probe_read_user(&h, sizeof(h), (const void *)addr) ||
	    h.magic != SP_BATCH_MAGIC)
		return 0;	/* wiped by a fork, or not yet started */
	if (h.seq < c)
		c = 0;		/* restarted by a new thread */
	if (h.seq - c > SP_BATCH_CAP) {
		/* A ring seen before: overwritten, unless the drains already
		 * reached past the disarm (everything after is later). */
		if (c && !s->past)
			s->lost += h.seq - SP_BATCH_CAP - c;
		c = h.seq - SP_BATCH_CAP;
	}
	s->pos[k] = c;
	s->end[k] = h.seq;
	ring_load(s, k);
	ring_head(s, k);
	return 0;
}

/* Every registered ring of thread `id`, oldest record first. */
static __always_inline void batch_drain(struct sp_batch_reg *reg, __u64 id)
{
	struct sp_drain_state *s;
	__u32 zero = 0, dummy = 0;

	s = bpf_map_lookup_elem(&drain_state, &zero);
	if (!s)
		return;
	/* sptrace may be feeding this thread's records from its own read of
	 * the rings (sp_batch_feed): they stay for the next flush. */
	if (__sync_val_compare_and_swap(&reg->busy, 0, 1))
		return;
	s->id = id;
	s->lost = 0;
	s->n = reg->n;
	s->past = reg->past;
	__builtin_memcpy(s->addr, reg->addr, sizeof(s->addr));
	__builtin_memcpy(s->pos, reg->consumed, sizeof(s->pos));
	bpf_loop(SP_BATCH_MAX_RINGS, ring_init_step, &dummy, 0);
	bpf_loop(SP_BATCH_MAX_RINGS * SP_BATCH_CAP, drain_step, &dummy, 0);
	__builtin_memcpy(reg->consumed, s->pos, sizeof(reg->consumed));
	reg->past = s->past;
	__sync_fetch_and_and(&reg->busy, 0);	/* release */
	stage_flush();
	if (s->lost)
		count_error(SP_ERR_BATCH_LOST, s->lost);
}

/* Do the thread's rings hold records no drain took yet? One read of each
 * ring's seq: a per-event event of a thread whose rings hold nothing new
 * (a --func return right after its entry drained them) skips the drain's
 * copies and loops. A ring restarted at the same count is drained by the
 * flush its first record makes. */
static __always_inline bool batch_new(const struct sp_batch_reg *reg)
{
	__u64 seq, addr;
	__u32 k;

	for (k = 0; k < SP_BATCH_MAX_RINGS; k++) {
		if (k >= reg->n)
			break;
		addr = reg->addr[k];
		if (!addr)
			continue;	/* a free slot */
		if (bpf_probe_read_user(&seq, sizeof(seq),
					(const void *)(addr +
						       __builtin_offsetof(struct sp_batch_hdr, seq))) ||
		    seq != reg->consumed[k])
			return true;
	}
	return false;
}

__noinline int drain_before_event(__u64 id, __u32 site)
{
	__u32 tid = (__u32)id;
	struct sp_batch_reg *reg;

	reg = bpf_map_lookup_elem(&batch_rings, &tid);
	if (!reg || reg->tgid != id >> 32)
		return 0;
	/* A query event right after the header's slow path found no ring:
	 * the probe fell back to its per-event site (see sp_tsc). */
	if (site && reg->slow) {
		reg->slow--;
		count_error(SP_CNT_BATCH_FALLBACK, 1);
	}
	if (batch_new(reg))
		batch_drain(reg, id);
	return 0;
}

/* The registration of thread tid (tgid), made if it has none. */
static __always_inline struct sp_batch_reg *batch_reg_get(__u32 tid,
							  __u32 tgid)
{
	struct sp_batch_reg *reg, *init;
	__u32 zero = 0;

	reg = bpf_map_lookup_elem(&batch_rings, &tid);
	if (reg && reg->tgid == tgid)
		return reg;
	/* Too big for the BPF stack: a zeroed per-CPU template. */
	init = bpf_map_lookup_elem(&reg_tmpl, &zero);
	if (!init)
		return NULL;
	init->tgid = tgid;
	if (bpf_map_update_elem(&batch_rings, &tid, init, BPF_ANY)) {
		count_error(SP_ERR_THREADS_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&batch_rings, &tid);
}

/* The registration of thread tid (tgid), with ring `addr` in it. */
static __always_inline struct sp_batch_reg *batch_register(__u32 tid,
							   __u32 tgid,
							   __u64 addr)
{
	struct sp_batch_reg *reg;
	__u32 k, n;

	reg = batch_reg_get(tid, tgid);
	if (!reg)
		return NULL;
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++)
		if (k < reg->n && reg->addr[k] == addr)
			return reg;
	/* A slot a ring unmapped at its thread's exit left free first. */
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++)
		if (k < reg->n && !reg->addr[k]) {
			reg->consumed[k] = 0;
			reg->addr[k] = addr;
			return reg;
		}
	n = reg->n;
	if (n >= SP_BATCH_MAX_RINGS) {
		/* More instrumented objects on one thread than rings kept:
		 * this ring's records cannot be drained. */
		count_error(SP_ERR_BATCH_LOST, 1);
		return reg;
	}
	reg->addr[n & (SP_BATCH_MAX_RINGS - 1)] = addr;
	reg->consumed[n & (SP_BATCH_MAX_RINGS - 1)] = 0;
	reg->n = n + 1;
	return reg;
}

/*
 * sp:tsc sits at the top of the header's slow path, sp__batch_get(), which
 * a probe enters when its thread has no usable ring: the thread's first
 * record, a child's first after fork, and every probe of a thread whose
 * ring is gone (unmapped at its exit, in a later key destructor or a
 * signal handler) or could not be mapped. It returns either a ring, and
 * the append then flushes (the first record of a restarted ring), or
 * nothing, and the probe fires its per-event site. So on one thread a
 * hit here is followed by a flush, or by a query event that fell back:
 * `slow` counts the hits no flush followed yet, and the next per-event
 * query event of the thread that finds it non-zero is a fallback. The
 * header is unchanged: the site exists for its semaphore (TSC
 * timestamps), and without TSC sptrace attaches it with no semaphore.
 */
SEC("uprobe")
int sp_tsc(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_batch_reg *reg;

	(void)ctx;
	if (!counting())
		return 0;
	reg = batch_reg_get((__u32)id, id >> 32);
	if (reg)
		reg->slow++;
	return 0;
}

/*
 * sp:flush(ring): the only trap of batched mode. A ring whose owner is 0
 * (with its magic) is being unmapped by its exiting thread: drained one
 * last time, then its slot is freed, so no later drain of the thread reads
 * whatever gets mapped at that address next.
 */
SEC("uprobe")
int sp_flush(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), addr = sp_probe_arg(ctx, 0);
	struct { __u64 magic, seq, flushed, owner; } h;
	struct sp_batch_reg *reg;
	__u32 k;

	if (!traced())
		return 0;
	reg = batch_register((__u32)id, id >> 32, addr);
	if (reg)
		reg->slow = 0;	/* the slow path found a ring (see sp_tsc) */
	if (reg && rings_count())
		batch_drain(reg, id);
	if (!reg || bpf_probe_read_user(&h, sizeof(h), (const void *)addr) ||
	    h.magic != SP_BATCH_MAGIC || h.owner)
		return 0;
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++)
		if (k < reg->n && reg->addr[k] == addr)
			reg->addr[k] = 0;
	return 0;
}

static long feed_step(__u32 i, void *ctx)
{
	struct sp_batch_feed *f;
	__u32 zero = 0;

	(void)ctx;
	f = bpf_map_lookup_elem(&batch_feed, &zero);
	if (!f || i >= f->n)
		return 1;
	/* The mask must survive the compiler for the verifier's sake. */
	__asm__ __volatile__("" : "+r"(i));
	i &= SP_BATCH_FEED - 1;
	batch_apply(((__u64)f->tgid << 32) | f->tid, &f->rec[i]);
	return 0;
}

/*
 * Run by sptrace (BPF_PROG_TEST_RUN) on records it read from a thread's
 * rings itself, merged by time: at each report (a thread blocked with a
 * partial ring would never flush) and at stop. Returns 0 once they are
 * counted, 1 if refused: the thread's registration is gone, a flush holds
 * it, or drained more than sptrace saw (the records are then the flush's).
 */
SEC("syscall")
int sp_batch_feed(void *ctx)
{
	struct sp_batch_feed *f;
	struct sp_batch_reg *reg;
	__u32 zero = 0, dummy = 0, k, tid;

	(void)ctx;
	f = bpf_map_lookup_elem(&batch_feed, &zero);
	if (!f)
		return 1;
	tid = f->tid;
	reg = bpf_map_lookup_elem(&batch_rings, &tid);
	if (!reg || reg->tgid != f->tgid)
		return 1;
	if (__sync_val_compare_and_swap(&reg->busy, 0, 1))
		return 1;
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++) {
		if (k >= f->nrings || k >= reg->n)
			break;
		if (reg->consumed[k] != f->start[k] ||
		    reg->addr[k] != f->addr[k]) {
			__sync_fetch_and_and(&reg->busy, 0);	/* release */
			return 1;
		}
	}
	bpf_loop(SP_BATCH_FEED, feed_step, &dummy, 0);
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++) {
		if (k >= f->nrings || k >= reg->n)
			break;
		reg->consumed[k] = f->stop[k];
	}
	__sync_fetch_and_and(&reg->busy, 0);	/* release */
	stage_flush();
	return 0;
}

/*
 * exec() replaces the memory the rings live in without the thread exiting:
 * drain them when it enters execve/execveat, while its old memory is still
 * mapped (a kprobe or fentry on the exec path needs tracefs or is refused
 * on some kernels; a raw syscall tracepoint needs neither). It runs for
 * every system call on the system, so the first test is the syscall number.
 * If the exec fails the thread just flushes again later; if it succeeds the
 * registration is stale, so it goes.
 */
#define SP_NR_EXECVE 59		/* x86-64 */
#define SP_NR_EXECVEAT 322

SEC("raw_tracepoint/sys_enter")
int sp_exec_drain(struct bpf_raw_tracepoint_args *ctx)
{
	long nr = (long)ctx->args[1];
	__u64 id;
	__u32 tid;
	struct sp_batch_reg *reg;

	if (nr != SP_NR_EXECVE && nr != SP_NR_EXECVEAT)
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	reg = bpf_map_lookup_elem(&batch_rings, &tid);
	if (!reg)
		return 0;
	if (rings_count() && reg->tgid == id >> 32)
		batch_drain(reg, id);
	bpf_map_delete_elem(&batch_rings, &tid);
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
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct sp_thread_stack *st;
	struct sp_batch_reg *reg;

	(void)ctx;
	if (spec_ntracks)
		spec_thread_exit(tid);
	/* Its rings first: this tracepoint runs before the exiting thread
	 * lets go of its memory, so they are still readable. */
	reg = bpf_map_lookup_elem(&batch_rings, &tid);
	if (reg) {
		if (rings_count() && reg->tgid == id >> 32) {
			if (reg->busy)	/* sptrace is feeding it: rare race */
				count_error(SP_ERR_BATCH_LOST, 1);
			batch_drain(reg, id);
		}
		bpf_map_delete_elem(&batch_rings, &tid);
	}
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
