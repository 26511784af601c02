/* SPDX-License-Identifier: MIT */
/*
 * Replaying recorded events through the per-thread stack arithmetic the BPF
 * side uses live (include/sptrace/qstack.h), so a recorded run yields the
 * same intervals, to the nanosecond, as live aggregation would have.
 * A thread has one stack per track, as in BPF: track 0 for sp probes and
 * --func, track t + 1 for --query track t (an event's arg1, see
 * docs/trace-file.md).
 */
#ifndef SPTRACE_REPLAY_H
#define SPTRACE_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <sptrace/query_abi.h>
#include "trace_event.h"

/* An interval an END closed (or a cache hit, with total = self = 0). */
struct replay_interval {
	uint32_t pid, tid;
	uint32_t name_id;
	uint32_t kind;			/* enum sp_frame_kind; see cache_hit */
	bool cache_hit;			/* SP_EV_CACHE_HIT: no interval */
	uint64_t start_ns, end_ns;
	uint64_t total_ns, self_ns;
	/* Names of the enclosing open frames, outermost first (for stacks). */
	const uint32_t *stack;
	uint32_t depth;
};

/* Called for every closed interval and cache hit; non-zero stops replay. */
typedef int (*replay_fn)(void *ctx, const struct replay_interval *iv);

struct replay_thread;

struct replay {
	replay_fn fn;
	void *ctx;
	struct replay_thread *threads;	/* hash by (pid, tid) */
	uint32_t nthreads, cap;
	/* The last thread looked up: events come in runs of one thread. */
	struct replay_thread *last;
	uint64_t errors[SP_ERR__MAX];	/* same slots as the BPF side */
	uint64_t open_at_end;		/* frames still open when replay ended */
};

void replay__init(struct replay *r, replay_fn fn, void *ctx);
/* 0, the callback's non-zero value, or -ENOMEM. */
int replay__event(struct replay *r, const struct trace_event *ev);
/* Counts frames left open (threads that exited with open frames were
 * counted as THREAD_EXIT_OPEN by the recorder's thread-exit events, if any). */
void replay__finish(struct replay *r);
void replay__free(struct replay *r);

#endif /* SPTRACE_REPLAY_H */
