// SPDX-License-Identifier: MIT
/*
 * --func host: plain functions without probes. Nested calls, recursion,
 * and a longjmp() out of two nested functions every iteration, whose
 * return probes therefore never fire.
 *
 *   funcs ITER
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static jmp_buf env;
static volatile unsigned long sink;

NOINLINE void fn_leaf(void)
{
	for (int i = 0; i < 1000; i++)
		sink += (unsigned long)i;
}

NOINLINE void fn_outer(void)
{
	fn_leaf();
	fn_leaf();
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
		fn_outer();
		fn_rec(5);
		if (!setjmp(env))
			fn_jump_outer();
	}
	printf("done %d\n", n);
	return 0;
}
