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
 *                        Prints {"name", "n", "total_ns", "outer_ns",
 *                        "min_ns", "max_ns", "iv"}.
 *   quit                 exits 0
 *
 * Each query is timed twice: inside its probes (total_ns, from after the
 * BEGIN probe to before the END probe) and around them (outer_ns, from
 * before the BEGIN to after the END), so the probes' own timestamps lie
 * between the two whatever happens to the thread in between: e2e_slew
 * once failed because the thread was held up for 120 us between its clock
 * read and the END probe (a loaded machine), which only the outer reading
 * sees. A batched END would flush its ring there (the ring's oldest record
 * being older than 10 ms), and that trap, tens of us, would widen the outer
 * reading: a cache hit before the inner reading takes that flush instead.
 * "iv" lists each query's [inner start, inner end, outer start, outer end].
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

#define MAX_N 256

static int run(const char *name, int n, int ms, const char *mode)
{
	static uint64_t iv[MAX_N][4];
	uint64_t tp, t0, t1, tq, d, total = 0, outer = 0, lo = UINT64_MAX,
		 hi = 0;
	int i, pe_begin_site = !strcmp(mode, "pb"),
	       pe_end_site = !strcmp(mode, "bp");

	if ((!pe_begin_site && !pe_end_site && strcmp(mode, "b")) ||
	    n > MAX_N)
		return 1;
	for (i = 0; i < n; i++) {
		tp = gt_now();
		if (pe_begin_site)
			pe_begin(name);
		else
			SP_QUERY_BEGIN(name);
		t0 = gt_now();
		sleep_until(t0 + (uint64_t)ms * 1000000ull);
		if (!pe_end_site)
			SP_CACHE_HIT("slew_flush");	/* the flush, here */
		t1 = gt_now();
		if (pe_end_site)
			pe_end(name);
		else
			SP_QUERY_END(name);
		tq = gt_now();
		d = t1 - t0;
		total += d;
		outer += tq - tp;
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		iv[i][0] = t0;
		iv[i][1] = t1;
		iv[i][2] = tp;
		iv[i][3] = tq;
	}
	printf("{\"name\": \"%s\", \"n\": %d, \"total_ns\": %llu, \"outer_ns\": %llu, \"min_ns\": %llu, \"max_ns\": %llu, \"iv\": [",
	       name, n, (unsigned long long)total, (unsigned long long)outer,
	       (unsigned long long)lo, (unsigned long long)hi);
	for (i = 0; i < n; i++)
		printf("%s[%llu, %llu, %llu, %llu]", i ? ", " : "",
		       (unsigned long long)iv[i][0], (unsigned long long)iv[i][1],
		       (unsigned long long)iv[i][2], (unsigned long long)iv[i][3]);
	printf("]}\n");
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
