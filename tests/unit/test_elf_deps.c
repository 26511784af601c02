// SPDX-License-Identifier: MIT
/*
 * The DT_NEEDED closure (discovery/elf_deps.c) of real programs: a library
 * found through RUNPATH $ORIGIN, through LD_LIBRARY_PATH, or missing; the
 * loader and libc through ld.so.conf and the default directories; whether
 * a program can load more later (dlopen, exec).
 *
 *   test_elf_deps GROUNDTRUTH LIBGTHOST DLOPEN_HOST
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "elf_deps.h"

static const char *gt, *gtlib, *dlhost;

/* The closure holds a file of this base name; its path, or NULL. */
static const char *has(const struct elf_deps *d, const char *base)
{
	size_t i;
	const char *b;

	for (i = 0; i < d->n; i++) {
		b = strrchr(d->paths[i], '/');
		if (!strcmp(b ? b + 1 : d->paths[i], base))
			return d->paths[i];
	}
	return NULL;
}

static void same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	CHECK(a && b && realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb));
}

/* groundtruth: RUNPATH $ORIGIN/ finds libgthost.so next to it; libc and
 * the loader come from the system directories. */
static void test_origin(void)
{
	struct elf_deps d;

	unsetenv("LD_LIBRARY_PATH");
	CHECK(elf_deps__closure(gt, &d) == 0);
	CHECK_STR(d.paths[0], gt);
	same_file(has(&d, "libgthost.so"), gtlib);
	CHECK(has(&d, "libc.so.6") != NULL);
	CHECK(has(&d, "ld-linux-x86-64.so.2") != NULL ||
	      has(&d, "ld-linux-aarch64.so.1") != NULL);
	CHECK_U64(d.nmissing, 0);
	/* Neither it nor its libraries dlopen or exec (libc defines those,
	 * it does not import them). */
	CHECK(!d.loads_later);
	elf_deps__free(&d);
}

/* A copy away from its library: the name is missing, until
 * LD_LIBRARY_PATH names the library's folder. */
static void test_missing_and_env(void)
{
	char dir[] = "/tmp/elfdepsXXXXXX", copy[PATH_MAX], libdir[PATH_MAX];
	char cmd[PATH_MAX * 3];
	struct elf_deps d;
	char *slash;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(copy, sizeof(copy), "%s/gt", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", gt, copy);
	CHECK(system(cmd) == 0);
	unsetenv("LD_LIBRARY_PATH");
	CHECK(elf_deps__closure(copy, &d) == 0);
	CHECK_U64(d.nmissing, 1);
	if (d.nmissing)
		CHECK_STR(d.missing[0], "libgthost.so");
	CHECK(has(&d, "libgthost.so") == NULL);
	elf_deps__free(&d);

	snprintf(libdir, sizeof(libdir), "%s", gtlib);
	slash = strrchr(libdir, '/');
	if (slash)
		*slash = 0;
	setenv("LD_LIBRARY_PATH", libdir, 1);
	CHECK(elf_deps__closure(copy, &d) == 0);
	CHECK_U64(d.nmissing, 0);
	same_file(has(&d, "libgthost.so"), gtlib);
	elf_deps__free(&d);
	unsetenv("LD_LIBRARY_PATH");
	unlink(copy);
	rmdir(dir);
}

/* dlopen_host imports dlopen; /bin/sh an exec function. */
static void test_loads_later(void)
{
	struct elf_deps d;

	CHECK(elf_deps__closure(dlhost, &d) == 0);
	CHECK(d.loads_later);
	CHECK(d.late_why && strstr(d.late_why, "imports dlopen"));
	elf_deps__free(&d);
	CHECK(elf_deps__closure("/bin/sh", &d) == 0);
	CHECK(d.loads_later);
	CHECK(d.late_why && strstr(d.late_why, "imports exec"));
	elf_deps__free(&d);
}

static void test_errors(void)
{
	struct elf_deps d;
	char dir[] = "/tmp/elfdepsXXXXXX", f[PATH_MAX];
	FILE *fp;

	CHECK(elf_deps__closure("/nonexistent/x", &d) == -ENOENT);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(f, sizeof(f), "%s/script", dir);
	fp = fopen(f, "w");
	CHECK(fp != NULL);
	if (fp) {
		fputs("#!/bin/sh\n", fp);
		fclose(fp);
	}
	CHECK(elf_deps__closure(f, &d) == -ENOEXEC);
	unlink(f);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: test_elf_deps GROUNDTRUTH LIBGTHOST DLOPEN_HOST\n");
		return 2;
	}
	gt = argv[1];
	gtlib = argv[2];
	dlhost = argv[3];
	RUN(test_origin);
	RUN(test_missing_and_env);
	RUN(test_loads_later);
	RUN(test_errors);
	return check_status();
}
