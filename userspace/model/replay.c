// SPDX-License-Identifier: MIT
/*
 * Replay of recorded events. Each thread gets the same struct
 * sp_thread_stack the BPF program keeps in its `threads` map (and one per
 * --query track, as its `spec_stacks` map), and BEGIN/END go through the
 * same sp_stack_push()/sp_stack_pop()/sp_stack_pop_tag(), so the intervals
 * and the error counts match live aggregation exactly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sptrace/qstack.h>
#include "replay.h"

/* Track 0: the `threads` map's stack; 1 + t: --query track t. */
#define REPLAY_TRACKS (1 + SP_SPEC_MAX_LINES)

struct replay_thread {
	uint32_t pid, tid;
	bool used;
	struct sp_thread_stack *st[REPLAY_TRACKS];	/* made on first use */
};

void replay__init(struct replay *r, replay_fn fn, void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->fn = fn;
	r->ctx = ctx;
}

static uint32_t thread_hash(uint32_t pid, uint32_t tid)
{
	return (pid * 2654435761u) ^ (tid * 40503u);
}

static int grow(struct replay *r)
{
	uint32_t cap = r->cap ? r->cap * 2 : 64, i;
	struct replay_thread *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < r->cap; i++) {
		struct replay_thread *t = &r->threads[i];
		uint32_t j;

		if (!t->used)
			continue;
		for (j = thread_hash(t->pid, t->tid) & (cap - 1); v[j].used;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = *t;
	}
	free(r->threads);
	r->threads = v;
	r->cap = cap;
	r->last = NULL;		/* it pointed into the old table */
	return 0;
}

static struct replay_thread *find_thread(struct replay *r, uint32_t pid,
					 uint32_t tid, bool create)
{
	struct replay_thread *t;
	uint32_t j;

	if (r->last && r->last->pid == pid && r->last->tid == tid)
		return r->last;
	if (r->cap) {
		for (j = thread_hash(pid, tid) & (r->cap - 1);
		     r->threads[j].used; j = (j + 1) & (r->cap - 1)) {
			t = &r->threads[j];
			if (t->pid == pid && t->tid == tid)
				return r->last = t;
		}
	}
	if (!create)
		return NULL;
	if ((r->nthreads + 1) * 2 > r->cap && grow(r))
		return NULL;
	for (j = thread_hash(pid, tid) & (r->cap - 1); r->threads[j].used;
	     j = (j + 1) & (r->cap - 1))
		;
	t = &r->threads[j];
	t->used = true;
	t->pid = pid;
	t->tid = tid;
	r->nthreads++;
	return r->last = t;
}

/* The thread's stack of this track (the event's arg1, already checked). */
static struct sp_thread_stack *thread_stack(struct replay *r, uint32_t pid,
					    uint32_t tid, uint32_t track,
					    bool create)
{
	struct replay_thread *t = find_thread(r, pid, tid, create);

	if (!t)
		return NULL;
	if (!t->st[track] && create) {
		t->st[track] = calloc(1, sizeof(*t->st[track]));
		if (t->st[track])
			t->st[track]->tgid = pid;
	}
	return t->st[track];
}

static int frame_kind(uint16_t ev, bool *begin)
{
	switch (ev) {
	case SP_EV_QUERY_BEGIN: *begin = true; return SP_FRAME_QUERY;
	case SP_EV_QUERY_END: *begin = false; return SP_FRAME_QUERY;
	case SP_EV_BLOCKED_BEGIN: *begin = true; return SP_FRAME_BLOCKED;
	case SP_EV_BLOCKED_END: *begin = false; return SP_FRAME_BLOCKED;
	case SP_EV_INCR_LOAD_BEGIN: *begin = true; return SP_FRAME_INCR_LOAD;
	case SP_EV_INCR_LOAD_END: *begin = false; return SP_FRAME_INCR_LOAD;
	default: return -1;
	}
}

/* The names of the frames below the one just closed, for stack exports. */
static void fill_stack(struct replay_interval *iv, const struct sp_thread_stack *st,
		       uint32_t *buf)
{
	uint32_t i;

	for (i = 0; i < st->depth && i < SP_MAX_DEPTH; i++)
		buf[i] = (uint32_t)st->frames[i].name;
	iv->stack = buf;
	iv->depth = i;
}

