// SPDX-License-Identifier: MIT
/*
 * Unit test of the /proc/PID/maps reader: a maps file written here with the
 * awkward cases the kernel produces (names with spaces, " (deleted)", pseudo
 * names, a name past 4 KiB, no name at all), malformed lines, and the
 * process's own maps, where the code running this test must show up mapped
 * from the test binary.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "proc_maps.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PAD "                         "	/* the kernel pads to a column */

static char tmp_path[] = "/tmp/test_proc_maps.XXXXXX";
static char long_path[6000];

/* Replaces the temporary file's contents with text. */
static int write_tmp(const char *text)
{
	FILE *fp = fopen(tmp_path, "w");
	int err = 0;

	if (!fp)
		return -errno;
	if (fputs(text, fp) == EOF)
		err = -EIO;
	if (fclose(fp))
		err = -errno;
	return err;
}

static char *fixture_text(void)
{
	static const char head[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234" PAD "/usr/bin/foo bar\n"
	"55d0c0a02000-55d0c0a05000 r-xp 00002000 08:01 1234" PAD "/usr/bin/foo bar\n"
	"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
	"7f0000001000-7f0000002000 r-xp 00000000 fd:02 99" PAD "/tmp/lib x.so (deleted)\n"
	"556000000000-556000021000 rw-p 00000000 00:00 0" PAD "[heap]\n"
	"7f0000010000-7f0000030000 r--p 00000000 fd:02 77" PAD "/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000030000-7f0000040000 r-xp 00020000 fd:02 77" PAD "/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f0000050000-7f0000051000 r-xp 00000000 08:01 4242 ";
	static const char tail[] =
	"\n"
	"7f0000060000-7f0000061000 r--p 00000000 08:01 55" PAD "/usr/share/locale/data\n"
	"7f0000070000-7f0000071000 r-xp 00003000 08:01 1234" PAD "/usr/bin/foo bar\n"
	"7f0000080000-7f0000081000 r-xp 00000000 08:01 66" PAD "/usr/lib/libold.so (deleted)\n"
	"7f0000090000-7f0000091000 r--p 00000000 08:01 67" PAD "/usr/lib/libold.so\n"
	"7f00000a0000-7f00000a1000 r-xp 00000000 00:01 1025" PAD "/memfd:jit (deleted)\n"
	"7f00000b0000-7f00000b1000 r-xp 00000000 08:01 68" PAD "/opt/a  b/c \n"
	"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0" PAD "[vdso]\n"
	"7ffd00010000-7ffd00011000 rw-p 00000000 00:00 0\n"
	/* The last line of a file may lack its newline. */
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0" PAD "[vsyscall]";
	size_t len = strlen(head) + strlen(long_path) + strlen(tail) + 1;
	char *s = malloc(len);

	if (s)
		snprintf(s, len, "%s%s%s", head, long_path, tail);
	return s;
}

static void test_fixture(void)
{
	struct proc_maps m = { 0 };
	const struct proc_mapping *v;
	const struct proc_mapping **files = NULL;
	char *text = fixture_text();
	size_t n = 0;

	CHECK(text && !write_tmp(text));
	free(text);
	CHECK(proc_maps__read_file(tmp_path, &m) == 0);
	CHECK_U64(m.n, 17);
	if (m.n != 17)
		goto cleanup;
	v = m.v;

	CHECK_U64(v[1].start, 0x55d0c0a02000);
	CHECK_U64(v[1].end, 0x55d0c0a05000);
	CHECK_U64(v[1].pgoff, 0x2000);
	CHECK_U64(v[1].dev_major, 8);
	CHECK_U64(v[1].dev_minor, 1);
	CHECK_U64(v[1].inode, 1234);
	CHECK_STR(v[1].perms, "r-xp");
	CHECK_STR(v[1].path, "/usr/bin/foo bar");
	CHECK(!v[1].deleted);

	CHECK(v[2].path == NULL);	/* anonymous, trailing blank */
	CHECK_STR(v[2].perms, "rw-p");
	CHECK(v[15].path == NULL);	/* anonymous, no trailing blank */

	CHECK_STR(v[3].path, "/tmp/lib x.so");
	CHECK(v[3].deleted);
	CHECK_U64(v[3].dev_major, 0xfd);
	CHECK_U64(v[3].dev_minor, 2);

	CHECK_STR(v[4].path, "[heap]");
	CHECK_STR(v[7].path, long_path);
	CHECK_U64(v[7].inode, 4242);
	CHECK_STR(v[13].path, "/opt/a  b/c ");
	CHECK_STR(v[12].path, "/memfd:jit");
	CHECK(v[12].deleted);
	CHECK_STR(v[14].path, "[vdso]");

	CHECK_U64(v[16].start, 0xffffffffff600000);
	CHECK_U64(v[16].end, 0xffffffffff601000);
	CHECK_STR(v[16].perms, "--xp");
	CHECK_STR(v[16].path, "[vsyscall]");

	/* First-mapping order, one per file (device and inode); no pseudo
	 * or never-'x' files. Deleted files count (the process runs them):
	 * libold.so's deleted inode 66 is executable, its successor 67 under
	 * the same path is not. */
	CHECK(proc_maps__exec_files(&m, &files, &n) == 0);
	CHECK_U64(n, 7);
	if (n == 7) {
		CHECK_STR(files[0]->path, "/usr/bin/foo bar");
		CHECK_STR(files[1]->path, "/tmp/lib x.so");
		CHECK(files[1]->deleted);
		CHECK_STR(files[2]->path, "/lib/x86_64-linux-gnu/libc.so.6");
		CHECK_STR(files[3]->path, long_path);
		CHECK_STR(files[4]->path, "/usr/lib/libold.so");
		CHECK_U64(files[4]->inode, 66);
		CHECK(files[4]->deleted);
		CHECK_STR(files[5]->path, "/memfd:jit");
		CHECK_STR(files[6]->path, "/opt/a  b/c ");
		/* The first mapping of each, inside m, as documented. */
		CHECK(files[0] == &v[0]);
	}
	free(files);
cleanup:
	proc_maps__free(&m);
	CHECK(m.v == NULL && m.n == 0);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
		"garbage\n",
		"\n",
		"1000 2000 r-xp 00000000 00:00 0\n",
		"1000-2000 r-xp 00000000 00:00\n",
		"1000-2000 r-xp 00000000 00:00 0x\n",
		"1000-2000 r-x 00000000 00:00 0\n",
		"1000-2000 rwxq 00000000 00:00 0\n",
		"1000-2000 r-xp 00000000 00-00 0\n",
		"-1000-2000 r-xp 00000000 00:00 0\n",
		" 1000-2000 r-xp 00000000 00:00 0\n",
		"10000000000000000-10000000000000001 r-xp 0 0:0 0\n",
		"2000-1000 r-xp 00000000 00:00 0\n",
		"1000-2000 r-xp 00000000 00:00 99999999999999999999 /x\n",
		/* One good line does not save a bad one. */
		"1000-2000 r-xp 00000000 00:00 0 /bin/true\nnonsense\n",
	};
	struct proc_maps m;
	size_t i;
	int rc;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		CHECK(!write_tmp(bad[i]));
		m.v = (void *)1;
		m.n = 42;
		rc = proc_maps__read_file(tmp_path, &m);
		CHECK(rc == -EINVAL);
		if (rc != -EINVAL)
			printf("  case %zu gave %d\n", i, rc);
		CHECK(m.v == NULL && m.n == 0);
		proc_maps__free(&m);
	}
}

