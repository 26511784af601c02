/* SPDX-License-Identifier: MIT */
/*
 * Minimal unit-test checks: a failed CHECK prints a FAIL line with the file,
 * line and values, RUN() prints one ok/FAIL line per test function, and
 * check_status() is main()'s exit status (non-zero if anything failed).
 */
#ifndef SPTRACE_CHECK_H
#define SPTRACE_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned int check_failed;	/* in the whole program */

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__,	\
			       #cond);					\
			check_failed++;					\
		}							\
	} while (0)

#define CHECK_U64(got, want)						\
	do {								\
		uint64_t g_ = (got), w_ = (want);			\
		if (g_ != w_) {						\
			printf("FAIL %s:%d: %s == %" PRIu64		\
			       ", want %" PRIu64 "\n", __FILE__,	\
			       __LINE__, #got, g_, w_);			\
			check_failed++;					\
		}							\
	} while (0)

#define CHECK_STR(got, want)						\
	do {								\
		const char *g_ = (got), *w_ = (want);			\
		if (!g_ || strcmp(g_, w_)) {				\
			printf("FAIL %s:%d: %s == \"%s\", want \"%s\"\n",\
			       __FILE__, __LINE__, #got,		\
			       g_ ? g_ : "(null)", w_);			\
			check_failed++;					\
		}							\
	} while (0)

/* Runs one test function and reports it on one line. */
#define RUN(fn)								\
	do {								\
		unsigned int before_ = check_failed;			\
		fn();							\
		printf("%s %s\n", check_failed == before_ ? "ok  " : "FAIL",\
		       #fn);						\
	} while (0)

static inline int check_status(void)
{
	return check_failed ? 1 : 0;
}

/*
 * Runs the Python program `py` (no single quote in it) with `text` on its
 * standard input, for strict checks of the JSON the writers produce; its
 * standard output goes to out (cut at len - 1). Returns its exit status.
 */
static inline __attribute__((unused)) int check_python(const char *py,
							const char *text,
							char *out, size_t len)
{
	char path[] = "/tmp/sptrace-test-py-XXXXXX", *cmd;
	size_t n = strlen(text);
	FILE *p;
	int fd, status;

	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
		perror("mkstemp/write");
		exit(2);
	}
	close(fd);
	if (asprintf(&cmd, "python3 -c '%s' < %s", py, path) < 0)
		exit(2);
	p = popen(cmd, "r");
	if (!p) {
		perror("popen");
		exit(2);
	}
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	status = pclose(p);
	unlink(path);
	free(cmd);
	return status;
}

#endif /* SPTRACE_CHECK_H */
