// SPDX-License-Identifier: MIT
/*
 * A C program that looks like a Go binary to sptrace: it has the
 * .go.buildinfo section every Go executable carries (and a runtime.main
 * symbol). --func must refuse it as Go (tests/e2e/test_reach_faults.py):
 * no Go toolchain is needed to test that check.
 *
 *   go_lookalike   prints "ran" if it ever runs
 */
#include <stdio.h>

#define NOINLINE __attribute__((noinline, used))

/* Go 1.18+: "\xff Go buildinf:" then pointer size and flags. */
__attribute__((section(".go.buildinfo"), used))
static const char buildinfo[32] = "\xff Go buildinf:\x08\x02";

NOINLINE void go_work(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* What the Go runtime calls its main; a C name cannot hold the dot. */
__asm__(".globl runtime.main\n"
	".type runtime.main, @function\n"
	"runtime.main: ret\n"
	".size runtime.main, 1\n");

int main(void)
{
	go_work();
	puts("ran");
	return 0;
}
