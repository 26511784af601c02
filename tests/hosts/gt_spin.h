/* SPDX-License-Identifier: MIT */
/* Busy-wait for the ground-truth hosts: returns the ns actually spent, so
 * the host can report the truth even when the scheduler stretches a spin. */
#ifndef GT_SPIN_H
#define GT_SPIN_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gt_spin(uint64_t ns)
{
	uint64_t t0 = gt_now(), t;

	do
		t = gt_now();
	while (t - t0 < ns);
	return t - t0;
}

void gt_lib_query(uint64_t ns, uint64_t *spent);

#endif
