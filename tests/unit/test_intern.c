// SPDX-License-Identifier: MIT
/*
 * Unit tests of sp_probe.h's intern table (sp__intern(), behind the *_STR
 * probes): threads that intern the same texts from buffers of their own get
 * one copy per text; a long text is cut and hashed as Rust's Name::intern
 * does; a full table names new texts "<intern-full>" and counts them. The
 * table is made small here (SP__INTERN_SLOTS) so that it fills.
 */
#define SP__INTERN_SLOTS 512u
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sp_probe.h>
#include "check.h"

#if !defined(SP_PROBES_DISABLE) && defined(__linux__)

#define THREADS 4
#define TEXTS 400	/* fewer than the slots: every one fits */

static pthread_barrier_t start;
static const char *got[THREADS][TEXTS];

static void *intern_all(void *arg)
{
	long me = (long)arg;
	char buf[32];
	int i, k, n;

	pthread_barrier_wait(&start);
	for (i = 0; i < TEXTS; i++) {
		/* Each thread its own order and its own buffer, with junk
		 * after the text. */
		k = me & 1 ? TEXTS - 1 - i : i;
		n = snprintf(buf, sizeof(buf), "t_%d", k);
		buf[n] = '#';
		got[me][k] = sp__intern(buf, (unsigned long)n);
	}
	return NULL;
}

static void threads_share_one_copy(void)
{
	pthread_t th[THREADS];
	char want[32];
	long t;
	int i;

	pthread_barrier_init(&start, NULL, THREADS);
	for (t = 0; t < THREADS; t++)
		CHECK(!pthread_create(&th[t], NULL, intern_all, (void *)t));
	for (t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&start);
	for (i = 0; i < TEXTS; i++) {
		snprintf(want, sizeof(want), "t_%d", i);
		CHECK_STR(got[0][i], want);
		for (t = 1; t < THREADS; t++)
			CHECK(got[t][i] == got[0][i]);
	}
	CHECK_U64(sp__intern_full, 0);
	/* Found again by text, not by address. */
	CHECK(sp__intern("t_7", 3) == got[2][7]);
}

static unsigned long long fnv(const unsigned char *p, size_t n)
{
	unsigned long long h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static void long_texts_cut_and_hashed(void)
{
	size_t n = 1u << 20;
	unsigned char *big = malloc(n);
	char want[128];
	const char *a, *b;

	if (!big) {
		CHECK(big);
		return;
	}
	memset(big, 'x', n);
	memcpy(big, "big", 3);
	a = sp__intern(big, n);
	snprintf(want, sizeof(want), "%.110s~%016llx", (const char *)big,
		 fnv(big, n));
	CHECK_STR(a, want);
	CHECK_U64(strlen(a), 127);
	big[n - 1] = 'y';	/* differs past the cut: another name */
	b = sp__intern(big, n);
	CHECK(a != b);
	CHECK(!memcmp(a, b, 111));
	/* A 3-byte character across the cut is not split. */
	memset(big, 'x', 200);
	memcpy(big + 109, "\xe2\x82\xac", 3);
	a = sp__intern(big, 200);
	CHECK_U64((unsigned char)a[109], '~');
	/* Exactly 127 bytes: kept whole. */
	a = sp__intern(big, 127);
	CHECK_U64(strlen(a), 127);
	CHECK(!memcmp(a, big, 127));
	/* Not UTF-8 and with a NUL: kept as given (sptrace escapes). */
	CHECK(!memcmp(sp__intern("a\xff\0b", 4), "a\xff\0b", 5));
	free(big);
}

static void full_table_named_and_counted(void)
{
	unsigned long long before = sp__intern_full, extra = 0;
	char buf[32];
	const char *p;
	int i, n;

	/* 400 + 5 texts so far; fill the 512 slots and go past by 88. */
	for (i = 0; i < 195; i++) {
		n = snprintf(buf, sizeof(buf), "f_%d", i);
		p = sp__intern(buf, (unsigned long)n);
		if (!strcmp(p, "<intern-full>"))
			extra++;
		else
			CHECK_STR(p, buf);
	}
	CHECK_U64(extra, 405 + 195 - SP__INTERN_SLOTS);
	CHECK_U64(sp__intern_full - before, extra);
	/* Known texts are still found. */
	CHECK_STR(sp__intern("t_3", 3), "t_3");
}

int main(void)
{
	RUN(threads_share_one_copy);
	RUN(long_texts_cut_and_hashed);
	RUN(full_table_named_and_counted);
	return check_status();
}
#else
int main(void)
{
	return 77;	/* no intern table in this build */
}
#endif
