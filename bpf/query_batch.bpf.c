// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Batched sp events: the rings the host fills (probes/sp_probe.h, BATCHED
 * EVENTS), drained into the aggregation of query_core.bpf.h. Part of the
 * query object (see query.bpf.c), loaded unless the session is per-event
 * only (SPTRACE_PER_EVENT, record --events without every batched class).
 *
 * With batching on, the query probes of a file append records to a
 * per-thread ring in the host and only sp:flush traps. Each flush registers
 * its ring under the thread, then drains every ring the thread registered
 * (one per instrumented object), merging them by the host's timestamps,
 * through the same begin_at()/end_at() as single events: the maps and the
 * arithmetic are those of the per-event path.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/query_abi.h>
#include <sptrace/batch_abi.h>
#include <sptrace/record_abi.h>
#include <sptrace/tsc_map.h>
#include "sp_regs.bpf.h"
#include "query_core.bpf.h"

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
	/* The ring with the oldest head, while drain_step() looks for it:
	 * in the map, where the verifier does not follow its value, so the
	 * search's paths meet again at every ring instead of forking one
	 * state per ring that held the minimum so far (12,000 instructions
	 * verified per program that drains). */
	__u32 best;
	__u32 pad;
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

/* One record appended by the host, and the time of its flush if it is a
 * PAUSE: into this CPU's drain_hits, moved to the process by
 * drain_hits_take() at the drain's end (a lookup per drain, not per
 * record). */
static __always_inline void drain_hit(__u64 pause_ns)
{
	__u32 zero = 0;
	struct sp_probe_hits *d = bpf_map_lookup_elem(&drain_hits, &zero);

	if (!d)
		return;
	d->n[SP_HIT_RECORD]++;
	d->n[SP_HIT_PAUSE_NS] += pause_ns;
}

static __always_inline void drain_hits_take(__u32 tgid)
{
	__u32 zero = 0;
	struct sp_probe_hits *d = bpf_map_lookup_elem(&drain_hits, &zero);

	if (!d || !d->n[SP_HIT_RECORD])
		return;
	count_hits(tgid, SP_HIT_RECORD, d->n[SP_HIT_RECORD]);
	if (d->n[SP_HIT_PAUSE_NS])
		count_hits(tgid, SP_HIT_PAUSE_NS, d->n[SP_HIT_PAUSE_NS]);
	d->n[SP_HIT_RECORD] = 0;
	d->n[SP_HIT_PAUSE_NS] = 0;
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
	bool keyed = bkind & SP_BK_KEY, text = bkind & SP_BK_KEY_TEXT;
	__u64 row;
	__u32 kind, ev;

	bkind &= ~(SP_BK_KEY | SP_BK_KEY_TEXT);
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
	drain_hit(bkind == SP_BK_PAUSE ? arg : 0);
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
		cache_hit_at(id, now, keyed_name(id, name, arg, keyed, text, true),
			     0);
		return 0;
	case SP_BK_PAUSE:
		st = thread_stack((__u32)id, id >> 32, false);
		/* Recorded only when it moved an interval: replay then does
		 * the same to the same stack. */
		if (st && stack_shift(st, now, arg))
			stage_event(id, now, 0, SP_EV_PAUSE, arg);
		return 0;
	default:
		return 0;
	}
	/* Staged, not emitted (ev 0): the drain sends them as one record. */
	stage_event(id, now, name, ev, 0);
	/* Recorded under its name; counted under its key's row. */
	row = keyed_name(id, name, arg, keyed, text, bkind & 1);
	if (bkind & 1)
		begin_at(id, now, row, kind, 0, 0);
	else
		end_at(id, now, row, kind, 0, 0);
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
	__u32 zero = 0, k, best;
	struct sp_drain_state *s;
	__u64 ts = ~0ull;

	(void)i;
	(void)ctx;
	s = bpf_map_lookup_elem(&drain_state, &zero);
	if (!s)
		return 1;
	if (s->n == 1) {
		/* A thread that runs the probes of one object: no merge. */
		if (s->pos[0] >= s->end[0])
			return 1;
		best = 0;
	} else {
		s->best = SP_BATCH_MAX_RINGS;
		for (k = 0; k < SP_BATCH_MAX_RINGS; k++) {
			if (k >= s->n)
				break;
			if (s->pos[k] < s->end[k] && s->head[k].ts < ts) {
				ts = s->head[k].ts;
				s->best = k;
			}
		}
		/* From the map, not from a register the compiler kept. */
		best = *(volatile __u32 *)&s->best;
		if (best >= SP_BATCH_MAX_RINGS)
			return 1;
	}
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
	drain_hits_take(id >> 32);
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

