// SPDX-License-Identifier: MIT
/*
 * Unbalanced-event host: does, a known number of times, everything the
 * tracer must count rather than believe, next to a well-behaved query
 * whose row must stay exact.
 *
 *   unbalanced events     3 END without BEGIN, 2 ENDs that close a frame
 *                         opened after their BEGIN, 130-deep recursion
 *                         (2 beyond the 128-frame stack), a thread that
 *                         exits with 2 open queries; "good" runs 10 times
 *   unbalanced many N K   N distinct queries (N <= 64), each K times
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sp_probe.h>

#define Q8(p) p "0", p "1", p "2", p "3", p "4", p "5", p "6", p "7"
static const char *const many_names[64] = {
	Q8("q0"), Q8("q1"), Q8("q2"), Q8("q3"),
	Q8("q4"), Q8("q5"), Q8("q6"), Q8("q7"),
};

static void good(void)
{
	SP_QUERY_BEGIN("good");
	SP_QUERY_END("good");
}

static void deep(int n)
{
	SP_QUERY_BEGIN("deep");
	if (n > 1)
		deep(n - 1);
	SP_QUERY_END("deep");
}

static void *leaves_open(void *arg)
{
	(void)arg;
	SP_QUERY_BEGIN("open1");
	SP_QUERY_BEGIN("open2");
	return NULL;	/* exits with both open */
}

static void events(void)
{
	pthread_t t;
	int i;

	for (i = 0; i < 5; i++)
		good();
	for (i = 0; i < 3; i++)
		SP_QUERY_END("orphan");
	for (i = 0; i < 2; i++) {
		SP_QUERY_BEGIN("outer_a");
		SP_QUERY_BEGIN("never_closed");
		SP_QUERY_END("outer_a");
	}
	deep(130);
	pthread_create(&t, NULL, leaves_open, NULL);
	pthread_join(t, NULL);
	for (i = 0; i < 5; i++)
		good();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "events")) {
		events();
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "many")) {
		int n = atoi(argv[2]), k = atoi(argv[3]), i, j;

		if (n < 1 || n > 64 || k < 1)
			return 2;
		for (j = 0; j < k; j++)
			for (i = 0; i < n; i++) {
				SP_QUERY_BEGIN(many_names[i]);
				SP_QUERY_END(many_names[i]);
			}
		return 0;
	}
	fprintf(stderr, "usage: unbalanced events | many N K\n");
	return 2;
}
