/* SPDX-License-Identifier: MIT */
/*
 * Self/total time arithmetic on a per-thread stack of open intervals,
 * compiled both by the BPF program (live aggregation) and by userspace
 * (replay of recorded events and unit tests), so both agree to the ns.
 *
 * A frame's total time is END - BEGIN; its self time is total minus the
 * total time of its closed children. Blocked and incremental-load intervals
 * are frames too: they are children of the enclosing query, so their time is
 * taken out of its self time (measureme's semantics).
 */
#ifndef SPTRACE_QSTACK_H
#define SPTRACE_QSTACK_H

#include <stdbool.h>
#include <sptrace/query_abi.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* An interval that END closed. */
struct sp_closed {
	__u64 name;
	__u64 total_ns;
	__u64 self_ns;
	__u32 kind;
	__u32 discarded;	/* open frames above it that END threw away */
};

enum sp_pop_result {
	SP_POP_OK = 0,
	SP_POP_UNMATCHED,	/* no open frame has this name and kind */
	SP_POP_OVERFLOWED,	/* END of a BEGIN dropped for depth; ignored */
};

/* Returns 0, or SP_ERR_STACK_OVERFLOW when the frame could not be kept. */
static __always_inline int sp_stack_push(struct sp_thread_stack *st,
					 __u64 name, __u32 kind, __u64 now)
{
	__u32 d = st->depth;
	struct sp_frame *f;

	if (d >= SP_MAX_DEPTH || st->overflow) {
		/* Once one BEGIN is dropped, deeper ones must be dropped too,
		 * or their ENDs would pair with the wrong frames. */
		st->overflow++;
		return SP_ERR_STACK_OVERFLOW;
	}
	f = &st->frames[d & (SP_MAX_DEPTH - 1)];
	f->name = name;
	f->start_ns = now;
	f->child_ns = 0;
	f->sp = 0;
	f->kind = kind;
	f->tag = 0;
	st->depth = d + 1;
	return 0;
}

/*
 * The scans below look at the open frames from the top (i = 0: the
 * innermost) and stop at the first frame a test picks. Each is one loop
 * here, for the replay; the BPF program runs the same tests from
 * bpf_loop() (bpf/query_stack.bpf.h), where a plain loop of SP_MAX_DEPTH
 * iterations would be verified once per iteration and per exit.
 */

/* The depth the scans use. */
static __always_inline __u32 sp_stack_depth(const struct sp_thread_stack *st)
{
	return st->depth > SP_MAX_DEPTH ? SP_MAX_DEPTH : st->depth;
}

/* Frame i from the top of a stack of depth d (i < d). */
static __always_inline struct sp_frame *
sp_stack_frame(struct sp_thread_stack *st, __u32 d, __u32 i)
{
	return &st->frames[(d - 1 - i) & (SP_MAX_DEPTH - 1)];
}

/*
 * --func frames whose function is gone without a return probe firing:
 * longjmp() or a C++ exception unwound past them (the kernel drops their
 * uretprobes). The stack grows down, so a frame entered at stack pointer
 * f->sp is still live only while the current one is below it. `sp` is the
 * current stack pointer as a function entry would see it (for a return
 * probe, the pointer after `ret`, minus 8). sp_stack_unwind() discards the
 * unwound frames from the top and returns how many; their time stays in
 * the frame below.
 */
static __always_inline bool sp_frame_unwound(const struct sp_frame *f,
					     __u64 sp)
{
	return f->sp && f->sp <= sp;
}

/* The n frames at the top of a stack of depth d are gone. */
static __always_inline __u32 sp_stack_drop(struct sp_thread_stack *st,
					   __u32 d, __u32 n)
{
	st->depth = d - n;
	return n;
}

static __always_inline __u32 sp_stack_unwind(struct sp_thread_stack *st,
					     __u64 sp)
{
	__u32 i, d = sp_stack_depth(st);

	for (i = 0; i < d; i++)
		if (!sp_frame_unwound(sp_stack_frame(st, d, i), sp))
			break;
	return sp_stack_drop(st, d, i);
}

/* Closes frame idx of a stack of depth d (see sp_stack_pop). */
static __always_inline void sp_stack_close(struct sp_thread_stack *st,
					   __u32 d, __u32 idx, __u64 now,
					   struct sp_closed *out)
{
	struct sp_frame *f = &st->frames[idx & (SP_MAX_DEPTH - 1)];
	__u64 total, self;

	total = now > f->start_ns ? now - f->start_ns : 0;
	self = total > f->child_ns ? total - f->child_ns : 0;
	out->name = f->name;
	out->kind = f->kind;
	out->total_ns = total;
	out->self_ns = self;
	out->discarded = d - 1 - idx;
	st->depth = idx;
	if (idx > 0)
		st->frames[(idx - 1) & (SP_MAX_DEPTH - 1)].child_ns += total;
}

/*
 * Close the innermost open frame with this name and kind. Frames opened
 * above it and never closed are discarded (counted in out->discarded); their
 * time stays in the closed frame's self time, since nothing else can own it.
 * An END whose BEGIN was dropped for depth is ignored first
 * (sp_stack_pop_overflowed()); then the scan, whose stop at frame i from
 * the top (d: none) sp_stack_pop_at() applies.
 */