/*
 * A ring its thread's registration had no room for (more instrumented
 * objects on one thread than SP_BATCH_MAX_RINGS): its records are never
 * drained, so each flush counts those since its last as lost, one each
 * (not the pause record a flush leaves after it: sptrace's own). The count
 * so far is kept per ring; LRU, sized past any such set of rings.
 */
struct sp_unkept_key {
	__u64 addr;	/* a ring's address is its own among the live
			 * threads of its process */
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct sp_unkept_key);
	__type(value, __u64);
} batch_unkept SEC(".maps");

static __noinline void batch_count_unkept(__u32 tgid, __u64 addr, __u64 seq)
{
	struct sp_unkept_key key = { .addr = addr, .tgid = tgid };
	__u64 *last, from = 0, n;

	last = bpf_map_lookup_elem(&batch_unkept, &key);
	if (last && *last <= seq)
		from = *last;	/* else restarted by a new thread */
	n = seq - from;
	if (from && n)
		n--;		/* the pause after the last flush */
	if (n && rings_count())
		count_error(SP_ERR_BATCH_LOST, n);
	bpf_map_update_elem(&batch_unkept, &key, &seq, BPF_ANY);
}

/* A ring given a slot at last: its records counted lost so far are not
 * drained again. */
static __always_inline __u64 batch_unkept_take(__u32 tgid, __u64 addr)
{
	struct sp_unkept_key key = { .addr = addr, .tgid = tgid };
	__u64 *last, from = 0;

	last = bpf_map_lookup_elem(&batch_unkept, &key);
	if (!last)
		return 0;
	from = *last;
	bpf_map_delete_elem(&batch_unkept, &key);
	return from;
}

/* The registration of thread tid (tgid), with ring `addr` in it; *kept
 * false if it has no room for it (batch_count_unkept()). */
static __always_inline struct sp_batch_reg *batch_register(__u32 tid,
							   __u32 tgid,
							   __u64 addr,
							   bool *kept)
{
	struct sp_batch_reg *reg;
	__u32 k, n;

	*kept = true;
	reg = batch_reg_get(tid, tgid);
	if (!reg)
		return NULL;
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++)
		if (k < reg->n && reg->addr[k] == addr)
			return reg;
	/* A slot a ring unmapped at its thread's exit left free first. */
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++)
		if (k < reg->n && !reg->addr[k]) {
			reg->consumed[k] = batch_unkept_take(tgid, addr);
			reg->addr[k] = addr;
			return reg;
		}
	n = reg->n;
	if (n >= SP_BATCH_MAX_RINGS) {
		/* More instrumented objects on one thread than rings kept:
		 * this ring's records cannot be drained. */
		*kept = false;
		return reg;
	}
	reg->addr[n & (SP_BATCH_MAX_RINGS - 1)] = addr;
	reg->consumed[n & (SP_BATCH_MAX_RINGS - 1)] = 0;	/* new: none */
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

/* batch_release_foreign()'s search: the thread of process tgid whose
 * registration holds ring addr. */
struct sp_ring_owner {
	__u64 addr;
	__u32 tgid;
	__u32 tid;	/* found; 0: none */
};

static long ring_owner_step(void *map, __u32 *tid, struct sp_batch_reg *reg,
			    struct sp_ring_owner *o)
{
	__u32 k;

	(void)map;
	if (reg->tgid != o->tgid)
		return 0;
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++) {
		if (k >= reg->n)
			break;
		if (reg->addr[k] == o->addr) {
			o->tid = *tid;
			return 1;
		}
	}
	return 0;
}

