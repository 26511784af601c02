/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The scans of include/sptrace/qstack.h, run from bpf_loop(): the tests
 * and the arithmetic are qstack.h's, only the loop is BPF's.
 *
 * Why: the verifier walks a plain loop of SP_MAX_DEPTH iterations one
 * iteration at a time, and every exit from it again with all the code
 * that follows, in each program that contains it: the END of an sp probe
 * took 200,000 verified instructions (about 0.1 s of load) per program. A
 * bpf_loop() callback is verified once. An END almost always closes the
 * innermost frame, so that one is tested first without a loop, and the
 * event's path costs what it cost before.
 */
#ifndef SPTRACE_QUERY_STACK_BPF_H
#define SPTRACE_QUERY_STACK_BPF_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <sptrace/qstack.h>

/* The callbacks are unused in files of the object that run no such scan. */

/* One scan: the stack, its depth, what is looked for, and where the scan
 * stopped (frame `at` from the top; d when no frame stopped it). */
struct stack_scan {
	struct sp_thread_stack *st;
	__u64 a;	/* the name, the pause's start, or the stack pointer */
	__u64 b;	/* the kind or tag, or the pause's length */
	__u32 d;
	__u32 at;
};

static __attribute__((unused)) long closes_step(__u32 i, void *data)
{
	struct stack_scan *s = data;

	if (i >= s->d)
		return 1;
	if (!sp_frame_closes(sp_stack_frame(s->st, s->d, i), s->a,
			     (__u32)s->b))
		return 0;
	s->at = i;
	return 1;
}

static __attribute__((unused)) long tagged_step(__u32 i, void *data)
{
	struct stack_scan *s = data;

	if (i >= s->d)
		return 1;
	if (sp_stack_frame(s->st, s->d, i)->tag != (__u32)s->b)
		return 0;
	s->at = i;
	return 1;
}

static __attribute__((unused)) long shift_step(__u32 i, void *data)
{
	struct stack_scan *s = data;

	if (i >= s->d)
		return 1;
	if (sp_frame_shift(sp_stack_frame(s->st, s->d, i), s->a, s->b))
		return 0;
	s->at = i;
	return 1;
}

static __attribute__((unused)) long unwound_step(__u32 i, void *data)
{
	struct stack_scan *s = data;

	if (i >= s->d)
		return 1;
	if (sp_frame_unwound(sp_stack_frame(s->st, s->d, i), s->a))
		return 0;
	s->at = i;
	return 1;
}

/* sp_stack_pop() */
static __always_inline int stack_pop(struct sp_thread_stack *st, __u64 name,
				     __u32 kind, __u64 now,
				     struct sp_closed *out)
{
	struct stack_scan s = { .st = st, .a = name, .b = kind };

	if (sp_stack_pop_overflowed(st))
		return SP_POP_OVERFLOWED;
	s.d = s.at = sp_stack_depth(st);
	if (s.d && sp_frame_closes(sp_stack_frame(st, s.d, 0), name, kind))
		s.at = 0;
	else
		bpf_loop(SP_MAX_DEPTH, closes_step, &s, 0);
	return sp_stack_pop_at(st, s.d, s.at, now, out);
}

/* sp_stack_pop_tag() */
static __always_inline int stack_pop_tag(struct sp_thread_stack *st,
					 __u32 tag, __u64 now,
					 struct sp_closed *out)
{
	struct stack_scan s = { .st = st, .b = tag };

	if (sp_stack_pop_overflowed(st))
		return SP_POP_OVERFLOWED;
	s.d = s.at = sp_stack_depth(st);
	if (s.d && sp_stack_frame(st, s.d, 0)->tag == tag)
		s.at = 0;
	else
		bpf_loop(SP_MAX_DEPTH, tagged_step, &s, 0);
	return sp_stack_pop_at(st, s.d, s.at, now, out);
}

/* sp_stack_abandon_tag() */
static __always_inline __u32 stack_abandon_tag(struct sp_thread_stack *st,
					       __u32 tag)
{
	struct stack_scan s = { .st = st, .b = tag };

	s.d = s.at = sp_stack_depth(st);
	if (s.d && sp_stack_frame(st, s.d, 0)->tag == tag)
		s.at = 0;
	else
		bpf_loop(SP_MAX_DEPTH, tagged_step, &s, 0);
	return sp_stack_abandon_at(st, s.d, s.at);
}

static __attribute__((unused)) long bottom_tagged_step(__u32 i, void *data)
{
	struct stack_scan *s = data;

	if (i >= s->d)
		return 1;
	if (s->st->frames[i & (SP_MAX_DEPTH - 1)].tag != (__u32)s->b)
		return 0;
	s->at = i;
	return 1;
}

/* sp_stack_abandon_all() */
static __always_inline __u32 stack_abandon_all(struct sp_thread_stack *st,
					       __u32 tag)
{
	struct stack_scan s = { .st = st, .b = tag };

	s.d = s.at = sp_stack_depth(st);
	bpf_loop(SP_MAX_DEPTH, bottom_tagged_step, &s, 0);
	return sp_stack_abandon_from(st, s.d, s.at);
}

/* sp_stack_shift() */
static __always_inline __u32 stack_shift(struct sp_thread_stack *st,
					 __u64 at, __u64 ns)
{
	struct stack_scan s = { .st = st, .a = at, .b = ns };

	s.d = s.at = sp_stack_depth(st);
	bpf_loop(SP_MAX_DEPTH, shift_step, &s, 0);
	return s.at;
}

/* sp_stack_unwind() */
static __always_inline __u32 stack_unwind(struct sp_thread_stack *st,
					  __u64 sp)
{
	struct stack_scan s = { .st = st, .a = sp };

	s.d = s.at = sp_stack_depth(st);
	bpf_loop(SP_MAX_DEPTH, unwound_step, &s, 0);
	return sp_stack_drop(st, s.d, s.at);
}

#endif /* SPTRACE_QUERY_STACK_BPF_H */