static __always_inline bool sp_frame_closes(const struct sp_frame *f,
					    __u64 name, __u32 kind)
{
	return f->name == name && f->kind == kind;
}

static __always_inline bool sp_stack_pop_overflowed(struct sp_thread_stack *st)
{
	if (!st->overflow)
		return false;
	st->overflow--;
	return true;
}

static __always_inline int sp_stack_pop_at(struct sp_thread_stack *st,
					   __u32 d, __u32 i, __u64 now,
					   struct sp_closed *out)
{
	if (i >= d)
		return SP_POP_UNMATCHED;
	sp_stack_close(st, d, (d - 1 - i) & (SP_MAX_DEPTH - 1), now, out);
	return SP_POP_OK;
}

static __always_inline int sp_stack_pop(struct sp_thread_stack *st,
					__u64 name, __u32 kind, __u64 now,
					struct sp_closed *out)
{
	__u32 d, i;

	if (sp_stack_pop_overflowed(st))
		return SP_POP_OVERFLOWED;
	d = sp_stack_depth(st);
	for (i = 0; i < d; i++)
		if (sp_frame_closes(sp_stack_frame(st, d, i), name, kind))
			break;
	return sp_stack_pop_at(st, d, i, now, out);
}

/*
 * --query: the END of a spec line closes the innermost open frame of that
 * line (tag = line + 1), whatever its name: the name was formed at BEGIN,
 * so an END need not read its arguments, and any of a line's alternative
 * ENDs closes it. Otherwise as sp_stack_pop().
 */
static __always_inline int sp_stack_pop_tag(struct sp_thread_stack *st,
					    __u32 tag, __u64 now,
					    struct sp_closed *out)
{
	__u32 d, i;

	if (sp_stack_pop_overflowed(st))
		return SP_POP_OVERFLOWED;
	d = sp_stack_depth(st);
	for (i = 0; i < d; i++)
		if (sp_stack_frame(st, d, i)->tag == tag)
			break;
	return sp_stack_pop_at(st, d, i, now, out);
}

/*
 * --query, a `serial` line (its intervals never nest on a thread): a BEGIN
 * that finds one of the line's frames (tag) still open knows that frame's
 * END will never come (PostgreSQL fires no query__done after an ERROR).
 * The frame and any left open above it are dropped, counted as abandoned,
 * so a process that keeps failing never fills its stack. The scan's stop
 * i from the top (d: none) as for sp_stack_pop_at(); returns the frames
 * dropped.
 */
static __always_inline __u32 sp_stack_abandon_at(struct sp_thread_stack *st,
						 __u32 d, __u32 i)
{
	if (i >= d)
		return 0;
	return sp_stack_drop(st, d, i + 1);
}

static __always_inline __u32 sp_stack_abandon_tag(struct sp_thread_stack *st,
						  __u32 tag)
{
	__u32 d, i;

	d = sp_stack_depth(st);
	for (i = 0; i < d; i++)
		if (sp_stack_frame(st, d, i)->tag == tag)
			break;
	return sp_stack_abandon_at(st, d, i);
}

/*
 * --query, a line's abandon= probe (PostgreSQL's transaction__abort for
 * plan and execute, which nest and whose ENDs an ERROR skips): every open
 * frame of the line is dead. The outermost one (i from the bottom; d:
 * none) and all frames above it are dropped; returns how many, with the
 * BEGINs dropped beyond the depth, which were above them.
 */
static __always_inline __u32 sp_stack_abandon_from(struct sp_thread_stack *st,
						   __u32 d, __u32 i)
{
	__u32 n;

	if (i >= d)
		return 0;
	n = d - i + st->overflow;
	st->depth = i;
	st->overflow = 0;
	return n;
}

static __always_inline __u32 sp_stack_abandon_all(struct sp_thread_stack *st,
						  __u32 tag)
{
	__u32 d, i;

	d = sp_stack_depth(st);
	for (i = 0; i < d; i++)
		if (st->frames[i & (SP_MAX_DEPTH - 1)].tag == tag)
			break;
	return sp_stack_abandon_from(st, d, i);
}

/*
 * `ns` of the thread's time, from `at` on, went to the tracer (a batched
 * flush fired by the record stamped `at`). Intervals that the record at `at`
 * opened start that much later: their host-side clock readings, taken after
 * the probe returned, exclude the flush too. Intervals opened earlier keep
 * it, as the host's own clock around them does (and as the per-event path
 * charges its traps). The frames that began at `at` are the topmost ones.
 * Replay (model/replay.c) runs it on recorded SP_EV_PAUSE events.
 * Returns the frames moved: 0 when the pause changed nothing.
 */
static __always_inline bool sp_frame_shift(struct sp_frame *f, __u64 at,
					   __u64 ns)
{
	if (f->start_ns < at)
		return false;
	f->start_ns += ns;
	return true;
}

static __always_inline __u32 sp_stack_shift(struct sp_thread_stack *st,
					    __u64 at, __u64 ns)
{
	__u32 i, d = sp_stack_depth(st);

	for (i = 0; i < d; i++)
		if (!sp_frame_shift(sp_stack_frame(st, d, i), at, ns))
			break;
	return i;
}

#endif /* SPTRACE_QSTACK_H */
