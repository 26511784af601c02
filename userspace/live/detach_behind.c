// SPDX-License-Identifier: MIT
/*
 * Detaching behind sptrace's back, once nothing can hit the probes.
 *
 * WHY. Closing a uprobe link makes the kernel unregister its uprobes and
 * wait for an RCU grace period before close() returns: 200-400 ms at the
 * end of `sptrace -- cmd` on the 2-CPU VM, however the closes are spread
 * over threads, and exiting without closing does not help (the exiting
 * task closes its files itself, before its parent hears of it). When the
 * command and everything traced with it have exited, that wait buys
 * nothing: no process is left to run the sites.
 *
 * HOW. A grandchild (double fork: nobody has to reap it) keeps the links
 * and perf events open -- only those: its standard streams become
 * /dev/null and every other descriptor is closed, so a pipe reading
 * sptrace's output sees its end when sptrace exits, and a releaser
 * (stop_release.c) sees sptrace's end as before. sptrace's own closes
 * then only drop a reference. When sptrace closes the pipe this returns
 * (at its end, or when it dies), the grandchild exits, and the kernel
 * unregisters the uprobes there. The forked processes run only system
 * calls: the parent has threads, whose locks they may have copied.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "detach_behind.h"

/* What a descriptor's /proc/self/fd link says for the objects kept. */
static bool kept(int fd)
{
	static const char *const kinds[] = {
		"anon_inode:bpf_link",
		"anon_inode:[perf_event]",
	};
	char path[32] = "/proc/self/fd/", digits[12], target[64];
	int len = 14, nd = 0;
	ssize_t n;
	size_t i;

	/* No snprintf: it is not async-signal-safe. */
	do {
		digits[nd++] = (char)('0' + fd % 10);
		fd /= 10;
	} while (fd);
	while (nd)
		path[len++] = digits[--nd];
	path[len] = '\0';
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(target, kinds[i]))
			return true;
	return false;
}

/* Closes every descriptor but 0-2, `keep` and the BPF links and perf
 * events. */
static void close_others(int keep)
{
	char buf[4096];
	long n, pos;
	int dir;

	dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
		for (pos = 0; pos < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);
			const char *s = d->d_name;
			int fd = 0;

			pos += d->d_reclen;
			if (*s < '0' || *s > '9')
				continue;
			for (; *s >= '0' && *s <= '9'; s++)
				fd = fd * 10 + (*s - '0');
			if (fd > 2 && fd != keep && fd != dir && !kept(fd))
				close(fd);
		}
	close(dir);
}

static void keeper(int rfd)
{
	char c;
	int null = open("/dev/null", O_RDWR);

	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	prctl(PR_SET_NAME, "sptrace-detach");
	close_others(rfd);
	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

int detach_behind__start(void)
{
	int p[2], st, err;
	pid_t child;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0) {
		err = -errno;
		close(p[0]);
		close(p[1]);
		return err;
	}
	if (!child) {
		close(p[1]);
		child = fork();
		if (!child)
			keeper(p[0]);
		_exit(child < 0 ? 1 : 0);
	}
	close(p[0]);
	while (waitpid(child, &st, 0) < 0)
		if (errno != EINTR) {
			st = 1;
			break;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		close(p[1]);
		return -ECHILD;
	}
	return p[1];
}
