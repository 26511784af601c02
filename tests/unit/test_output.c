// SPDX-License-Identifier: MIT
/*
 * Unit tests of common/output.c, the one way sptrace creates a file: never
 * through a symlink, never over a file unless told, private (0600) even
 * when it replaces a file that was not, contents kept for a database.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include "check.h"
#include "output.h"

static char dir[] = "/tmp/sptrace_test_output.XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

static void make_file(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	CHECK(fd >= 0);
	CHECK(write(fd, "old", 3) == 3);
	CHECK(fchmod(fd, mode) == 0);	/* whatever the umask */
	close(fd);
}

static void test_new(void)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), "new");
	fd = output__create(p, OUTPUT_NEW);
	CHECK(fd >= 0);
	close(fd);
	CHECK_U64(mode_of(p), 0600);
	CHECK_U64(output__create(p, OUTPUT_NEW), -EEXIST);
}

/* --force: the old contents go, and so does an old, wider mode. */
static void test_replace_makes_private(void)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), "wide");
	make_file(p, 0644);
	CHECK_U64(mode_of(p), 0644);
	fd = output__create(p, OUTPUT_REPLACE);
	CHECK(fd >= 0);
	close(fd);
	CHECK_U64(mode_of(p), 0600);
	CHECK_U64(size_of(p), 0);
}

static void test_keep(void)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), "db");
	make_file(p, 0600);
	fd = output__create(p, OUTPUT_KEEP);
	CHECK(fd >= 0);
	close(fd);
	CHECK_U64(size_of(p), 3);
}

static void test_symlink_refused(void)
{
	char p[256], target[256];

	path_of(target, sizeof(target), "target");
	path_of(p, sizeof(p), "link");
	make_file(target, 0644);
	CHECK(symlink(target, p) == 0);
	CHECK_U64(output__create(p, OUTPUT_NEW), -EEXIST);
	CHECK_U64(output__create(p, OUTPUT_REPLACE), -ELOOP);
	CHECK_U64(output__create(p, OUTPUT_KEEP), -ELOOP);
	CHECK_U64(mode_of(target), 0644);
	CHECK_U64(size_of(target), 3);
}

/* What output__check() refuses before anything runs, and what it lets
 * through: a device that takes data, a new file in a directory. */
static void test_check(void)
{
	struct output_spec o = { .what = "-o" };
	char p[256];

	path_of(p, sizeof(p), "fresh");
	o.path = p;
	CHECK_U64(output__check(&o, 1, NULL, 0), 0);
	o.path = "/dev/null";
	CHECK_U64(output__check(&o, 1, NULL, 0), 0);
	o.path = "/dev/full";		/* ENOSPC to a write of nothing */
	CHECK_U64(output__check(&o, 1, NULL, 0), -EINVAL);
	o.path = "/proc/version";	/* a kernel interface, forced or not */
	CHECK_U64(output__check(&o, 1, NULL, 0), -EINVAL);
	o.force = true;
	CHECK_U64(output__check(&o, 1, NULL, 0), -EINVAL);
	o.path = "/sys/kernel/sptrace-test-nosuch";
	CHECK_U64(output__check(&o, 1, NULL, 0), -EINVAL);
}

/* A result kept: a new private file in $TMPDIR named after the output,
 * another name when that one is taken. */
static void test_keep_result(void)
{
	char a[4096], b[4096], want[300];
	int fa, fb;

	setenv("TMPDIR", dir, 1);
	fa = output__keep("/some/where/out.json", a, sizeof(a));
	fb = output__keep("/some/where/out.json", b, sizeof(b));
	CHECK(fa >= 0 && fb >= 0);
	snprintf(want, sizeof(want), "%s/sptrace-%d-out.json", dir,
		 (int)getpid());
	CHECK_STR(a, want);
	snprintf(want, sizeof(want), "%s/sptrace-%d-1-out.json", dir,
		 (int)getpid());
	CHECK_STR(b, want);
	CHECK_U64(mode_of(a), 0600);
	close(fa);
	close(fb);
	/* $TMPDIR unusable: /tmp. */
	setenv("TMPDIR", "/nonexistent-sptrace-dir", 1);
	fa = output__keep("stdout", a, sizeof(a));
	CHECK(fa >= 0 && !strncmp(a, "/tmp/sptrace-", 13));
	if (fa >= 0) {
		close(fa);
		unlink(a);
	}
	unsetenv("TMPDIR");
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_new);
	RUN(test_replace_makes_private);
	RUN(test_keep);
	RUN(test_symlink_refused);
	RUN(test_check);
	RUN(test_keep_result);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		printf("warning: %s not removed\n", dir);
	return check_status();
}
