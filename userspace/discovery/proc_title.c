// SPDX-License-Identifier: MIT
/*
 * Process titles from /proc/PID/cmdline (proc_title.h). The kernel gives
 * the bytes of the argv area as the process left them: a process that
 * rewrote its argv in place (PostgreSQL's ps_status.c, setproctitle) pads
 * the rest with NULs or spaces, and one that wrote past the argv area's
 * last NUL gets its text continued from the environment area. Reading a
 * bounded prefix and trimming the padding covers both.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "proc_pid.h"
#include "proc_title.h"

size_t proc_title__from_cmdline(const char *raw, size_t n,
				char buf[PROC_TITLE_MAX])
{
	const size_t keep = PROC_TITLE_MAX - 1;
	size_t i, len = 0;

	/* Padding, then the final NUL of the last argument. */
	while (n && (raw[n - 1] == '\0' || raw[n - 1] == ' '))
		n--;
	for (i = 0; i < n && len < keep; i++)
		buf[len++] = raw[i] ? raw[i] : ' ';
	if (i < n) {
		/* Cut: room for "...", not inside a UTF-8 sequence. */
		len = keep - 3;
		while (len && ((unsigned char)buf[len] & 0xc0) == 0x80)
			len--;
		memcpy(buf + len, "...", 3);
		len += 3;
	}
	buf[len] = 0;
	return len;
}

int proc_title__read(pid_t pid, char buf[PROC_TITLE_MAX])
{
	/* Enough to see that the title is longer than what is kept. */
	char path[64], raw[PROC_TITLE_MAX + 1];
	ssize_t n;
	int fd, err;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, raw, sizeof(raw));
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	return proc_title__from_cmdline(raw, (size_t)n, buf) ? 0 : -ENOENT;
}

bool proc_title__inherited(pid_t pid, const char *title)
{
	char parent[PROC_TITLE_MAX];
	uint64_t start;
	int ppid;

	if (proc_pid__start_time((int)pid, &start, &ppid) || ppid <= 1)
		return false;
	return !proc_title__read((pid_t)ppid, parent) && !strcmp(parent, title);
}