/*
 * The last flush of a ring at addr that the current thread did not
 * register, owner cleared: either its thread has no slot for it
 * (batch_count_unkept()), or another thread of the process is unloading
 * the ring's object (sp_probe.h's sp__batch_unload()) and unmaps it after
 * this. The ring is found among the process's registrations (rings carry
 * no thread id: the host's is its PID namespace's, not the kernel's),
 * drained as its thread's (merged with its other rings, as that thread's
 * own flush would), then forgotten. Records a drain could not take (the
 * thread's own flush holds its registration) are counted lost, each one.
 */
static __noinline void batch_release_foreign(__u32 tgid, __u64 addr, __u64 seq)
{
	struct sp_ring_owner o = { .addr = addr, .tgid = tgid };
	struct sp_batch_reg *reg;
	__u32 k;

	bpf_for_each_map_elem(&batch_rings, ring_owner_step, &o, 0);
	reg = o.tid ? bpf_map_lookup_elem(&batch_rings, &o.tid) : NULL;
	if (!reg || reg->tgid != tgid) {
		batch_count_unkept(tgid, addr, seq);	/* had no slot */
		return;
	}
	if (rings_count())
		batch_drain(reg, ((__u64)tgid << 32) | o.tid);
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++) {
		if (k >= reg->n)
			break;
		if (reg->addr[k] != addr)
			continue;
		if (rings_count() && seq > reg->consumed[k] &&
		    seq - reg->consumed[k] <= SP_BATCH_CAP)
			count_error(SP_ERR_BATCH_LOST, seq - reg->consumed[k]);
		reg->addr[k] = 0;
	}
}

/* Is ring addr one of the current thread's registered rings? */
static __always_inline bool batch_own_ring(__u32 tid, __u32 tgid, __u64 addr)
{
	struct sp_batch_reg *reg = bpf_map_lookup_elem(&batch_rings, &tid);
	__u32 k;

	if (!reg || reg->tgid != tgid)
		return false;
	for (k = 0; k < SP_BATCH_MAX_RINGS; k++)
		if (k < reg->n && reg->addr[k] == addr)
			return true;
	return false;
}

/*
 * sp:flush(ring): the only trap of batched mode. A ring whose owner is 0
 * (with its magic) is being unmapped by its exiting thread: drained one
 * last time, then its slot is freed, so no later drain of the thread reads
 * whatever gets mapped at that address next. Such a ring the thread never
 * registered is another thread's, unmapped by an unload, or one it had
 * no room for (batch_release_foreign()).
 */
SEC("uprobe")
int sp_flush(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), addr = sp_probe_arg(ctx, 0);
	struct { __u64 magic, seq, flushed, owner; } h;
	struct sp_batch_reg *reg;
	bool kept, ring;
	__u32 k;

	if (!traced())
		return 0;
	if (armed)
		count_hits(id >> 32, SP_HIT_FLUSH, 1);
	ring = !bpf_probe_read_user(&h, sizeof(h), (const void *)addr) &&
	       h.magic == SP_BATCH_MAGIC;
	if (ring && !h.owner && !batch_own_ring((__u32)id, id >> 32, addr)) {
		batch_release_foreign(id >> 32, addr, h.seq);
		return 0;
	}
	reg = batch_register((__u32)id, id >> 32, addr, &kept);
	if (reg && !kept && ring)
		batch_count_unkept(id >> 32, addr, h.seq);
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
	drain_hits_take(f->tgid);
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


/* An exiting thread's rings (called by sp_thread_exit, query.bpf.c): the
 * exit tracepoint runs before the thread lets go of its memory, so they
 * are still readable; drained one last time, then forgotten. */
__noinline int batch_thread_exit(__u64 id)
{
	__u32 tid = (__u32)id;
	struct sp_batch_reg *reg;

	reg = bpf_map_lookup_elem(&batch_rings, &tid);
	if (!reg)
		return 0;
	if (rings_count() && reg->tgid == id >> 32) {
		if (reg->busy)	/* sptrace is feeding it: rare race */
			count_error(SP_ERR_BATCH_LOST, 1);
		batch_drain(reg, id);
	}
	bpf_map_delete_elem(&batch_rings, &tid);
	return 0;
}
