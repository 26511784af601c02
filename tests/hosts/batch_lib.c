// SPDX-License-Identifier: MIT
/* Library half of the batched-events host: a BEGIN and an END that live in
 * a shared object, with its own copy of the ring (sp_probe.h's hidden
 * symbols), for queries that cross objects. */
#include <sp_probe.h>

void bl_begin(const char *q)
{
	SP_QUERY_BEGIN(q);
}

void bl_end(const char *q)
{
	SP_QUERY_END(q);
}
