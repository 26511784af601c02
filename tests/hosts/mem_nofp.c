// SPDX-License-Identifier: MIT
/*
 * A program without frame pointers, as gcc -O2 builds by default: %rbp is
 * just another register, holding data. The kernel walks user stacks by
 * frame pointers, so at an allocation here it takes what %rbp points at for
 * a frame: below, a pair of words whose "return address" is the bits of
 * the double 0.3 (0x3fd3333333333333), as `sptrace mem` once printed for
 * the example. Set explicitly, so that every compiler makes the same walk.
 *
 *   nofp_site(): 7 x malloc(48), never freed; its call site is real, the
 *   frame after it is no code. Prints "allocs=7".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink[8];

static NOINLINE void nofp_site(int i)
{
	/* [rbp]: no next frame; [rbp + 8]: the "return address". */
	static uint64_t fake[2] = { 0, 0x3fd3333333333333ull };
	register uint64_t *fp asm("rbp") = fake;

	asm volatile("" : "+r"(fp));
	sink[i] = malloc(48);
	asm volatile("" : : "r"(fp));
}

int main(void)
{
	int i;

	for (i = 0; i < 7; i++)
		nofp_site(i);
	printf("allocs=7\n");
	return 0;
}
