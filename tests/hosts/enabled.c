// SPDX-License-Identifier: MIT
/*
 * Semaphore host: runs a query every millisecond and prints the values of
 * the query_begin semaphore (per-event), the flush semaphore (batched) and
 * SP_ENABLED() whenever they change, so a test sees tracers come and go
 * (including one killed with SIGKILL). With --clock, each line ends with
 * " at=NS": CLOCK_MONOTONIC when the host saw the change, the host's own
 * clock for when a tracer attached and detached.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sp_probe.h>

int main(int argc, char **argv)
{
	int last = -1, lastf = -1, clock = argc > 1 && !strcmp(argv[1], "--clock");
	struct timespec ms = { 0, 1000000 }, now;

	for (;;) {
		int sema = sp_query_begin_semaphore, f = sp_flush_semaphore;

		SP_QUERY_BEGIN("tick");
		nanosleep(&ms, NULL);
		SP_QUERY_END("tick");
		if (sema != last || f != lastf) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			printf("sema=%d flush=%d enabled=%d", sema, f,
			       SP_ENABLED() ? 1 : 0);
			if (clock)
				printf(" at=%lld", (long long)now.tv_sec *
				       1000000000ll + now.tv_nsec);
			printf("\n");
			fflush(stdout);
			last = sema;
			lastf = f;
		}
	}
}
