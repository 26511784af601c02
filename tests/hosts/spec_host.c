// SPDX-License-Identifier: MIT
/*
 * Ground truth for --query semantics on third-party (sys/sdt.h) probes:
 * overlapping intervals of two providers' lines, nesting, alternative ENDs,
 * argument conditions, integer names, SQL normalization, row caps and long
 * strings. Prints what it did as one JSON line.
 *   spec_host N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

static volatile unsigned long sink;

static void spin(int n)
{
	for (int i = 0; i < n; i++)
		sink += (unsigned long)i;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100, i, k;
	long commits = 0, aborts = 0, reads = 0, found = 0, rel[4] = { 0 };
	long keys = 0, selects = 0, inserts = 0;
	char sql[512], longname[301];
	/* On the stack: a string in a .rodata page the program never
	 * touched is not readable from BPF (no page fault there). */
	char outer[] = "outer";

	/* Overlapping, not nested: outer ends before inner. */
	for (i = 0; i < n; i++) {
		DTRACE_PROBE1(sph, outer__start, outer);
		DTRACE_PROBE1(sph, inner__start, i % 3);
		spin(100);
		DTRACE_PROBE(sph, outer__done);
		DTRACE_PROBE(sph, inner__done);
	}
	/* Nested: a contains b. */
	for (i = 0; i < n; i++) {
		DTRACE_PROBE(sph, a__start);
		spin(100);
		DTRACE_PROBE(sph, b__start);
		spin(300);
		DTRACE_PROBE(sph, b__done);
		DTRACE_PROBE(sph, a__done);
	}
	/* Transactions: every fourth aborts. */
	for (i = 0; i < n; i++) {
		DTRACE_PROBE1(sph, txn__start, i);
		if (i % 4) {
			DTRACE_PROBE(sph, txn__commit);
			commits++;
		} else {
			DTRACE_PROBE(sph, txn__abort);
			aborts++;
		}
	}
	/* Buffer-like reads: relation 1..3, found unless i % 5 == 0. */
	for (i = 0; i < 3 * n; i++) {
		int r = i % 3 + 1, f = i % 5 != 0;

		DTRACE_PROBE2(sph, read, r, f);
		DTRACE_PROBE(sph, rd__start);
		DTRACE_PROBE1(sph, rd__done, f);
		reads++;
		found += f;
		rel[r]++;
	}
	/* Statements: the same two shapes with different literals. */
	for (i = 0; i < n; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT  abalance FROM t1\n WHERE aid = %d AND name = 'x''%d'",
			 i * 7919 - 50, i);
		DTRACE_PROBE1(sph, query__start, sql);
		DTRACE_PROBE(sph, query__done);
		selects++;
		snprintf(sql, sizeof(sql),
			 "INSERT INTO h (a, b) VALUES (%d, -%d, 'q'), (%d)", i, i, i + 1);
		DTRACE_PROBE1(sph, query__start, sql);
		DTRACE_PROBE(sph, query__done);
		inserts++;
	}
	/* 50 distinct keys, key k fired k + 1 times, then each once more
	 * (the first ones seen fire again after a row cap was reached); each
	 * also as an interval, kq__start..kq__done. */
	for (k = 0; k < 50; k++)
		for (i = 0; i <= k; i++) {
			snprintf(sql, sizeof(sql), "key-%d", k);
			DTRACE_PROBE1(sph, key, sql);
			sql[1] = 'q';	/* "kqy-K": rows of their own */
			DTRACE_PROBE1(sph, kq__start, sql);
			DTRACE_PROBE(sph, kq__done);
			keys++;
		}
	for (k = 0; k < 50; k++) {
		snprintf(sql, sizeof(sql), "key-%d", k);
		DTRACE_PROBE1(sph, key, sql);
		sql[1] = 'q';
		DTRACE_PROBE1(sph, kq__start, sql);
		DTRACE_PROBE(sph, kq__done);
		keys++;
	}
	/* A 300-byte name. */
	memset(longname, 'L', 300);
	longname[300] = 0;
	DTRACE_PROBE1(sph, key, longname);
	keys++;

	printf("{\"n\": %d, \"commits\": %ld, \"aborts\": %ld, \"reads\": %ld, "
	       "\"found\": %ld, \"rel1\": %ld, \"rel2\": %ld, \"rel3\": %ld, "
	       "\"selects\": %ld, \"inserts\": %ld, \"keys\": %ld}\n",
	       n, commits, aborts, reads, found, rel[1], rel[2], rel[3],
	       selects, inserts, keys);
	return 0;
}
