// SPDX-License-Identifier: MIT
/*
 * Process titles of a session (titles.h). A process is titled again at
 * every scan, not only when first seen: a server's worker rewrites its
 * title right after the fork (the first sight may be the parent's), and
 * one that exits before the report keeps the last title it had alive.
 * That is one read of /proc/PID/cmdline per target per scan. Finding the targets mirrors
 * exited_rows__poll(): -p pids directly, -b files by the inode of
 * /proc/PID/exe, the launched command and, with --follow, every pid the
 * follow map holds; one pass over /proc every 200 ms at most. A process
 * that lives less than that (a PostgreSQL backend of a short connection)
 * has its title taken as it exits (exit_titles.c), where the kernel's BTF
 * allows.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "titles.h"
#include "clock.h"
#include "proc_title.h"
#include "log.h"
#include "session.h"

void titles__init(struct titles *t, struct summary *s,
		  const struct session *ss)
{
	struct stat st;

	*t = (struct titles){ .s = s, .ss = ss };
	if (!stat("/proc/self/exe", &st)) {
		t->self_dev = (uint64_t)st.st_dev;
		t->self_ino = (uint64_t)st.st_ino;
	}
}

/* Titles `pid` if it has no title yet or `again`; a process still running
 * sptrace (a launched command before its exec) is left for later. */
static int title_of(struct titles *t, uint32_t pid, bool again)
{
	char title[PROC_TITLE_MAX], path[64];
	struct stat st;

	if (!pid || (!again && summary__title(t->s, pid)))
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (!stat(path, &st) && (uint64_t)st.st_dev == t->self_dev &&
	    (uint64_t)st.st_ino == t->self_ino)
		return 0;
	if (proc_title__read((pid_t)pid, title))
		return 0;	/* gone: keeps what it had */
	return summary__set_title(t->s, pid, title);
}

static bool is_target(const struct titles *t, uint32_t pid)
{
	const struct session *ss = t->ss;
	const struct session_opts *o = ss->o;
	char path[64];
	struct stat st;
	int i;

	if (ss->launched && (uint32_t)ss->launch.pid == pid)
		return true;
	if (o->follow && follow__has(&ss->fol, (pid_t)pid))
		return true;
	if (!o->nbinaries)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (stat(path, &st))
		return false;
	for (i = 0; i < o->nbinaries; i++)
		if (ss->bin_ids[i].dev == (uint64_t)st.st_dev &&
		    ss->bin_ids[i].ino == (uint64_t)st.st_ino)
			return true;
	return false;
}

/* Said once for every way to fail. */
static int watch_err(int err)
{
	if (err)
		sp_err("--per-pid: cannot watch process exits for their titles: %s",
		       strerror(-err));
	return err;
}

int titles__watch_exits(struct titles *t)
{
	const struct session_opts *o = t->ss->o;
	char path[64];
	int i, err = exit_titles__open(&t->exits);

	for (i = 0; !err && i < o->nbinaries; i++)
		err = exit_titles__add_file(&t->exits, o->binaries[i]);
	for (i = 0; !err && i < o->npids; i++) {
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)o->pids[i]);
		err = exit_titles__add_file(&t->exits, path);
		if (err == -ENOENT || err == -ESRCH)
			err = 0;	/* gone: the session says so */
	}
	if (err)
		return watch_err(err);
	/* A failure is said with -v: the scans alone title then. */
	exit_titles__attach(&t->exits);
	return 0;
}

int titles__watch_command(struct titles *t)
{
	const struct session *ss = t->ss;

	return ss->launched ?
	       watch_err(exit_titles__add_file(&t->exits, ss->launch.path)) : 0;
}

static int exit_title(void *ctx, uint32_t pid, const char *title)
{
	struct titles *t = ctx;

	return summary__set_title(t->s, pid, title);
}

int titles__poll(struct titles *t)
{
	const struct session_opts *o = t->ss->o;
	uint64_t now = now_ns();
	struct dirent *de;
	int i, err = 0;
	DIR *d;

	if (now < t->next_scan_ns)
		return 0;
	t->next_scan_ns = now + 200000000ull;
	/* The exits first: a process gone since is not read again. */
	err = exit_titles__drain(&t->exits, exit_title, t);
	for (i = 0; !err && i < o->npids; i++)
		err = title_of(t, (uint32_t)o->pids[i], true);
	if (err || (!o->nbinaries && !o->follow && !t->ss->launched))
		return err;
	d = opendir("/proc");
	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!pid || *end || pid > UINT32_MAX)
			continue;
		if (is_target(t, (uint32_t)pid))
			err = title_of(t, (uint32_t)pid, true);
	}
	closedir(d);
	return err;
}

int titles__refresh(struct titles *t)
{
	unsigned int i;
	int err = exit_titles__drain(&t->exits, exit_title, t);

	for (i = 0; !err && i < t->s->nrows; i++)
		err = title_of(t, t->s->rows[i].pid, true);
	return err;
}

void titles__free(struct titles *t)
{
	exit_titles__close(&t->exits);
}
