// SPDX-License-Identifier: MIT
/* Shared library half of the ground-truth host: probes in a .so. */
#include <sp_probe.h>
#include "gt_spin.h"

uint64_t gt_lib_query(const char *name, uint64_t ns)
{
	uint64_t t0, t1;

	SP_QUERY_BEGIN(name);
	t0 = gt_now();
	gt_spin(ns);
	t1 = gt_now();
	SP_QUERY_END(name);
	return t1 - t0;
}
