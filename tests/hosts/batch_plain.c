// SPDX-License-Identifier: MIT
/* A translation unit of batch_host built with SP_PROBES_NO_BATCH: its query
 * probes are per-event sites in a file whose other probes batch, as a Rust
 * crate's are in a mixed binary. Their events are legitimately per-event,
 * never fallbacks of a batched probe. */
#include <sp_probe.h>

void bp_pair(const char *q)
{
	SP_QUERY_BEGIN(q);
	SP_QUERY_END(q);
}
