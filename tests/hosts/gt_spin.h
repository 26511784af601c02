/* SPDX-License-Identifier: MIT */
/* Busy-wait and clock of the ground-truth hosts. */
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

/* Runs query `name` in the shared library; returns its time as the host
 * measured it. */
uint64_t gt_lib_query(const char *name, uint64_t ns);

#endif