static void test_empty_and_missing(void)
{
	struct proc_maps m;
	const struct proc_mapping **files = (const struct proc_mapping **)1;
	size_t n = 1;

	CHECK(!write_tmp(""));
	CHECK(proc_maps__read_file(tmp_path, &m) == 0);
	CHECK_U64(m.n, 0);
	CHECK(proc_maps__exec_files(&m, &files, &n) == 0);
	CHECK(files == NULL && n == 0);
	proc_maps__free(&m);
	CHECK(proc_maps__read_file("/nonexistent/maps", &m) == -ENOENT);
	CHECK(proc_maps__read(0, &m) == -EINVAL);
	CHECK(proc_maps__read(-1, &m) == -EINVAL);
	/* Above any pid_max the kernel allows (2^22). */
	CHECK(proc_maps__read(0x7ffffff0, &m) == -ENOENT);
}

static void test_self(void)
{
	uintptr_t here = (uintptr_t)&test_self;
	char exe[PATH_MAX];
	const struct proc_mapping **files = NULL;
	struct proc_maps m;
	bool found_code = false, found_exe = false;
	ssize_t len;
	size_t i, n = 0;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(len > 0);
	if (len <= 0)
		return;
	exe[len] = '\0';
	CHECK(proc_maps__read(getpid(), &m) == 0);
	for (i = 0; i < m.n; i++) {
		if (here < m.v[i].start || here >= m.v[i].end)
			continue;
		found_code = true;
		CHECK(m.v[i].perms[2] == 'x');
		CHECK_STR(m.v[i].path, exe);
	}
	CHECK(found_code);
	CHECK(proc_maps__exec_files(&m, &files, &n) == 0);
	for (i = 0; i < n; i++)
		found_exe |= !strcmp(files[i]->path, exe);
	CHECK(found_exe);
	free(files);
	proc_maps__free(&m);
}

/* A zombie has no memory map any more; a reaped process has no /proc dir. */
static void test_gone(void)
{
	struct proc_maps m;
	siginfo_t info;
	pid_t pid;

	pid = fork();
	CHECK(pid >= 0);
	if (pid < 0)
		return;
	if (pid == 0)
		_exit(0);
	CHECK(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) == 0);
	CHECK(proc_maps__read(pid, &m) == -ESRCH);
	CHECK(waitpid(pid, NULL, 0) == pid);
	CHECK(proc_maps__read(pid, &m) == -ENOENT);
}

int main(void)
{
	int fd;

	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	memcpy(long_path + sizeof(long_path) - 12, "/libbig.so", 11);
	fd = mkstemp(tmp_path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	RUN(test_fixture);
	RUN(test_malformed);
	RUN(test_empty_and_missing);
	RUN(test_self);
	RUN(test_gone);
	unlink(tmp_path);
	return check_status();
}
