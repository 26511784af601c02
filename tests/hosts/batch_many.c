// SPDX-License-Identifier: MIT
/* One of many instrumented libraries that batch_host `libs` dlopens: each
 * copy has its own ring per thread (sp_probe.h's hidden symbols), so a
 * thread that calls into all of them has one ring per library. */
#include <sp_probe.h>

void bm_pair(void)
{
	SP_QUERY_BEGIN("lib");
	SP_QUERY_END("lib");
}

void bm_begin(const char *q)
{
	SP_QUERY_BEGIN(q);
}

void bm_end(const char *q)
{
	SP_QUERY_END(q);
}
