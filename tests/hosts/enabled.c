// SPDX-License-Identifier: MIT
/*
 * Semaphore host: runs a query every millisecond and prints the values of
 * the query_begin semaphore (per-event), the flush semaphore (batched) and
 * SP_ENABLED() whenever they change, so a test sees tracers come and go
 * (including one killed with SIGKILL).
 */
#include <stdio.h>
#include <time.h>
#include <sp_probe.h>

int main(void)
{
	int last = -1, lastf = -1;
	struct timespec ms = { 0, 1000000 };

	for (;;) {
		int now = sp_query_begin_semaphore, f = sp_flush_semaphore;

		SP_QUERY_BEGIN("tick");
		nanosleep(&ms, NULL);
		SP_QUERY_END("tick");
		if (now != last || f != lastf) {
			printf("sema=%d flush=%d enabled=%d\n", now, f,
			       SP_ENABLED() ? 1 : 0);
			fflush(stdout);
			last = now;
			lastf = f;
		}
	}
}
