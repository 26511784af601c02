// SPDX-License-Identifier: MIT
/* Output files: O_NOFOLLOW always, O_EXCL unless --force, mode 0600. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "output.h"

int output__open(const char *path, bool force, FILE **out)
{
	int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
	int fd, err;

	if (!path || !strcmp(path, "-")) {
		*out = stdout;
		return 0;
	}
	flags |= force ? O_TRUNC : O_EXCL;
	fd = open(path, flags, 0600);
	if (fd < 0) {
		err = -errno;
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
