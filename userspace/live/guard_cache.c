// SPDX-License-Identifier: MIT
/*
 * The site self-test's verdict for the rest of the boot.
 *
 * WHY. Which way a 5-byte-nop site is attached safely (site_guard.c) is a
 * property of the running kernel, yet its self-test forks scratch
 * children, loads a program and attaches uprobes: 50 to 120 ms of a
 * 2-CPU machine's time at every start, beside the BPF load it competes
 * with. The answer cannot change without a new kernel, so the first run
 * of a boot keeps it and the others read it.
 *
 * WHAT IS BELIEVED. The file names the boot (the kernel's random boot_id,
 * new at each boot), the kernel (release and build string) and this
 * sptrace's version; a mismatch in any is a stale verdict, tested again
 * and replaced. A wrong verdict could let a traced program's children
 * die, so the file is believed only when no other user could have
 * written it: the folder and the file owned by this user, writable by no
 * one else, no symbolic links followed. It lives in /run, which is
 * emptied at every boot anyway. Only the verdicts of a clean test are
 * kept (site_guard.c); a run with SPTRACE_SITE_GUARD=retest tests again
 * and replaces it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "guard_cache.h"

#define GUARD_CACHE_PATH "/run/sptrace/site-guard"
#define GUARD_CACHE_MAGIC "sptrace site guard 1"

const char *guard_cache__path(void)
{
	const char *e = getenv("SPTRACE_GUARD_CACHE");

	return e && *e ? e : GUARD_CACHE_PATH;
}

/* The lines that name this boot, kernel and sptrace, in key[0..n). */
static int boot_key(char *key, size_t n)
{
	char boot_id[64] = "";
	struct utsname u;
	FILE *f;
	int len;

	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (!f)
		return -errno;
	if (!fgets(boot_id, sizeof(boot_id), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	boot_id[strcspn(boot_id, "\n")] = '\0';
	if (uname(&u))
		return -errno;
	len = snprintf(key, n, "%s\nboot %s\nkernel %s %s\nsptrace %s\n",
		       GUARD_CACHE_MAGIC, boot_id, u.release, u.version,
		       SPTRACE_VERSION);
	return len > 0 && (size_t)len < n ? 0 : -ENAMETOOLONG;
}

/* The folder of the cache file, opened without following a link and
 * checked to be writable by this user alone; its fd, or -errno. With
 * `make`, a missing folder is made (0700). */
static int open_dir(const char *path, const char **base, int make)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat st;
	size_t len;
	int fd;

	if (!slash || !slash[1])
		return -EINVAL;
	len = slash == path ? 1 : (size_t)(slash - path);
	if (len >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, len);
	dir[len] = '\0';
	*base = slash + 1;
	if (make && mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int guard_cache__read(char *mode, size_t n)
{
	char key[512], buf[1024], *rest;
	const char *base;
	struct stat st;
	size_t klen, len;
	ssize_t got;
	int dfd, fd, err;

	err = boot_key(key, sizeof(key));
	if (err)
		return err;
	dfd = open_dir(guard_cache__path(), &base, 0);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	err = fd < 0 ? -errno : 0;
	close(dfd);
	if (err)
		return err;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return -EPERM;
	}
	got = read(fd, buf, sizeof(buf) - 1);
	err = -errno;
	close(fd);
	if (got < 0)
		return err;
	buf[got] = '\0';
	klen = strlen(key);
	if ((size_t)got <= klen || memcmp(buf, key, klen))
		return -ESTALE;
	/* The mode: the line after the key, and nothing after it. */
	rest = buf + klen;
	len = strlen(rest);
	if (!len || rest[len - 1] != '\n' || memchr(rest, '\n', len - 1) ||
	    len > n)
		return -ESTALE;
	rest[len - 1] = '\0';
	memcpy(mode, rest, len);
	return 0;
}

int guard_cache__write(const char *mode)
{
	char key[512], tmp[64];
	const char *base;
	int dfd, fd, err, len;
	FILE *f;

	err = boot_key(key, sizeof(key));
	if (err)
		return err;
	dfd = open_dir(guard_cache__path(), &base, 1);
	if (dfd < 0)
		return dfd;
	/* A file of its own per writer, renamed over the old one: a reader
	 * never sees half a verdict, two writers never mix theirs. */
	len = snprintf(tmp, sizeof(tmp), ".site-guard.%ld", (long)getpid());
	if (len < 0 || (size_t)len >= sizeof(tmp)) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		close(dfd);
		return err;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto cleanup;
	}
	fprintf(f, "%s%s\n", key, mode);
	if (fclose(f))
		err = -errno;
	if (!err && renameat(dfd, tmp, dfd, base))
		err = -errno;
cleanup:
	if (err)
		unlinkat(dfd, tmp, 0);
	close(dfd);
	return err;
}
