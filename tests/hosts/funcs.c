// SPDX-License-Identifier: MIT
/*
 * --func host: plain functions without probes. Nested calls, recursion,
 * and a longjmp() out of two nested functions every iteration, whose
 * return probes therefore never fire.
 *
 *   funcs ITER
 *
 * Time truth, from the host's own CLOCK_MONOTONIC (the clock BPF's
 * bpf_ktime_get_ns() reads): the sum of each function's body, read on its
 * first and last line ("*_in_ns"), and of its calls, read by its caller
 * around the call ("*_out_ns"). A tracer's entry and return probes fire
 * between the two, so its total for the function lies in [in, out]. It
 * prints them as one JSON line after "done ITER".
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf env;
static volatile unsigned long sink;
static uint64_t leaf_in, leaf_out, outer_in, outer_out;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

NOINLINE void fn_leaf(void)
{
	uint64_t t0 = now_ns();

	/* ~20 us: long against a probe's cost, so [in, out] is narrow. */
	for (int i = 0; i < 20000; i++)
		sink += (unsigned long)i;
	leaf_in += now_ns() - t0;
}

NOINLINE void fn_outer(void)
{
	uint64_t t0 = now_ns(), a, b;

	a = now_ns();
	fn_leaf();
	b = now_ns();
	leaf_out += b - a;
	a = now_ns();
	fn_leaf();
	b = now_ns();
	leaf_out += b - a;
	outer_in += now_ns() - t0;
}

NOINLINE void fn_rec(int n)
{
	sink += (unsigned long)n;
	if (n > 1)
		fn_rec(n - 1);
	sink++;
}

NOINLINE void fn_jump_inner(void)
{
	sink++;
	longjmp(env, 1);
}

NOINLINE void fn_jump_outer(void)
{
	fn_jump_inner();
	sink++;
}

int main(int argc, char **argv)
{
	volatile int i;
	int n = argc > 1 ? atoi(argv[1]) : 10;

	for (i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		fn_outer();
		outer_out += now_ns() - t0;
		fn_rec(5);
		if (!setjmp(env))
			fn_jump_outer();
	}
	printf("done %d\n", n);
	printf("{\"fn_leaf_in_ns\": %llu, \"fn_leaf_out_ns\": %llu, "
	       "\"fn_outer_in_ns\": %llu, \"fn_outer_out_ns\": %llu}\n",
	       (unsigned long long)leaf_in, (unsigned long long)leaf_out,
	       (unsigned long long)outer_in, (unsigned long long)outer_out);
	return 0;
}
