// SPDX-License-Identifier: MIT
/*
 * Host of the verdict tests (tests/e2e/test_verdicts.py): 20 queries,
 * "q00" to "q19", each run CALLS times a busy-wait of US microseconds
 * measured by the host's own clock, so that each query's self time is
 * known, and the same in every run but for the noise of the machine.
 *
 *   verdict_host [CALLS [US]]            (default 20 250: 5 ms a query)
 *
 * 5 ms, not less: a stall of the machine (an interrupt, a lock another
 * tracer holds) adds 10 to 50 us to the query it hits, 1 to 5% of a 1 ms
 * query: enough for two such runs in a history of 10 to widen its noise
 * fence past a 10% change, or for one new run to look 2% slower.
 *
 * Two knobs, in the environment so that the command line (which the
 * history database keys a program's history by) stays the same:
 *
 *   VERDICT_SLOW=qNN:F    query qNN's busy-waits last F times as long
 *                         (1.10: a 10% slowdown)
 *   VERDICT_EXTRA=qNN     query qNN runs once more, with no busy-wait
 *                         (its count grows by one, its time does not)
 *
 * Before them it runs a query of its own, "warmup", twice (50 us each)
 * through the same probe sites: the first hit of a site in a process costs
 * more (the kernel sets up its out-of-line slot), up to a millisecond on
 * a loaded machine, and would land on q00 of one run in ten.
 *
 * At the end it prints one JSON line: per query its invocations and the
 * nanoseconds its busy-waits took by its own clock.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sp_probe.h>
#include "gt_spin.h"

#define NQ 20

/* One invocation: the only BEGIN and END sites of the program. */
static uint64_t run_query(const char *name, uint64_t ns)
{
	uint64_t spent;

	SP_QUERY_BEGIN(name);
	spent = ns ? gt_spin(ns) : 0;
	SP_QUERY_END(name);
	return spent;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 20;
	long us = argc > 2 ? strtol(argv[2], NULL, 10) : 250;
	const char *slow = getenv("VERDICT_SLOW");
	const char *extra = getenv("VERDICT_EXTRA");
	uint64_t spent[NQ] = { 0 }, count[NQ] = { 0 }, ns;
	char names[NQ][8];
	double factor[NQ];
	int q, slow_q = -1, extra_q = -1;
	long c;

	if (calls < 1 || us < 1) {
		fprintf(stderr, "usage: verdict_host [CALLS [US]]\n");
		return 2;
	}
	for (q = 0; q < NQ; q++) {
		snprintf(names[q], sizeof(names[q]), "q%02d", q);
		factor[q] = 1.0;
	}
	if (slow && sscanf(slow, "q%d:", &slow_q) == 1 && slow_q >= 0 &&
	    slow_q < NQ)
		factor[slow_q] = strtod(strchr(slow, ':') + 1, NULL);
	if (extra && sscanf(extra, "q%d", &extra_q) != 1)
		extra_q = -1;
	run_query("warmup", 50000);
	run_query("warmup", 50000);
	for (c = 0; c < calls; c++) {
		for (q = 0; q < NQ; q++) {
			ns = (uint64_t)((double)us * 1000 * factor[q]);
			spent[q] += run_query(names[q], ns);
			count[q]++;
		}
	}
	if (extra_q >= 0 && extra_q < NQ) {
		run_query(names[extra_q], 0);
		count[extra_q]++;
	}
	printf("{\"queries\": {");
	for (q = 0; q < NQ; q++)
		printf("%s\"%s\": {\"count\": %llu, \"ns\": %llu}", q ? ", " : "",
		       names[q], (unsigned long long)count[q],
		       (unsigned long long)spent[q]);
	printf("}}\n");
	return 0;
}
