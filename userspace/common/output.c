// SPDX-License-Identifier: MIT
/* common/ layer (bottom: needs nothing of sptrace but log.c).
 * Files sptrace writes: O_NOFOLLOW always, O_EXCL unless --force, 0600. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "output.h"

/* O_TRUNC keeps an existing file's mode, but what sptrace writes is
 * private: 0600 for a regular file we own (a device or someone else's file
 * stays as it is). */
static int make_private(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) == 0600)
		return 0;
	return fchmod(fd, 0600) ? -errno : 0;
}

int output__create(const char *path, enum output_mode mode)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	int fd, err;

	if (mode == OUTPUT_NEW)
		flags |= O_EXCL;
	else if (mode == OUTPUT_REPLACE)
		flags |= O_TRUNC;
	fd = open(path, flags, 0600);
	if (fd < 0)
		return -errno;
	if (mode == OUTPUT_REPLACE) {
		err = make_private(fd);
		if (err) {
			close(fd);
			return err;
		}
	}
	return fd;
}

int output__open(const char *path, bool force, FILE **out)
{
	int fd, err;

	if (!path || !strcmp(path, "-")) {
		*out = stdout;
		return 0;
	}
	fd = output__create(path, force ? OUTPUT_REPLACE : OUTPUT_NEW);
	if (fd < 0) {
		err = fd;
		if (err == -EEXIST)
			sp_err("%s: file exists (use --force to overwrite)", path);
		else if (err == -ELOOP)
			sp_err("%s: is a symbolic link; refusing to write through it",
			       path);
		else
			sp_err("%s: cannot create: %s", path, strerror(-err));
		return err;
	}
	*out = fdopen(fd, "w");
	if (!*out) {
		err = -errno;
		close(fd);
		sp_err("%s: %s", path, strerror(-err));
		return err;
	}
	return 0;
}

int output__precheck(const char *path, bool force)
{
	struct stat st;

	if (!path || !strcmp(path, "-") || lstat(path, &st))
		return 0;
	if (S_ISLNK(st.st_mode)) {
		sp_err("%s: is a symbolic link; refusing to write through it",
		       path);
		return -ELOOP;
	}
	if (!force) {
		sp_err("%s: file exists (use --force to overwrite)", path);
		return -EEXIST;
	}
	return 0;
}

int output__close(FILE *f, const char *path)
{
	int err = 0;

	if (fflush(f) || ferror(f))
		err = errno ? -errno : -EIO;
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	if (err)
		sp_err("%s: write failed: %s", path ? path : "stdout",
		       strerror(-err));
	return err;
}