int replay__event(struct replay *r, const struct trace_event *ev)
{
	uint32_t stack_buf[SP_MAX_DEPTH], track = 0, tag = 0, i;
	struct replay_interval iv;
	struct sp_thread_stack *st;
	struct replay_thread *t;
	struct sp_closed c;
	bool begin, serial, abandon;
	uint64_t flags;
	int kind, res;

	memset(&iv, 0, sizeof(iv));
	iv.pid = ev->pid;
	iv.tid = ev->tid;
	iv.name_id = ev->name_id;
	if (ev->kind == SP_EV_CACHE_HIT) {
		iv.cache_hit = true;
		iv.start_ns = iv.end_ns = ev->ts_ns;
		st = thread_stack(r, ev->pid, ev->tid, 0, false);
		if (st)
			fill_stack(&iv, st, stack_buf);
		return r->fn(r->ctx, &iv);
	}
	if (ev->kind == SP_EV_THREAD_EXIT) {
		/* As live: count what it left open; a reused tid starts clean. */
		t = find_thread(r, ev->pid, ev->tid, false);
		for (i = 0; t && i < REPLAY_TRACKS; i++) {
			st = t->st[i];
			if (!st)
				continue;
			r->errors[SP_ERR_THREAD_EXIT_OPEN] += st->depth + st->overflow;
			st->depth = st->overflow = 0;
		}
		return 0;
	}
	if (ev->kind == SP_EV_PAUSE) {
		/* A batched flush's own time (format 1.2): moved out of the
		 * intervals it opened, as the BPF program did live. */
		st = thread_stack(r, ev->pid, ev->tid, 0, false);
		if (st)
			sp_stack_shift(st, ev->ts_ns, ev->arg1);
		return 0;
	}
	kind = frame_kind(ev->kind, &begin);
	if (kind < 0)
		return 0;	/* marks, allocations: not intervals */
	/* --query events: arg1 = track + 1, arg2 = spec line + 1 (the tag
	 * BPF gives the frame), with SP_SPEC_EV_SERIAL on a serial line's
	 * BEGIN. Files from before carry 0: one stack. */
	serial = begin && (ev->arg2 & SP_SPEC_EV_SERIAL);
	abandon = !begin && (ev->arg2 & SP_SPEC_EV_ABANDON);
	flags = SP_SPEC_EV_SERIAL | SP_SPEC_EV_ABANDON;
	if (ev->arg1 && ev->arg1 < REPLAY_TRACKS && (ev->arg2 & ~flags) &&
	    (ev->arg2 & ~flags) <= SP_SPEC_MAX_LINES) {
		track = (uint32_t)ev->arg1;
		tag = (uint32_t)(ev->arg2 & ~flags);
	}
	st = thread_stack(r, ev->pid, ev->tid, track, begin);
	if (abandon) {	/* an abandon= probe: the line's frames are dead */
		if (st && tag)
			r->errors[SP_ERR_ABANDONED] +=
				sp_stack_abandon_all(st, tag);
		return 0;
	}
	if (begin) {
		if (!st)
			return -ENOMEM;
		if (serial && tag)
			r->errors[SP_ERR_ABANDONED] +=
				sp_stack_abandon_tag(st, tag);
		/* Frames hold the string id where BPF holds the pointer. */
		if (sp_stack_push(st, ev->name_id, (uint32_t)kind, ev->ts_ns))
			r->errors[SP_ERR_STACK_OVERFLOW]++;
		else if (tag)
			st->frames[st->depth - 1].tag = tag;
		return 0;
	}
	if (!st) {
		r->errors[SP_ERR_END_WITHOUT_BEGIN]++;
		return 0;
	}
	res = tag ? sp_stack_pop_tag(st, tag, ev->ts_ns, &c)
		  : sp_stack_pop(st, ev->name_id, (uint32_t)kind, ev->ts_ns, &c);
	if (res == SP_POP_OVERFLOWED)
		return 0;
	if (res == SP_POP_UNMATCHED) {
		r->errors[SP_ERR_END_WITHOUT_BEGIN]++;
		return 0;
	}
	r->errors[SP_ERR_END_MISMATCH] += c.discarded;
	iv.kind = c.kind;
	iv.end_ns = ev->ts_ns;
	iv.start_ns = ev->ts_ns - c.total_ns;
	iv.total_ns = c.total_ns;
	iv.self_ns = c.self_ns;
	fill_stack(&iv, st, stack_buf);
	return r->fn(r->ctx, &iv);
}

void replay__finish(struct replay *r)
{
	uint32_t i;

	uint32_t j;

	for (i = 0; i < r->cap; i++)
		for (j = 0; r->threads[i].used && j < REPLAY_TRACKS; j++)
			if (r->threads[i].st[j])
				r->open_at_end += r->threads[i].st[j]->depth +
						  r->threads[i].st[j]->overflow;
}

void replay__free(struct replay *r)
{
	uint32_t i;

	uint32_t j;

	for (i = 0; i < r->cap; i++)
		for (j = 0; j < REPLAY_TRACKS; j++)
			free(r->threads[i].st[j]);
	free(r->threads);
	memset(r, 0, sizeof(*r));
}
