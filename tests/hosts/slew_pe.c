// SPDX-License-Identifier: MIT
/* Per-event half of the clock-slew host (slew_host.c): built with
 * SP_PROBES_NO_BATCH into the same executable, so these sites fire their
 * USDT probes (bpf_ktime_get_ns() timestamps) while the executable's other
 * sites append batched records (TSC timestamps), on the same thread. */
#include <sp_probe.h>

void pe_begin(const char *q)
{
	SP_QUERY_BEGIN(q);
}

void pe_end(const char *q)
{
	SP_QUERY_END(q);
}
