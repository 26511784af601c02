// SPDX-License-Identifier: MIT
/*
 * Clock-slew host (tests/e2e/test_slew.py): runs sleeping queries on
 * command, each timed by its own CLOCK_MONOTONIC readings around the
 * probes, while the test changes the clock's NTP frequency. One command a
 * line on stdin, one JSON line on stdout per command:
 *
 *   run NAME N MS MODE   N queries NAME of MS ms each; MODE says which
 *                        sites: b  batched BEGIN and END;
 *                        bp batched BEGIN, per-event END (slew_pe.c);
 *                        pb per-event BEGIN, batched END.
 *                        Prints {"name", "n", "total_ns", "min_ns", "max_ns"}.
 *   quit                 exits 0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sp_probe.h>
#include "gt_spin.h"

void pe_begin(const char *q);
void pe_end(const char *q);

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull),
			       (long)(ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

static int run(const char *name, int n, int ms, const char *mode)
{
	uint64_t t0, t1, d, total = 0, lo = UINT64_MAX, hi = 0;
	int i, pe_begin_site = !strcmp(mode, "pb"),
	       pe_end_site = !strcmp(mode, "bp");

	if (!pe_begin_site && !pe_end_site && strcmp(mode, "b"))
		return 1;
	for (i = 0; i < n; i++) {
		if (pe_begin_site)
			pe_begin(name);
		else
			SP_QUERY_BEGIN(name);
		t0 = gt_now();
		sleep_until(t0 + (uint64_t)ms * 1000000ull);
		t1 = gt_now();
		if (pe_end_site)
			pe_end(name);
		else
			SP_QUERY_END(name);
		d = t1 - t0;
		total += d;
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	printf("{\"name\": \"%s\", \"n\": %d, \"total_ns\": %llu, \"min_ns\": %llu, \"max_ns\": %llu}\n",
	       name, n, (unsigned long long)total, (unsigned long long)lo,
	       (unsigned long long)hi);
	fflush(stdout);
	return 0;
}

int main(void)
{
	char line[256], name[64], mode[8];
	int n, ms;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "quit", 4))
			return 0;
		if (sscanf(line, "run %63s %d %d %7s", name, &n, &ms, mode) != 4 ||
		    n <= 0 || ms < 0 || run(strdup(name), n, ms, mode)) {
			/* names stay mapped: sptrace reads them at the end */
			fprintf(stderr, "slew_host: bad command: %s", line);
			return 2;
		}
	}
	return 0;
}
