/* SPDX-License-Identifier: MIT */
/* The clocks sptrace reads, in nanoseconds: CLOCK_MONOTONIC (what BPF's
 * bpf_ktime_get_ns() counts, so durations and event times compare) and
 * CLOCK_REALTIME (dates of runs). */
#ifndef SPTRACE_CLOCK_H
#define SPTRACE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock__ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC now. */
static inline uint64_t now_ns(void)
{
	return clock__ns(CLOCK_MONOTONIC);
}

#endif /* SPTRACE_CLOCK_H */
