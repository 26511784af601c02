/* SPDX-License-Identifier: MIT */
/*
 * One recorded event, as the model sees it: what the trace file stores
 * (store/trace_format.h encodes it) and what the replay and the exports
 * consume. Strings are referred to by id (the trace's string table).
 */
#ifndef SPTRACE_TRACE_EVENT_H
#define SPTRACE_TRACE_EVENT_H

#include <stdint.h>
#include <sptrace/record_abi.h>

struct trace_event {
	uint64_t ts_ns;			/* CLOCK_MONOTONIC, absolute */
	uint64_t arg1, arg2;		/* see enum sp_event_kind */
	uint32_t pid, tid;
	uint32_t name_id;		/* string id; names of queries/types/marks/threads */
	uint16_t kind;			/* enum sp_event_kind */
};

#endif /* SPTRACE_TRACE_EVENT_H */
