// SPDX-License-Identifier: MIT
/*
 * Keyed queries and names that are not plain text (tests/e2e/test_keys.py).
 *
 *   key_host N [--fork]
 *
 * Runs "plain_q" once (no key), one pair named by text that is not UTF-8
 * ("bad\xff\xc3(name") and one named by a 1 MiB heap string ("big" then
 * 'x's); then query "keyed_q" with keys 0..N-1, key k (k % 3) + 1 times,
 * each a SP_QUERY_BEGIN_KEY / SP_QUERY_END_KEY pair with a
 * SP_CACHE_HIT_KEY in it, in key order. --fork: then forks a child that runs ten
 * keyed pairs and exits 0. Prints
 *   {"keys": N, "pairs": P, "hits": H, "child_status": S}
 * where S is the child's wait status (-1 without --fork).
 *
 *   key_host --str N [M]
 *
 * Run-time text (the *_STR probes), from one buffer rewritten each time,
 * never NUL-terminated: query "skey_q" with text keys "k0".."k<N-1>", key
 * k (k % 3) + 1 times, each pair with a cache hit; then M names (300 by
 * default) "rt_0".."rt_<M-1>", name i (i % 3) + 1 pairs; one pair each named
 * "rtbad\xff\xc3(x" (not UTF-8), "both_rt" (also named by rs_keys
 * --str), and by 1 MiB of text ("rtbig" then 'x's), and one "skey_q" pair
 * of the key "kbad\xff" (not UTF-8). Prints
 *   {"keys": N, "pairs": P, "hits": H, "names": M, "name_pairs": Q}
 * where P and H count the "skey_q" pairs of keys k0.., and Q the rt_ ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sp_probe.h>

#define BIG_LEN (1u << 20)

static volatile unsigned long sink;

static void keyed(unsigned long long k)
{
	SP_QUERY_BEGIN_KEY("keyed_q", k);
	SP_CACHE_HIT_KEY("keyed_q", k);
	sink += k;
	SP_QUERY_END_KEY("keyed_q", k);
}

/* Text of `n` bytes in buf, then junk: a name must not be read past n. */
static size_t text(char *buf, size_t size, const char *fmt, unsigned long v)
{
	int n = snprintf(buf, size, fmt, v);

	buf[n] = '#';
	return (size_t)n;
}

static int str_main(unsigned long long n, unsigned long long names)
{
	static const char bad[] = "rtbad\xff\xc3(x#junk";
	unsigned long long k, pairs = 0, name_pairs = 0;
	char buf[64];
	size_t len;
	char *big;
	int r;

	for (k = 0; k < n; k++) {
		len = text(buf, sizeof(buf), "k%lu", (unsigned long)k);
		for (r = 0; r <= (int)(k % 3); r++, pairs++) {
			SP_QUERY_BEGIN_KEY_STR("skey_q", buf, len);
			SP_CACHE_HIT_KEY_STR("skey_q", buf, len);
			sink += k;
			SP_QUERY_END_KEY_STR("skey_q", buf, len);
		}
	}
	SP_QUERY_BEGIN_KEY_STR("skey_q", "kbad\xff", 5);
	SP_QUERY_END_KEY_STR("skey_q", "kbad\xff", 5);
	for (k = 0; k < names; k++) {
		len = text(buf, sizeof(buf), "rt_%lu", (unsigned long)k);
		for (r = 0; r <= (int)(k % 3); r++, name_pairs++) {
			SP_QUERY_BEGIN_STR(buf, len);
			SP_CACHE_HIT_STR(buf, len);
			SP_QUERY_END_STR(buf, len);
		}
	}
	SP_QUERY_BEGIN_STR(bad, 9);
	SP_QUERY_END_STR(bad, 9);
	SP_QUERY_BEGIN_STR("both_rt#", 7);
	SP_QUERY_END_STR("both_rt#", 7);
	big = malloc(BIG_LEN);
	if (!big)
		return 1;
	memset(big, 'x', BIG_LEN);
	memcpy(big, "rtbig", 5);
	SP_QUERY_BEGIN_STR(big, BIG_LEN);
	memset(big, 0, BIG_LEN);	/* the name was copied: the same row */
	memcpy(big, "rtbig", 5);
	memset(big + 5, 'x', BIG_LEN - 5);
	SP_QUERY_END_STR(big, BIG_LEN);
	free(big);
	printf("{\"keys\": %llu, \"pairs\": %llu, \"hits\": %llu, "
	       "\"names\": %llu, \"name_pairs\": %llu}\n", n, pairs, pairs,
	       names, name_pairs);
	return 0;
}

int main(int argc, char **argv)
{
	static const char bad[] = "bad\xff\xc3(name";
	unsigned long long n, k, pairs = 0;
	int status = -1, r;
	char *big;

	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "--str"))
		return str_main(strtoull(argv[2], NULL, 10),
				argc == 4 ? strtoull(argv[3], NULL, 10) : 300);
	if (argc < 2 || (argc == 3 && strcmp(argv[2], "--fork")) || argc > 3) {
		fprintf(stderr, "usage: key_host N [--fork]\n");
		return 2;
	}
	n = strtoull(argv[1], NULL, 10);
	big = malloc(BIG_LEN);
	if (!big)
		return 1;
	memset(big, 'x', BIG_LEN - 1);
	memcpy(big, "big", 3);
	big[BIG_LEN - 1] = 0;
	/* First: the ring's flushes that follow read these names in the
	 * host while it runs (a heap name is gone once it exits). */
	SP_QUERY_BEGIN("plain_q");
	SP_QUERY_END("plain_q");
	SP_QUERY_BEGIN(bad);
	SP_QUERY_END(bad);
	SP_QUERY_BEGIN(big);
	SP_QUERY_END(big);
	for (k = 0; k < n; k++)
		for (r = 0; r <= (int)(k % 3); r++, pairs++)
			keyed(k);
	if (argc == 3) {
		pid_t c = fork();

		if (c < 0)
			return 1;
		if (!c) {
			for (k = 0; k < 10; k++)
				keyed(k);
			_exit(0);
		}
		if (waitpid(c, &status, 0) != c)
			return 1;
	}
	printf("{\"keys\": %llu, \"pairs\": %llu, \"hits\": %llu, "
	       "\"child_status\": %d}\n", n, pairs, pairs, status);
	/* Alive until sptrace has read the names (it stops when we exit). */
	sink += (unsigned long)big[0];
	free(big);
	return 0;
}
