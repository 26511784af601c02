// SPDX-License-Identifier: MIT
/* Shared library half of the ground-truth host: probes in a .so. */
#include <sp_probe.h>
#include "gt_spin.h"

void gt_lib_query(uint64_t ns, uint64_t *spent)
{
	SP_QUERY_BEGIN("lib_query");
	*spent += gt_spin(ns);
	SP_QUERY_END("lib_query");
}
