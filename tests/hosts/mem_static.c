// SPDX-License-Identifier: MIT
/* Statically linked host: its allocator is in the executable itself.
 * static_site() leaks 5 x malloc(123). */
#include <stdlib.h>

static void *volatile sink[8];

static __attribute__((noinline)) void static_site(int i)
{
	sink[i] = malloc(123);
}

int main(void)
{
	int i;

	for (i = 0; i < 5; i++)
		static_site(i);
	return 0;
}
