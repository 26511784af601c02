// SPDX-License-Identifier: MIT
/*
 * What a PID names (proc_pid.h). /proc/PID/stat is "pid (comm) state ppid
 * ... flags ... starttime ...": comm is whatever the process named itself,
 * blanks and parentheses included, so the fields are counted from the last
 * ')'. The numbers are parsed whole (strtoull with errno), never guessed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "proc_maps.h"
#include "proc_pid.h"

/* include/linux/sched.h: the task is a kernel thread. Not in UAPI. */
#define PF_KTHREAD 0x00200000u

/* Field i (0: state) after comm, as a number. */
static int stat_field(const char *after, int i, uint64_t *v)
{
	const char *p = after;
	char *end;

	for (; i > 0 && p; i--) {
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	if (!p || *p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end))
		return -EINVAL;
	return 0;
}

int proc_pid__parse_stat(const char *text, struct proc_pid_stat *st)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	uint64_t ppid, utime, stime;
	size_t n;

	memset(st, 0, sizeof(*st));
	if (!open || !close || close < open || close[1] != ' ' || !close[2])
		return -EINVAL;
	n = (size_t)(close - open - 1);
	if (n >= sizeof(st->comm))
		n = sizeof(st->comm) - 1;
	memcpy(st->comm, open + 1, n);
	st->comm[n] = 0;
	st->state = close[2];
	/* After ") ": state (0), ppid (1), ... flags (6), ... utime (11),
	 * stime (12), ... starttime (19). */
	if (stat_field(close + 2, 1, &ppid) || ppid > INT32_MAX ||
	    stat_field(close + 2, 6, &st->flags) ||
	    stat_field(close + 2, 11, &utime) ||
	    stat_field(close + 2, 12, &stime) ||
	    stat_field(close + 2, 19, &st->start_ticks))
		return -EINVAL;
	st->ppid = (int)ppid;
	st->cpu_ticks = utime + stime;
	return 0;
}

int proc_pid__stat(int pid, struct proc_pid_stat *st)
{
	char path[32], buf[1024];
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return err == ESRCH ? -ENOENT : -err;
	buf[n] = 0;
	return proc_pid__parse_stat(buf, st);
}

int proc_pid__start_time(int pid, uint64_t *ticks, int *ppid)
{
	struct proc_pid_stat st;
	int err = proc_pid__stat(pid, &st);

	if (err)
		return err;
	*ticks = st.start_ticks;
	*ppid = st.ppid;
	return 0;
}

int proc_pid__cpu_ns(int pid, uint64_t *ns)
{
	struct timespec t;
	clockid_t id;
	int err = clock_getcpuclockid((pid_t)pid, &id);

	if (err)
		return -err;
	if (clock_gettime(id, &t))
		return errno == EINVAL ? -ESRCH : -errno;
	*ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
	return 0;
}

uint64_t proc_pid__ticks_ns(uint64_t ticks)
{
	static long hz;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	return ticks * (hz > 0 ? 1000000000ull / (uint64_t)hz : 10000000ull);
}

const char *proc_pid__comm(int pid, char *buf, size_t len)
{
	char path[32];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (!buf[0])
		snprintf(buf, len, "?");
	return buf;
}

/* A capability set from /proc/PID/status ("CapEff:", "CapPrm:"); 0 if
 * unreadable. pid 0: this process. */
static uint64_t status_caps(int pid, const char *field)
{
	char path[32], line[256];
	uint64_t v = 0;
	size_t flen = strlen(field);
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, flen)) {
			v = strtoull(line + flen, NULL, 16);
			break;
		}
	fclose(f);
	return v;
}

/* For the walk over the mapped files: -errno if one cannot be opened. */
static int open_mapped(void *ctx, const char *open_path, const char *path)
{
	int fd = open(open_path, O_RDONLY | O_CLOEXEC);

	(void)ctx;
	(void)path;
	if (fd < 0)
		return errno == EACCES || errno == EPERM ? -errno : 0;
	close(fd);
	return 0;
}

/* linux/capability.h */
#define CAP_SYS_PTRACE_BIT 19

/* Why the kernel refused us its maps, as far as we can tell: without
 * CAP_SYS_PTRACE, another user's process needs it; with it, a target
 * holding capabilities we lack needs it in the target's user namespace
 * (ours may not be), or a security module said no. */
static void denied_hint(int pid, char *buf, size_t len)
{
	uint64_t ours = status_caps(0, "CapEff:");
	uint64_t more = status_caps(pid, "CapPrm:") & ~ours;

	if (!(ours >> CAP_SYS_PTRACE_BIT & 1))
		snprintf(buf, len, geteuid() ? "needs root or CAP_SYS_PTRACE" :
			 "needs CAP_SYS_PTRACE, which this root process lacks");
	else if (more)
		snprintf(buf, len, "it holds capabilities sptrace lacks (mask "
			 "0x%llx), and CAP_SYS_PTRACE here does not cover it: "
			 "another user namespace, or a security module",
			 (unsigned long long)more);
	else
		snprintf(buf, len, "refused despite CAP_SYS_PTRACE: a security "
			 "module, or another user namespace");
}

int proc_pid__traceable(int pid, char *why, size_t len)
{
	struct proc_pid_stat st;
	char path[32], what[64], c;
	ssize_t n;
	int fd, err;

	err = proc_pid__stat(pid, &st);
	if (err == -ENOENT) {
		snprintf(why, len, "no such process (check the PID)");
		return -ENOENT;
	}
	if (err) {
		snprintf(why, len, "cannot read /proc/%d/stat: %s", pid,
			 strerror(-err));
		return err;
	}
	if (st.flags & PF_KTHREAD) {
		snprintf(why, len, "a kernel thread, which runs no program to "
			 "trace (give the PID of a user process)");
		return -EINVAL;
	}
	if (st.state == 'Z' || st.state == 'X') {
		snprintf(why, len, "a zombie: it has exited, and its parent "
			 "has not reaped it yet (nothing runs to trace)");
		return -ESRCH;
	}
	/* Attaching reads maps, then opens each mapped file through
	 * map_files or the process's root, each with its own access check:
	 * the same walk, opening each file. */
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	snprintf(what, sizeof(what), "its mappings (%s)", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, &c, 1);
	err = n < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (!n) {
		snprintf(why, len, "exited (check the PID)");
		return -ESRCH;
	}
	if (!err) {
		err = proc_maps__for_each_exec_file(pid, open_mapped, NULL);
		err = err < 0 ? -err : 0;	/* else a count of files */
		snprintf(what, sizeof(what), "the files it maps "
			 "(/proc/%d/map_files)", pid);
	}
	if (err == EACCES || err == EPERM) {
		char hint[192];

		denied_hint(pid, hint, sizeof(hint));
		snprintf(why, len, "cannot read %s: %s (%s)", what,
			 strerror(err), hint);
		return -EACCES;
	}
	if (err == ENOENT || err == ESRCH) {
		snprintf(why, len, "exited (check the PID)");
		return -ESRCH;
	}
	if (err) {
		snprintf(why, len, "cannot read %s: %s", what, strerror(err));
		return -err;
	}
	return 0;
}
