// SPDX-License-Identifier: MIT
/*
 * Replay of recorded events. Each thread gets the same struct
 * sp_thread_stack the BPF program keeps in its `threads` map, and BEGIN/END
 * go through the same sp_stack_push()/sp_stack_pop(), so the intervals and
 * the error counts match live aggregation exactly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sptrace/qstack.h>
#include "replay.h"

struct replay_thread {
	uint32_t pid, tid;
	bool used;
	struct sp_thread_stack *st;
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
	return 0;
}

static struct sp_thread_stack *thread_stack(struct replay *r, uint32_t pid,
					    uint32_t tid, bool create)
{
	struct replay_thread *t;
	uint32_t j;

	if (r->last && r->last_pid == pid && r->last_tid == tid)
		return r->last;
	if (r->cap) {
		for (j = thread_hash(pid, tid) & (r->cap - 1);
		     r->threads[j].used; j = (j + 1) & (r->cap - 1)) {
			t = &r->threads[j];
			if (t->pid == pid && t->tid == tid) {
				r->last_pid = pid;
				r->last_tid = tid;
				return r->last = t->st;
			}
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
	t->st = calloc(1, sizeof(*t->st));
	if (!t->st)
		return NULL;
	t->used = true;
	t->pid = pid;
	t->tid = tid;
	t->st->tgid = pid;
	r->nthreads++;
	r->last_pid = pid;
	r->last_tid = tid;
	return r->last = t->st;
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
	uint32_t stack_buf[SP_MAX_DEPTH];
	struct replay_interval iv;
	struct sp_thread_stack *st;
	struct sp_closed c;
	bool begin;
	int kind, res;

	memset(&iv, 0, sizeof(iv));
	iv.pid = ev->pid;
	iv.tid = ev->tid;
	iv.name_id = ev->name_id;
	if (ev->kind == SP_EV_CACHE_HIT) {
		iv.cache_hit = true;
		iv.start_ns = iv.end_ns = ev->ts_ns;
		st = thread_stack(r, ev->pid, ev->tid, false);
		if (st)
			fill_stack(&iv, st, stack_buf);
		return r->fn(r->ctx, &iv);
	}
	if (ev->kind == SP_EV_THREAD_EXIT) {
		/* As live: count what it left open; a reused tid starts clean. */
		st = thread_stack(r, ev->pid, ev->tid, false);
		if (st) {
			r->errors[SP_ERR_THREAD_EXIT_OPEN] += st->depth + st->overflow;
			st->depth = st->overflow = 0;
		}
		return 0;
	}
	kind = frame_kind(ev->kind, &begin);
	if (kind < 0)
		return 0;	/* marks, allocations: not intervals */
	st = thread_stack(r, ev->pid, ev->tid, begin);
	if (begin) {
		if (!st)
			return -ENOMEM;
		/* Frames hold the string id where BPF holds the pointer. */
		if (sp_stack_push(st, ev->name_id, (uint32_t)kind, ev->ts_ns))
			r->errors[SP_ERR_STACK_OVERFLOW]++;
		return 0;
	}
	if (!st) {
		r->errors[SP_ERR_END_WITHOUT_BEGIN]++;
		return 0;
	}
	res = sp_stack_pop(st, ev->name_id, (uint32_t)kind, ev->ts_ns, &c);
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

	for (i = 0; i < r->cap; i++)
		if (r->threads[i].used)
			r->open_at_end += r->threads[i].st->depth +
					  r->threads[i].st->overflow;
}

void replay__free(struct replay *r)
{
	uint32_t i;

	for (i = 0; i < r->cap; i++)
		free(r->threads[i].st);
	free(r->threads);
	memset(r, 0, sizeof(*r));
}
