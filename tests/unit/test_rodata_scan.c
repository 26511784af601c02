// SPDX-License-Identifier: MIT
/*
 * Unit test of the string finder behind `sptrace latency`'s mark names: a
 * file with the strings at awkward places (across every chunk boundary,
 * inside longer strings, cut by the end of the range) read with chunks of
 * every small size, and the test's own process, where a string literal of
 * this file must be found at its address.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "rodata_scan.h"

#define MAX_HITS 64
#define FILE_LEN 700

struct hits {
	unsigned int n;
	unsigned int which[MAX_HITS];
	uint64_t addr[MAX_HITS];
};

static int record(void *ctx, pid_t pid, unsigned int which, uint64_t addr)
{
	struct hits *h = ctx;

	(void)pid;
	if (h->n == MAX_HITS)
		return -E2BIG;
	h->which[h->n] = which;
	h->addr[h->n++] = addr;
	return 0;
}

static bool has(const struct hits *h, unsigned int which, uint64_t addr)
{
	unsigned int i;

	for (i = 0; i < h->n; i++)
		if (h->which[i] == which && h->addr[i] == addr)
			return true;
	return false;
}

static char tmp_path[] = "/tmp/test_rodata_scan.XXXXXX";
static char data[FILE_LEN];

/* Places `str` and its NUL at `at` in data. */
static void put(size_t at, const char *str)
{
	memcpy(data + at, str, strlen(str) + 1);
}

static void test_file(void)
{
	static const char *const strs[] = { "enqueue", "dequeue" };
	static const size_t chunks[] = { 1, 2, 3, 5, 7, 8, 64, 100, 4096, 0 };
	const uint64_t base = 0x7f0000001000ull;
	struct hits h;
	size_t c;
	int fd, n;

	memset(data, 'q', sizeof(data));
	put(0, "enqueue");		/* at the start */
	put(100, "xenqueue");		/* a tail: hit at 101 */
	put(200, "enqueue_not");	/* a prefix: no NUL after it */
	put(300, "dequeue");
	put(310, "dequeue");		/* two hits of one string */
	put(400, "enqueuedequeue");	/* "dequeue" at 407 only */
	put(FILE_LEN - 8, "dequeue");	/* its NUL is the last byte */
	fd = mkstemp(tmp_path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, data, sizeof(data)) == (ssize_t)sizeof(data));

	for (c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		memset(&h, 0, sizeof(h));
		n = rodata_scan__file(fd, 0, FILE_LEN + 4096, base, strs, 2,
				      chunks[c], record, &h);
		CHECK_U64(n, 6);
		CHECK_U64(h.n, 6);
		CHECK(has(&h, 0, base + 0));
		CHECK(has(&h, 0, base + 101));
		CHECK(has(&h, 1, base + 300));
		CHECK(has(&h, 1, base + 310));
		CHECK(has(&h, 1, base + 407));
		CHECK(has(&h, 1, base + FILE_LEN - 8));
		if (h.n != 6)
			printf("     chunk %zu\n", chunks[c]);
	}

	/* A range: file offsets [101, 317) appear at base. The "dequeue" at
	 * 310 has its NUL at 317, outside: not a hit. */
	memset(&h, 0, sizeof(h));
	n = rodata_scan__file(fd, 101, 216, base, strs, 2, 3, record, &h);
	CHECK_U64(n, 2);
	CHECK(has(&h, 0, base));
	CHECK(has(&h, 1, base + 300 - 101));
	/* Past the end of the file: nothing, no error. */
	CHECK_U64(rodata_scan__file(fd, FILE_LEN, 4096, base, strs, 2, 0,
				    record, &h), 0);
	/* The callback's error stops the scan. */
	memset(&h, 0, sizeof(h));
	h.n = MAX_HITS;
	CHECK_U64((uint64_t)(int64_t)rodata_scan__file(fd, 0, FILE_LEN, base,
							strs, 2, 0, record, &h),
		  (uint64_t)(int64_t)-E2BIG);
	close(fd);
	unlink(tmp_path);
}

/* In .rodata of this executable, at an address the scan must report. */
static const char literal[] = "sptrace-rodata-scan-test-literal";

static void test_self(void)
{
	const char *const strs[] = { literal, "sptrace-rodata-scan-no-such" };
	struct rodata_scan rs = { 0 };
	struct hits h = { 0 };
	int n;

	n = rodata_scan__pid(&rs, getpid(), strs, 2, record, &h);
	CHECK(n >= 1);
	CHECK(has(&h, 0, (uint64_t)(uintptr_t)literal));
	CHECK(rs.n > 0);
	/* Every mapping was read once: a second scan reads none. */
	memset(&h, 0, sizeof(h));
	CHECK_U64(rodata_scan__pid(&rs, getpid(), strs, 2, record, &h), 0);
	CHECK_U64(h.n, 0);
	rodata_scan__free(&rs);
	CHECK_U64((uint64_t)(int64_t)rodata_scan__pid(&rs, -5, strs, 2,
						       record, &h),
		  (uint64_t)(int64_t)-EINVAL);
}

int main(void)
{
	RUN(test_file);
	RUN(test_self);
	return check_status();
}
