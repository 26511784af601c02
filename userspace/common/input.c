// SPDX-License-Identifier: MIT
/* common/ layer (bottom): the one way sptrace opens a file it reads
 * (input.h). O_NONBLOCK keeps open() of a FIFO from waiting for a writer;
 * the file's type is then read from the open fd, not from a path that may
 * have changed since. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "input.h"

int input__open(const char *path)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (S_ISDIR(st.st_mode))
		err = -EISDIR;
	else if (!S_ISREG(st.st_mode))
		err = -EINPUT_NOTREG;
	else if (fcntl(fd, F_SETFL, 0))	/* blocking reads again */
		err = -errno;
	else
		return fd;
	close(fd);
	return err;
}

const char *input__strerror(int err)
{
	if (err == -EINPUT_NOTREG)
		return "not a regular file (a FIFO, a device or a socket, "
		       "which could block or never end: give a file)";
	return strerror(-err);
}
