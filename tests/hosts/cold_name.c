// SPDX-License-Identifier: MIT
/*
 * A query whose name the program never reads (tests/e2e/test_binary.py):
 * the name sits alone in a 64 KiB window of .rodata, so neither a load of
 * the program nor the kernel's fault-around maps its page, and BPF cannot
 * read it (no page fault there). sptrace names the query from its snapshot
 * of the process's mappings, taken while the process lives.
 *
 *   cold_name [N [MS]]   N queries (default 3), then MS ms alive (500)
 */
#include <stdlib.h>
#include <time.h>
#include <sp_probe.h>

/* Three 64 KiB windows; the middle one holds the name and nothing else. */
static const char cold[3 * 65536] __attribute__((aligned(65536))) = {
	[65536] = 'c', 'o', 'l', 'd', '_', 'q', 'u', 'e', 'r', 'y',
};

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, i;
	long ms = argc > 2 ? atol(argv[2]) : 500;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	for (i = 0; i < n; i++) {
		SP_QUERY_BEGIN(cold + 65536);
		SP_QUERY_END(cold + 65536);
	}
	nanosleep(&ts, NULL);
	return 0;
}
