// SPDX-License-Identifier: MIT
/*
 * The C half of the mixed C+Rust host (tests/rust/mixed): queries fired by
 * sp_probe.h in a static library linked into a Rust binary. Both languages
 * define the same weak hidden semaphores; the binary must keep one per name.
 */
#include <sp_probe.h>

void mixed_c_query(int n);
int mixed_c_enabled(void);

void mixed_c_query(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN("c_query");
		SP_CACHE_HIT("shared");
		SP_QUERY_BEGIN("shared");
		SP_QUERY_END("shared");
		SP_QUERY_END("c_query");
	}
}

int mixed_c_enabled(void)
{
	return SP_ENABLED();
}
