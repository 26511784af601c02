// SPDX-License-Identifier: MIT
/*
 * probe_cost: times one loop per mode, for bench/run_probe_cost.sh, which
 * runs the modes untraced and traced and prints the ratios between them.
 *
 *   probe_cost MODE N [REPEAT]
 *
 *   empty     N iterations of a loop holding only a compiler barrier
 *   disabled  the same loop around an SP_QUERY_BEGIN/END pair, untraced
 *   pair      the same code as disabled, meant to run under sptrace
 *   strdisabled, strpair  the same with a name made at run time
 *             (SP_QUERY_BEGIN_STR/END_STR of "bench_rt"), untraced / traced
 *   syscall   N bare syscall(SYS_getppid)
 *   sdt       the loop around a <sys/sdt.h> DTRACE_PROBE1 bench:begin /
 *             bench:end pair, meant to run under bpftrace
 *
 * Prints one line: mode=M n=N repeat=R traced=0|1 ns_per_iter=F, where F is
 * the fastest of REPEAT (default 1) timed runs, by CLOCK_MONOTONIC around the
 * loop. traced says whether a tracer had enabled the sp probes (always 0 for
 * sdt, whose probes have no semaphore). Only meaningful when optimised.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sp_probe.h>

#include "bench_loops.h"

static const struct mode {
	const char *name;
	void (*loop)(unsigned long n);
} modes[] = {
	{ "empty", loop_empty },
	{ "disabled", loop_pair },
	{ "pair", loop_pair },
	{ "strdisabled", loop_strpair },
	{ "strpair", loop_strpair },
	{ "syscall", loop_syscall },
	{ "sdt", loop_sdt },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: probe_cost empty|disabled|pair|strdisabled|strpair|syscall|sdt N [REPEAT]\n");
}

int main(int argc, char **argv)
{
	const struct mode *m = NULL;
	unsigned long n, repeat = 1, r;
	double best = 0;
	int traced;
	size_t i;

	if (argc < 3 || argc > 4) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[1], modes[i].name))
			m = &modes[i];
	if (!m || parse_count(argv[2], 1ul << 40, &n) ||
	    (argc == 4 && parse_count(argv[3], 1000, &repeat))) {
		usage(stderr);
		return 2;
	}

#ifndef __OPTIMIZE__
	fprintf(stderr, "probe_cost: built without optimisation: the figures mean little\n");
#endif
	/* Read once before timing: a tracer attaches before the loop starts. */
	traced = SP_ENABLED() ? 1 : 0;
	if (!strcmp(m->name + (m->name[0] == 's' && m->name[1] == 't' ? 3 : 0),
		    "disabled") && traced)
		fprintf(stderr, "probe_cost: disabled: the sp probes are enabled (a tracer is attached)\n");
	if (strstr(m->name, "pair") && !traced)
		fprintf(stderr, "probe_cost: pair: no tracer enabled the sp probes\n");

	for (r = 0; r < repeat; r++) {
		double t0 = now_ns(), ns;

		m->loop(n);
		ns = (now_ns() - t0) / (double)n;
		if (r == 0 || ns < best)
			best = ns;
	}
	printf("mode=%s n=%lu repeat=%lu traced=%d ns_per_iter=%.3f\n", m->name,
	       n, repeat, traced, best);
	return 0;
}
