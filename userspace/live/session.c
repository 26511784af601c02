// SPDX-License-Identifier: MIT
/*
 * One tracing session: the targets (running processes, or a command it
 * launches), signals, the clock, and the providers (BPF program families,
 * see struct session_provider) that attach to those targets.
 *
 * Counting is gated: providers are armed once every site is attached and
 * disarmed before any is detached. Sites are attached and detached one link
 * at a time, and without the gate an END attached before its BEGIN (or left
 * after it) would be counted as unbalanced. A launched command execs only
 * once the gate is open, so its first probe is seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "parse.h"
#include "clock.h"
#include "detach_behind.h"
#include "elf_notes.h"
#include "history_db.h"
#include "launch.h"
#include "log.h"
#include "privileges.h"
#include "proc_maps.h"
#include "proc_pid.h"
#include "run_store.h"
#include "session.h"
#include "site_guard.h"
#include "spec_precheck.h"
#include "vec.h"

/*
 * -p PID[,PID...]: every element a plain decimal number (no sign, no space,
 * nothing empty), so a typo is an error instead of a guess. A PID given
 * twice (-p P,P or -p P -p P) is one target: attaching it twice would make
 * the second attach find its sites taken.
 */
static int parse_pids(struct session_opts *o, const char *arg)
{
	const char *p = arg, *end;
	char tok[32];
	size_t len;
	long v;
	int i;

	do {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (!len) {
			sp_err("invalid PID list '%s': %s (expected PID[,PID...])",
			       arg, !*arg ? "empty" : p == arg ?
			       "nothing before the first comma" : end ?
			       "nothing between two commas" :
			       "nothing after the last comma");
			return -EINVAL;
		}
		snprintf(tok, sizeof(tok), "%.*s", (int)(len < sizeof(tok) ? len :
						       sizeof(tok) - 1), p);
		if (len >= sizeof(tok) || strspn(tok, "0123456789") != len ||
		    parse_long(tok, 1, INT_MAX, &v)) {
			sp_err("invalid PID '%.*s' (expected a positive decimal "
			       "number, or a comma-separated list)", (int)len, p);
			return -EINVAL;
		}
		for (i = 0; i < o->npids && o->pids[i] != (pid_t)v; i++)
			;
		if (i == o->npids) {
			if (o->npids == SESSION_MAX_PIDS) {
				sp_err("too many PIDs (at most %d)",
				       SESSION_MAX_PIDS);
				return -EINVAL;
			}
			o->pids[o->npids++] = (pid_t)v;
		}
		p = end ? end + 1 : NULL;
	} while (p);
	return 0;
}

/* -b PATH: the same file given twice (by the same or another path) is one
 * target, attached once. */
static int add_binary(struct session_opts *o, const char *path)
{
	struct stat a, b;
	int i;

	for (i = 0; i < o->nbinaries; i++) {
		if (!strcmp(o->binaries[i], path))
			return 0;
		if (!stat(o->binaries[i], &a) && !stat(path, &b) &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return 0;
	}
	if (o->nbinaries == SESSION_MAX_PIDS) {
		sp_err("too many -b (at most %d)", SESSION_MAX_PIDS);
		return -EINVAL;
	}
	o->binaries[o->nbinaries++] = path;
	return 0;
}

int session_opts__parse(struct session_opts *o, int c, const char *arg)
{
	long v;

	switch (c) {
	case 'p':
		return parse_pids(o, arg) ? -EINVAL : 1;
	case 'b':
		return add_binary(o, arg) ? -EINVAL : 1;
	case 'd':
		if (parse_double(arg, 0.001, 1e9, &o->duration_s)) {
			sp_err("invalid duration '%s' (expected seconds, from 0.001 "
			       "to 1e9)", arg);
			return -EINVAL;
		}
		return 1;
	case 0x1003:
		if (o->nfuncs == SESSION_MAX_FUNCS) {
			sp_err("too many --func (at most %d)", SESSION_MAX_FUNCS);
			return -EINVAL;
		}
		if (!*arg || arg[strlen(arg) - 1] == ':') {
			sp_err("invalid --func '%s' (expected GLOB or LIB:GLOB)", arg);
			return -EINVAL;
		}
		o->funcs[o->nfuncs++] = arg;
		return 1;
	case 0x1004:
		o->func_unsafe = true;
		return 1;
	case 0x1005: {
		struct query_spec *v = realloc(o->qspecs, (size_t)(o->nqspecs + 1) *
							      sizeof(*v));

		if (!v)
			return -ENOMEM;
		o->qspecs = v;
		if (query_spec__parse(arg, "--query", &v[o->nqspecs]))
			return -EINVAL;
		o->nqspecs++;
		return 1;
	}
	case 0x1006:
		return query_spec__read_file(arg, &o->qspecs, &o->nqspecs) ?
			       -EINVAL : 1;
	case 0x1007:
		o->follow = true;
		return 1;
	case 0x1008:
		o->query_keys = true;
		return 1;
	case 0x1009:
		if (parse_double(arg, 0.01, 100, &o->max_overhead)) {
			sp_err("invalid --max-overhead '%s' (expected a percentage of each traced process's CPU time, from 0.01 to 100)",
			       arg);
			return -EINVAL;
		}
		return 1;
	case 0x1001:
	case 0x1002:
		if (parse_long(arg, 16, 1 << 24, &v)) {
			sp_err("invalid %s '%s' (expected 16..16777216)",
			       c == 0x1001 ? "--max-queries" : "--max-threads",
			       arg);
			return -EINVAL;
		}
		if (c == 0x1001)
			o->max_queries = (unsigned int)v;
		else
			o->max_threads = (unsigned int)v;
		return 1;
	}
	return 0;
}

void session_opts__free(struct session_opts *o)
{
	int i;

	for (i = 0; i < o->nqspecs; i++)
		query_spec__free(&o->qspecs[i]);
	free(o->qspecs);
	o->qspecs = NULL;
	o->nqspecs = 0;
}

/* Every -p PID a live user process whose mappings we may read: one line
 * each that is not. Without the privileges to trace (said already), files
 * we may not read are the same problem, not another line. 0 or -EINVAL. */
static int check_pids(const struct session_opts *o, bool privileged)
{
	char why[256], comm[64];
	int i, e, err = 0;

	for (i = 0; i < o->npids; i++) {
		e = proc_pid__traceable((int)o->pids[i], why, sizeof(why));
		if (!e || (e == -EACCES && !privileged))
			continue;
		if (e == -ENOENT)	/* no comm to name */
			sp_err("pid %d: %s", (int)o->pids[i], why);
		else
			sp_err("pid %d (%s): %s", (int)o->pids[i],
			       proc_pid__comm((int)o->pids[i], comm, sizeof(comm)),
			       why);
		err = -EINVAL;
	}
	return err;
}

int session_opts__check(const struct session_opts *o)
{
	if (!o->npids && !o->cmd && !o->nbinaries) {
		sp_err("nothing to trace: give -p PID, -b PATH or -- CMD (see --help)");
		return -EINVAL;
	}
	if (!!o->npids + !!o->cmd + !!o->nbinaries > 1) {
		sp_err("give one of -p PID, -b PATH and -- CMD");
		return -EINVAL;
	}
	if (query_spec__check_unique(o->qspecs, o->nqspecs))
		return -EINVAL;
	if (o->query_keys && o->record) {
		sp_err("--query-keys: not with record (a recording keeps each query's name, not its key; use sptrace -- CMD or sptrace serve)");
		return -EINVAL;
	}
	if (o->max_overhead && o->record) {
		sp_err("--max-overhead: not with record (a recording keeps every event; sampling would leave gaps no reader can see)");
		return -EINVAL;
	}
	if (o->follow && !o->cmd && !o->npids) {
		sp_err("--follow follows the processes a command or a -p PID starts (use: sptrace --follow -- CMD, or -p PID --follow; -b traces every process of a file already)");
		return -EINVAL;
	}
	return 0;
}

/*
 * Which program image a process runs, to notice an exec: a hash of its
 * auxiliary vector, which the kernel builds anew at each exec (the
 * addresses of AT_RANDOM's bytes, of the vDSO and of the entry point are
 * randomized per exec). 0 when unreadable (the process is gone). With ASLR
 * off, a program that execs its own file again is not noticed.
 */
static uint64_t exec_id(pid_t pid)
{
	unsigned char buf[1024];
	uint64_t h = 14695981039346656037ull;	/* FNV-1a */
	char path[64];
	ssize_t n, i;
	int fd;

	/* Every 50 ms: no stdio, so nothing is allocated per tick. */
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	for (i = 0; i < n; i++)
		h = (h ^ buf[i]) * 1099511628211ull;
	return n > 0 ? h : 0;
}

/*
 * --func GLOB (no LIB:) applies to the executable, which is known before
 * anything runs: a glob that matches none of its functions is a typo, and
 * says so now rather than after the run. LIB:GLOB waits for the libraries
 * (query_provider__check()).
 */
static int precheck_funcs(const struct session_opts *o, const char *exe,
			  const char *shown)
{
	struct elf_functions fns;
	int k, err = 0;

	for (k = 0; k < o->nfuncs; k++) {
		if (strchr(o->funcs[k], ':'))
			continue;
		if (elf_functions(exe, o->funcs[k], &fns))
			continue;	/* unreadable: the attach says why */
		if (!fns.n) {
			sp_err("--func '%s': no function of %s matches "
			       "(readelf -Ws FILE lists a file's functions)",
			       o->funcs[k], shown);
			err = -EINVAL;
		}
		elf_functions__free(&fns);
	}
	return err;
}

int session_opts__precheck(const struct session_opts *o)
{
	struct stat st;
	char *path;
	int i, err = 0, e;

	/* The privileges first: one run as a user reports them with every
	 * other problem of the command line. */
	if (privileges__check())
		err = -EINVAL;
	if (check_pids(o, !err))
		err = -EINVAL;
	for (i = 0; i < o->nbinaries; i++) {
		if (stat(o->binaries[i], &st)) {
			e = errno;
			sp_err("-b %s: %s", o->binaries[i], strerror(e));
			err = -EINVAL;
		} else if (!S_ISREG(st.st_mode)) {
			sp_err("-b %s: not a regular file (give a program or a "
			       "library)", o->binaries[i]);
			err = -EINVAL;
		}
	}
	if (o->cmd) {
		e = launch__resolve(o->cmd[0], &path);
		if (e) {
			sp_err("cannot start '%s': %s (check the command and PATH)",
			       o->cmd[0], strerror(-e));
			err = -EINVAL;
		} else {
			if (precheck_funcs(o, path, o->cmd[0]))
				err = -EINVAL;
			free(path);
		}
	}
	if (spec_precheck__targets(o))
		err = -EINVAL;
	/* Only targets found sound: an unreadable one has no probes to see. */
	if (!err && spec_precheck__sp(o))
		err = -EINVAL;
	for (i = 0; !err && i < o->nbinaries; i++)
		if (precheck_funcs(o, o->binaries[i], o->binaries[i]))
			err = -EINVAL;
	for (i = 0; !err && i < o->npids; i++) {
		char exe[64], shown[64];

		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)o->pids[i]);
		snprintf(shown, sizeof(shown), "pid %d", (int)o->pids[i]);
		if (precheck_funcs(o, exe, shown))
			err = -EINVAL;
	}
	return err;
}

/* Attaches every provider for pid (path: see session_provider.attach).
 * Returns the sites attached or -errno. */
static int attach_all(struct session *ss, pid_t pid, const char *path)
{
	int i, n, total = 0;

	for (i = 0; i < ss->nproviders; i++) {
		struct session_provider *p = &ss->providers[i];

		n = p->attach(p->ctx, pid, path);
		if (n < 0)
			return n;
		total += n;
	}
	ss->sites += (size_t)total;
	return total;
}

static int load_all(struct session *ss)
{
	int i, err;

	for (i = 0; i < ss->nproviders; i++) {
		err = ss->providers[i].load(ss->providers[i].ctx, ss->o);
		if (err)
			return err;
	}
	return 0;
}

static void arm_all(struct session *ss, bool on)
{
	int i;

	for (i = 0; i < ss->nproviders; i++)
		ss->providers[i].arm(ss->providers[i].ctx, on);
}

/*
 * -p: the pidfd is opened before anything is read from /proc/PID, so that
 * what is read and attached is known to be the process the pidfd holds
 * while it stays alive (target_alive() after attaching). A process younger
 * than sptrace's own process is not the one the user named: its PID was
 * reused. Unless it is our child: a shell that started it, then exec'd
 * sptrace (`prog & exec sptrace -p $!`), gave sptrace its older start.
 */
static int pin_target(struct session *ss, int i)
{
	pid_t pid = ss->o->pids[i];
	uint64_t t, self;
	int ppid, ours;

	ss->pidfds[i] = (int)syscall(SYS_pidfd_open, pid, 0);
	if (ss->pidfds[i] < 0 && errno == ESRCH) {
		sp_err("pid %d: exited before it could be attached", (int)pid);
		return -ESRCH;
	}
	if (!proc_pid__start_time(pid, &t, &ppid) &&
	    !proc_pid__start_time((int)getpid(), &self, &ours) && t > self &&
	    ppid != (int)getpid()) {
		sp_err("pid %d: started after sptrace did: the process named exited and its PID was reused (check the PID)",
		       (int)pid);
		return -ESRCH;
	}
	return 0;
}

/* Still the process pinned (without pidfds: still some process). */
static bool target_alive(struct session *ss, int i)
{
	struct pollfd pfd = { .fd = ss->pidfds[i], .events = POLLIN };

	if (ss->pidfds[i] < 0)
		return !kill(ss->o->pids[i], 0) || errno != ESRCH;
	return poll(&pfd, 1, 0) == 0;
}

/* -p: a target that exec'd another program is still traced, but only at
 * the sites of files sptrace had attached (the uprobes are on files and
 * belong to the process, not to its old image) and at those attached when
 * the new program's loader announces its files (as for a dlopen): its
 * first events may be missed. Say so, once per target. */
static void check_execs(struct session *ss)
{
	const struct session_opts *o = ss->o;
	char exe[PATH_MAX], path[64];
	uint64_t id;
	ssize_t n;
	int i;

	for (i = 0; i < o->npids; i++) {
		if (!ss->alive[i] || !ss->exec_ids[i])
			continue;
		id = exec_id(o->pids[i]);
		/* Read, then check the target is still alive: a PID is not
		 * reused before its process is gone, so what was read was
		 * the target's, not a newcomer's under the same PID. */
		if (!id || id == ss->exec_ids[i] || !target_alive(ss, i))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)o->pids[i]);
		n = readlink(path, exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = 0;
		sp_warn("pid %d: executed %s while traced: the report has its events before the exec; after it, only those at probe sites already attached or attached later",
			(int)o->pids[i], n > 0 ? exe : "another program");
		ss->exec_ids[i] = 0;	/* said once */
	}
}

/* Parent of pid from /proc/PID/stat, or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	int ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
	    sscanf(p + 1, " %*c %d", &ppid) != 1)
		ppid = -1;
	fclose(f);
	return ppid;
}

/*
 * -p PID --follow: PID and the descendants it has now join `followed`;
 * those forked from now on join in BPF at fork. PID goes in first, so a
 * child forked during the scan is either seen here or added by BPF.
 */
static int follow_pid_tree(struct session *ss, pid_t root)
{
	bool added = true;
	struct dirent *de;
	int err, rounds;
	pid_t pid, pp;
	DIR *d;

	err = follow__add(&ss->fol, root);
	if (err && err != -EEXIST)
		return err;
	/* Until no new descendant: a grandchild may be listed before its
	 * parent joined. Bounded: each round adds one more generation. */
	for (rounds = 0; added && rounds < 64; rounds++) {
		added = false;
		d = opendir("/proc");
		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			pid = (pid_t)atoi(de->d_name);
			if (pid <= 0 || pid == root)
				continue;
			pp = parent_of(pid);
			if (pp <= 0 || !follow__has(&ss->fol, pp) ||
			    follow__has(&ss->fol, pid))
				continue;
			err = follow__add(&ss->fol, pid);
			if (!err)
				added = true;
		}
		closedir(d);
	}
	return 0;
}

/* The name locator, loading while the probes are attached, for the first
 * provider with query names. Best effort. */
static void start_locator(struct session *ss)
{
	int i, names, unread;

	for (i = 0; i < ss->nproviders; i++) {
		const struct session_provider *p = &ss->providers[i];

		if (p->name_maps && !p->name_maps(p->ctx, &names, &unread)) {
			name_locator__start(&ss->names, names, unread);
			return;
		}
	}
}

/* The loader watch also locates, at each unload, the query names BPF
 * could not read. */
static void locate_names(struct session *ss)
{
	if (ss->dlw.skel)
		dl_watch__locate_names(&ss->dlw, &ss->names);
}

static int attach_pids(struct session *ss)
{
	const struct session_opts *o = ss->o;
	char comm[32];
	int i, n;

	/* --follow: a followed process that dlopen()s is stopped and
	 * attached at the loader, as in launch mode; else watched only. */
	if (o->follow ? dl_watch__open_follow(&ss->dlw, &ss->stops,
					      follow__followed_fd(&ss->fol),
					      follow__events_fd(&ss->fol),
					      follow__errors_fd(&ss->fol)) :
			dl_watch__open(&ss->dlw, NULL))
		sp_warn("cannot watch dynamic loaders: libraries loaded after attaching are not traced");
	locate_names(ss);

	for (i = 0; i < o->npids; i++) {
		pid_t pid = o->pids[i];

		n = pin_target(ss, i);
		if (n)
			return n;
		if (o->follow) {
			n = follow_pid_tree(ss, pid);
			if (n) {
				sp_err("--follow: cannot follow pid %d: %s",
				       (int)pid, strerror(-n));
				return n;
			}
		}
		n = attach_all(ss, pid, NULL);
		if (n >= 0 && !target_alive(ss, i))
			n = -ESRCH;	/* what was read may be another's */
		if (n == -ESRCH || n == -ENOENT) {
			sp_err("pid %d: exited before it could be attached",
			       (int)pid);
			return -ESRCH;
		}
		if (n == -EACCES || n == -EPERM) {
			sp_err("pid %d: cannot read its mappings: %s (needs root or CAP_SYS_PTRACE)",
			       (int)pid, strerror(-n));
			return n;
		}
		if (n < 0)
			return n;	/* reported by the attacher */
		if (n == 0) {
			sp_err("pid %d (%s): no sp probes in its executable or libraries (instrument it with probes/sp_probe.h)",
			       (int)pid, proc_pid__comm((int)pid, comm, sizeof(comm)));
			return -ENOENT;
		}
		addr_spaces__snapshot(&ss->spaces, pid);
		/* Libraries dlopen()ed later: watched, never stopped. */
		if (ss->dlw.skel && dl_watch__attach(&ss->dlw, pid, NULL))
			sp_info("pid %d: no dynamic loader to watch; libraries it loads later are not attached",
				(int)pid);
		ss->alive[i] = true;
		ss->exec_ids[i] = exec_id(pid);
		sp_info("pid %d (%s): %d probe sites attached", (int)pid,
			proc_pid__comm((int)pid, comm, sizeof(comm)), n);
	}
	return 0;
}

/* A -b file, held open: the names located in processes that exited before
 * a scan read their mappings are read from it. */
static void hold_file(struct session *ss, const char *path)
{
	int err = addr_spaces__hold_file(&ss->spaces, path);

	if (err)
		sp_info("%s: cannot hold it open (%s): names in its processes that exit within 200 ms may be unreadable",
			path, strerror(-err));
}

/*
 * -b PATH: every process that maps PATH, now or later. The uprobes are
 * attached to the file for all processes (the kernel also raises the
 * semaphores of processes that map it later); the processes themselves
 * are found by a periodic scan of /proc, for reading names.
 */
static int attach_binaries(struct session *ss)
{
	const struct session_opts *o = ss->o;
	struct stat st;
	int i, n;

	for (i = 0; i < o->nbinaries; i++) {
		const char *path = o->binaries[i];

		if (stat(path, &st)) {
			sp_err("%s: %s (give the path of an executable or shared library)",
			       path, strerror(errno));
			return -errno;
		}
		ss->bin_ids[i].dev = st.st_dev;
		ss->bin_ids[i].ino = st.st_ino;
		n = attach_all(ss, -1, path);
		if (n < 0)
			return n;
		hold_file(ss, path);
		if (!n) {
			sp_err("%s: no sp probes in this file (instrument it with probes/sp_probe.h; see sptrace list %s)",
			       path, path);
			return -ENOENT;
		}
		sp_info("%s: %d probe sites attached for every process", path, n);
	}
	return 0;
}

/*
 * -b PATH replaced on disk (a new file renamed over it, as installers do):
 * processes started from now on run the new file, so its sites are
 * attached too; the old file stays attached for those still running it.
 */
static void check_replaced(struct session *ss)
{
	const struct session_opts *o = ss->o;
	struct stat st;
	int i, n;

	for (i = 0; i < o->nbinaries; i++) {
		const char *path = o->binaries[i];

		if (stat(path, &st) || (st.st_dev == ss->bin_ids[i].dev &&
					st.st_ino == ss->bin_ids[i].ino))
			continue;
		ss->bin_ids[i].dev = st.st_dev;
		ss->bin_ids[i].ino = st.st_ino;
		n = attach_all(ss, -1, path);
		if (n >= 0)
			hold_file(ss, path);
		if (n < 0)
			sp_warn("%s: replaced on disk while traced; the new file cannot be attached (%s): processes started from it are not traced",
				path, strerror(-n));
		else
			sp_warn("%s: replaced on disk while traced; the new file's %d probe sites are attached now (its processes started before this were not seen)",
				path, n);
	}
}

/* A known process's mappings are read again this often (a library it
 * maps later: names in it, or a -b library dlopen()ed). */
#define SCAN_RECHECK_NS 1000000000ull

static int scan_pid_cmp(const void *a, const void *b)
{
	const struct scan_pid *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Snapshots pid's mappings if it maps a -b file. */
static void scan_maps(struct session *ss, pid_t pid)
{
	const struct session_opts *o = ss->o;
	struct proc_maps m = {};
	size_t j;
	int i;

	if (proc_maps__read((int)pid, &m))
		return;
	for (j = 0; j < m.n; j++) {
		for (i = 0; i < o->nbinaries; i++)
			if (m.v[j].inode == ss->bin_ids[i].ino &&
			    makedev(m.v[j].dev_major, m.v[j].dev_minor) ==
				    ss->bin_ids[i].dev)
				break;
		if (i < o->nbinaries)
			break;
	}
	if (j < m.n)
		addr_spaces__add_maps(&ss->spaces, pid, &m);
	proc_maps__free(&m);
}

/*
 * Snapshots the address spaces of processes mapping a -b file, so their
 * query names can be read even after they exit. Every 200 ms /proc is
 * listed, but reading every process's maps that often was 6-8% of serve's
 * CPU. So the maps of a process are read when it is new to the scan, when
 * /proc/PID/exe names another file (an exec, or the pid reused), and
 * otherwise every SCAN_RECHECK_NS (a library mapped later, the -b file
 * dlopen()ed); one stat per process per scan tells the rest. At the end
 * (stop_ns set) every process is read once more, as before.
 */
static void scan_binaries(struct session *ss)
{
	const struct session_opts *o = ss->o;
	struct scan_pid *next = NULL, *old, key;
	size_t n = 0, cap = 0;
	struct dirent *de;
	uint64_t now = now_ns();
	struct stat st;
	char path[64];
	DIR *d;

	if (!o->nbinaries || now < ss->next_scan_ns)
		return;
	ss->next_scan_ns = now + 200000000ull;
	if (!ss->stop_ns)
		check_replaced(ss);	/* not once detached */
	d = opendir("/proc");
	if (!d)
		return;
	while ((de = readdir(d))) {
		long pid;

		if (parse_long(de->d_name, 1, INT_MAX, &pid) ||
		    pid == (long)getpid())
			continue;
		/* No executable (a kernel thread, a zombie): no maps. */
		snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
		if (stat(path, &st))
			continue;
		if (VEC_RESERVE(next, cap, n + 1))
			break;	/* the rest at the next scan */
		key.pid = (pid_t)pid;
		old = ss->nscanned ? bsearch(&key, ss->scanned, ss->nscanned,
					     sizeof(key), scan_pid_cmp) : NULL;
		if (old && old->exe_dev == (uint64_t)st.st_dev &&
		    old->exe_ino == (uint64_t)st.st_ino &&
		    now < old->recheck_ns && !ss->stop_ns) {
			next[n++] = *old;
			continue;
		}
		next[n] = (struct scan_pid){
			.pid = (pid_t)pid,
			.exe_dev = st.st_dev, .exe_ino = st.st_ino,
			.recheck_ns = now + SCAN_RECHECK_NS,
		};
		scan_maps(ss, (pid_t)pid);
		n++;
	}
	closedir(d);
	/* /proc lists pids in order; sorted anyway for the lookups. */
	qsort(next, n, sizeof(*next), scan_pid_cmp);
	free(ss->scanned);
	ss->scanned = next;
	ss->nscanned = n;
}

/* CMD's "#!" line, if it is a script (a pyenv shim, a wrapper): its probes
 * are not the program's, which it runs by exec. */
static void note_script(struct session *ss)
{
	if (launch__shebang(ss->launch.path, &ss->script) || !ss->script)
		return;
	sp_info("'%s' is a script (%s, %s): what it runs by exec is traced "
		"from that exec on", ss->o->cmd[0], ss->launch.path,
		ss->script);
}

/* The program the launched command runs now (after any exec). */
static void note_exe(struct session *ss)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)ss->launch.pid);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return;
	path[n] = 0;
	if (ss->last_exe && !strcmp(ss->last_exe, path))
		return;
	free(ss->last_exe);
	ss->last_exe = strdup(path);
}

const char *session__command(struct session *ss)
{
	const char *cmd = ss->o->cmd ? ss->o->cmd[0] : "";

	if (!ss->script)
		return cmd;
	if (!ss->desc &&
	    asprintf(&ss->desc, "%s (a script, %s, that ran %s)", cmd,
		     ss->script, ss->last_exe ? ss->last_exe :
		     "no other program") < 0)
		ss->desc = NULL;
	return ss->desc ? ss->desc : cmd;
}

static int start_command(struct session *ss)
{
	int err, watch;

	/* What does not need the child comes before it exists (the BPF
	 * programs are loaded already): the child is held before its exec
	 * only while its executable is attached. */
	watch = ss->o->follow ?
		dl_watch__open_follow(&ss->dlw, &ss->stops,
				      follow__followed_fd(&ss->fol),
				      follow__events_fd(&ss->fol),
				      follow__errors_fd(&ss->fol)) :
		dl_watch__open(&ss->dlw, &ss->stops);
	err = launch__fork(&ss->launch, ss->o->cmd);
	if (err)
		return err;
	ss->launched = true;
	note_script(ss);
	if (ss->o->follow) {
		err = follow__add(&ss->fol, ss->launch.pid);
		if (err) {
			sp_err("--follow: cannot follow pid %d: %s",
			       (int)ss->launch.pid, strerror(-err));
			return err;
		}
	}
	/* The executable's own probes, by file offset, before it exists as a
	 * mapping; its libraries are attached when ld.so stops it. */
	err = attach_all(ss, ss->launch.pid, ss->launch.path);
	if (err < 0)
		return err;
	if (!watch)
		locate_names(ss);
	err = watch ? watch : dl_watch__attach(&ss->dlw, ss->launch.pid,
					       ss->launch.path);
	if (err)
		sp_warn("cannot watch the dynamic loader of '%s' (%s): probes of its libraries are not attached",
			ss->launch.path, strerror(-err));
	return 0;
}

/*
 * --follow: a followed process exec'd (a new image, perhaps its own loader)
 * or its loader mapped libraries; it is stopped until this returns. A fork
 * needs nothing attached (the child runs its parent's files, whose links
 * serve every process): its names are read through its parent's snapshot.
 */
static void follow_event(void *ctx, const struct sp_follow_event *e)
{
	struct session *ss = ctx;
	pid_t pid = (pid_t)e->tgid;
	int n;

	if (e->kind != SP_FOLLOW_FORK) {
		n = attach_all(ss, pid, NULL);
		if (n < 0 && n != -ESRCH && n != -ENOENT)
			sp_warn("pid %d: cannot attach what it maps: %s; its probes there are not counted",
				(int)pid, strerror(-n));
		if (e->kind == SP_FOLLOW_EXEC && ss->dlw.skel) {
			n = dl_watch__attach(&ss->dlw, pid, NULL);
			if (n && n != -ESRCH)
				sp_info("pid %d: no dynamic loader to watch (static?): only its executable is attached",
					(int)pid);
		}
		if (e->kind == SP_FOLLOW_EXEC)	/* its parent's image is gone */
			addr_spaces__fork(&ss->spaces, 0, pid);
		addr_spaces__snapshot(&ss->spaces, pid);
	} else {
		/* Its parent's files, not open again for each child. */
		addr_spaces__fork(&ss->spaces, (pid_t)e->parent, pid);
	}
}

static int start_follow(struct session *ss)
{
	int i, err;

	err = follow__open(&ss->fol, &ss->stops, follow_event, ss);
	if (err)
		return err;
	for (i = 0; i < ss->nproviders; i++) {
		struct session_provider *p = &ss->providers[i];

		if (!p->follow) {
			sp_err("--follow: not supported with the %s report (drop one of them)",
			       p->name);
			return -EOPNOTSUPP;
		}
		err = p->follow(p->ctx, follow__followed_fd(&ss->fol));
		if (err)
			return err;
	}
	return 0;
}

static int setup_signals(struct session *ss)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	ss->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return ss->sfd < 0 ? -errno : 0;
}

void session__init(struct session *ss, const struct session_opts *o)
{
	int i;

	memset(ss, 0, sizeof(*ss));
	ss->o = o;
	ss->sfd = -1;
	ss->behind_fd = -1;
	stop_release__init(&ss->stops);
	for (i = 0; i < SESSION_MAX_PIDS; i++)
		ss->pidfds[i] = -1;
}

int session__add(struct session *ss, const struct session_provider *p)
{
	if (ss->nproviders == SESSION_MAX_PROVIDERS)
		return -E2BIG;
	ss->providers[ss->nproviders++] = *p;
	return 0;
}

int session__start(struct session *ss)
{
	const struct session_opts *o = ss->o;
	uint64_t t0 = now_ns(), t1;
	int err, guard_err;

	sp_log_setup_libbpf();
	if (privileges__check() || check_pids(o, true))
		return -EINVAL;
	err = setup_signals(ss);
	if (err) {
		sp_err("cannot set up signal handling: %s", strerror(-err));
		return err;
	}
	/* How per-event sites are kept safe for forked children: decided
	 * now, before the BPF programs make this process larger to fork,
	 * and a bad SPTRACE_SITE_GUARD is refused before anything loads.
	 * Its self-test runs beside the load (site_guard__decide()). */
	err = site_guard__decide();
	/* Launch mode and --follow stop processes (-p alone never does):
	 * the releaser first, small to fork; it keeps no fd of sptrace's but
	 * its maps and pipe (the self-test's thread may run meanwhile: the
	 * releaser runs async-signal-safe code only). */
	if (!err && (o->cmd || o->follow))
		err = stop_release__open(&ss->stops);
	if (!err && o->follow)
		err = start_follow(ss);
	if (!err)
		err = load_all(ss);
	if (!err)
		start_locator(ss);
	guard_err = site_guard__decided();	/* joined whatever happened */
	if (!err)
		err = guard_err;
	if (err)
		return err;
	t1 = now_ns();
	err = o->cmd ? start_command(ss) :
	      o->nbinaries ? attach_binaries(ss) : attach_pids(ss);
	if (err)
		return err;
	name_locator__attach_exits(&ss->names);
	/* Every site is attached: count from now on. The start is read
	 * first: every event counted comes after it. */
	ss->start_ns = now_ns();
	ss->start_realtime_ns = clock__ns(CLOCK_REALTIME);
	arm_all(ss, true);
	/* -v: how long it took (the readiness line of tests/e2e/sptest.py
	 * with -d, where no "Ctrl-C" line follows). */
	sp_info("tracing %zu probe sites, %.0f ms after start (BPF programs loaded in %.0f ms, sites attached in %.0f ms)",
		ss->sites, (double)(ss->start_ns - t0) / 1e6,
		(double)(t1 - t0) / 1e6, (double)(ss->start_ns - t1) / 1e6);
	if (o->cmd)
		return launch__go(&ss->launch, o->cmd[0]);
	/* The readiness line: -d counts its seconds from here. */
	if (!o->duration_s)
		fprintf(stderr, "sptrace: tracing %zu probe sites; Ctrl-C to stop\n",
			ss->sites);
	else
		fprintf(stderr, "sptrace: tracing %zu probe sites for %g s\n",
			ss->sites, o->duration_s);
	return 0;
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* SIGCHLD in launch mode: our stopper's stop, or the end of the command. */
static void reap_child(struct session *ss, bool *stop)
{
	struct rusage ru;
	int status;

	while (wait4(ss->launch.pid, &status, WNOHANG | WUNTRACED, &ru) > 0) {
		if (WIFSTOPPED(status)) {
			if (WSTOPSIG(status) == SIGSTOP &&
			    dl_watch__take_stop(&ss->dlw)) {
				int n = attach_all(ss, ss->launch.pid, NULL);

				note_exe(ss);

				if (n < 0 && n != -ESRCH)
					sp_warn("pid %d: attaching new libraries failed: %s",
						(int)ss->launch.pid,
						strerror(-n));
				addr_spaces__snapshot(&ss->spaces,
						      ss->launch.pid);
				stop_release__continue(&ss->stops,
						       ss->launch.pid);
			}
			continue;
		}
		ss->child_status = exit_status(status);
		ss->child_exited = true;
		/* Its CPU time and its reaped children's (overhead.h). */
		ss->child_cpu_ns = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull +
				   (uint64_t)ru.ru_utime.tv_usec * 1000ull +
				   (uint64_t)ru.ru_stime.tv_sec * 1000000000ull +
				   (uint64_t)ru.ru_stime.tv_usec * 1000ull;
		/* --follow: the session ends with the last descendant. */
		*stop = !ss->o->follow;
		return;
	}
}

static void read_signals(struct session *ss, bool *stop)
{
	struct signalfd_siginfo si;

	while (read(ss->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD && ss->launched) {
			reap_child(ss, stop);
		} else if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
			ss->stop_signal = (int)si.ssi_signo;
			*stop = true;
		}
	}
}

/*
 * A running target mapped a library: attach to it now. Its probes that ran
 * before this instant were not seen, and the operator is told.
 */
static void attach_late_libraries(struct session *ss)
{
	const struct session_opts *o = ss->o;
	int i, n;

	for (i = 0; i < o->npids; i++) {
		/* Exited since the last tick: its PID may be another's now. */
		if (!ss->alive[i] || !target_alive(ss, i))
			continue;
		n = attach_all(ss, o->pids[i], NULL);
		if (n > 0) {
			addr_spaces__snapshot(&ss->spaces, o->pids[i]);
			sp_warn("pid %d: %d probe sites in files it mapped while traced (a library it loaded, or the program it exec'd) attached now; its events before this were not seen (sptrace -v names them)",
				(int)o->pids[i], n);
		} else if (n < 0 && n != -ESRCH && n != -ENOENT) {
			sp_warn("pid %d: cannot attach the files it mapped while traced: %s",
				(int)o->pids[i], strerror(-n));
		}
	}
}

/* The session's targets are gone: with --follow, the command and its
 * descendants; every -p target (live of them still running) and, followed,
 * its tree. */
static bool targets_gone(struct session *ss, int live)
{
	const struct session_opts *o = ss->o;

	if (o->follow && ss->child_exited && !follow__live(&ss->fol))
		return true;
	return o->npids && !live &&
	       !(o->follow && follow__live(&ss->fol) > 0);
}

static int wait_loop(struct session *ss, int fd, session_poll_fn fn, void *ctx)
{
	const struct session_opts *o = ss->o;
	struct pollfd pfd[SESSION_MAX_PIDS + 3];
	bool stop = false, again = false;
	int i, n, nfixed, err;

	while (!stop) {
		/* Ticks for the callback and for the loader watch of -p. */
		int timeout = fn || ss->dlw.nlinks || o->nbinaries ||
					      o->npids ? 50 : -1;
		int live = 0;

		pfd[0] = (struct pollfd){ .fd = ss->sfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = fd, .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = o->follow ?
						follow__poll_fd(&ss->fol) : -1,
					  .events = POLLIN };
		nfixed = n = 3;
		if (o->follow)
			timeout = 50;	/* to see the followed processes end */
		for (i = 0; i < o->npids; i++) {
			if (!ss->alive[i])
				continue;
			live++;
			pfd[n++] = (struct pollfd){ .fd = ss->pidfds[i],
						    .events = POLLIN };
		}
		if (targets_gone(ss, live))
			break;
		if (o->duration_s > 0) {
			double left = o->duration_s -
				      (double)(now_ns() - ss->start_ns) / 1e9;

			if (left <= 0)
				break;
			if (timeout < 0 || left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		for (i = 0; i < ss->nproviders; i++) {
			const struct session_provider *p = &ss->providers[i];

			if (p->tick && (timeout < 0 || (int)p->tick_ms < timeout))
				timeout = (int)p->tick_ms;
		}
		if (again)
			timeout = 0;	/* the callback has more to do now */
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (i = 0; i < ss->nproviders; i++)
			if (ss->providers[i].tick)
				ss->providers[i].tick(ss->providers[i].ctx);
		if (pfd[0].revents & POLLIN)
			read_signals(ss, &stop);
		if (o->follow)
			follow__consume(&ss->fol);
		check_execs(ss);
		if (!ss->launched && dl_watch__changed(&ss->dlw))
			attach_late_libraries(ss);
		stop_release__check(&ss->stops);
		scan_binaries(ss);
		/* Exits of -p targets before the callback, so that its call in
		 * the loop's last round knows it is the last: a tick of
		 * --interval there would be a regular one after the end, and
		 * the final tick empty (an ASan build: 4 runs in 5, the
		 * command's exit seen 9-30 ms after a tick's grid time). */
		for (i = 0, n = nfixed, live = 0; i < o->npids; i++) {
			if (!ss->alive[i])
				continue;
			if (pfd[n].revents & (POLLIN | POLLHUP | POLLERR)) {
				ss->alive[i] = false;
				sp_info("pid %d exited", (int)o->pids[i]);
			} else {
				live++;
			}
			n++;
		}
		ss->ending = stop || targets_gone(ss, live);
		if (fn) {
			err = fn(ctx);
			if (err < 0)
				return err;
			again = err > 0;
		}
	}
	return 0;
}

/* The loader watch, gone once tracing stopped (see session__run()). */
static void *unwatch_loaders(void *arg)
{
	dl_watch__destroy(arg);
	return NULL;
}

/* The session is over and no process it traced is left to run a site:
 * the command exited, and with it (--follow) its descendants; no -p
 * target, no -b file that any process may run. Not with a site guard
 * mode forced (tests, diagnosis): a forced DIRECT's uprobes, made calls,
 * would be shared by the next run's pins, which then refuse the file. */
static bool none_left(struct session *ss)
{
	const struct session_opts *o = ss->o;

	/* Not with --follow: its links are on the files, for every process,
	 * so a next process of the same file would meet them while the
	 * keeper unregisters them: its semaphores raised, its batches
	 * drained into this session's maps (a per-event run right after a
	 * --follow run of the same host lost 6-16% of its events). */
	return ss->launched && ss->child_exited && !o->npids &&
	       !o->nbinaries && !o->follow && !site_guard__forced();
}

/* Their uprobes are unregistered after sptrace exits, by a process of
 * their own (detach_behind.c): the command's end is not held up by it. */
static void detach_behind(struct session *ss)
{
	int fd = detach_behind__start();

	if (fd < 0) {
		sp_info("cannot detach in the background (%s): detaching here",
			strerror(-fd));
		return;
	}
	ss->behind_fd = fd;
	sp_info("the command and all it ran have exited: its uprobes are unregistered in the background, after sptrace ends");
}

int session__run(struct session *ss, int fd, session_poll_fn fn, void *ctx)
{
	pthread_t unwatch;
	bool unwatching;
	int err, i;

	err = wait_loop(ss, fd, fn, ctx);
	check_execs(ss);
	/* Disarm, then detach: links go one by one, and an END still attached
	 * after its BEGIN is gone would count as unbalanced. */
	arm_all(ss, false);
	ss->stop_ns = now_ns();
	ss->next_scan_ns = 0;
	scan_binaries(ss);	/* the processes still there, for their names */
	/* Nothing is attached from here on: the loader watch goes now, in
	 * a thread, as closing its uprobe waits for a grace period as the
	 * providers' links do (100-300 ms on a loaded machine), and both
	 * waits then overlap. */
	unwatching = !pthread_create(&unwatch, NULL, unwatch_loaders,
				     &ss->dlw);
	if (none_left(ss))
		detach_behind(ss);
	for (i = 0; i < ss->nproviders; i++)
		ss->providers[i].detach(ss->providers[i].ctx);
	if (unwatching)
		pthread_join(unwatch, NULL);
	sp_info("probe sites detached in %.0f ms",
		(double)(now_ns() - ss->stop_ns) / 1e6);
	/* What the ring buffer still holds was counted: drain it. */
	if (!err && fn) {
		err = fn(ctx);
		if (err > 0)
			err = 0;	/* "again": the session is over */
	}
	/* A command that might have loaded probes (the check before the
	 * run let it go) and did not. */
	if (!err && ss->launched && !ss->sites && session_opts__sp_only(ss->o))
		sp_warn("'%s' has no sp probes in its executable or libraries (instrument it with probes/sp_probe.h)",
			session__command(ss));
	return err;
}

uint64_t session__duration(const struct session *ss)
{
	return ss->stop_ns > ss->start_ns ? ss->stop_ns - ss->start_ns : 0;
}

int session__follow_catch_up(struct session *ss)
{
	return ss->o->follow ? follow__consume(&ss->fol) : 0;
}

int session__exit_status(const struct session *ss, int err)
{
	if (err)
		return 1;
	if (ss->launched)
		return ss->child_exited ? ss->child_status
					: 128 + (ss->stop_signal ? ss->stop_signal
								 : SIGTERM);
	return 0;
}

void session__destroy(struct session *ss)
{
	int i;

	for (i = 0; i < ss->nproviders; i++)
		ss->providers[i].detach(ss->providers[i].ctx);
	if (ss->launched) {
		if (!ss->child_exited && ss->launch.pid > 0) {
			int status, i;

			/* Stopped (our stopper, or -d / a signal ended the trace
			 * first): like timeout(1), the command gets the signal
			 * that ended the trace, SIGTERM after -d, and a second
			 * to exit; its status becomes ours. */
			kill(ss->launch.pid, ss->stop_signal ? ss->stop_signal
							     : SIGTERM);
			stop_release__continue(&ss->stops, ss->launch.pid);
			for (i = 0; i < 100; i++) {
				if (waitpid(ss->launch.pid, &status, WNOHANG) ==
				    ss->launch.pid) {
					ss->child_status = exit_status(status);
					ss->child_exited = true;
					break;
				}
				usleep(10000);
			}
		}
		launch__destroy(&ss->launch);
	}
	free(ss->script);
	free(ss->last_exe);
	free(ss->desc);
	ss->script = ss->last_exe = ss->desc = NULL;
	dl_watch__destroy(&ss->dlw);
	name_locator__destroy(&ss->names);
	/* After the loader watch, which reports into its ring buffer. */
	if (ss->fol.skel) {
		follow__report(&ss->fol);
		follow__destroy(&ss->fol);
	}
	/* No program can stop a process now: the releaser goes. */
	stop_release__close(&ss->stops);
	for (i = 0; i < ss->nproviders; i++)
		ss->providers[i].destroy(ss->providers[i].ctx);
	ss->nproviders = 0;
	addr_spaces__free(&ss->spaces);
	free(ss->scanned);
	ss->scanned = NULL;
	ss->nscanned = 0;
	for (i = 0; i < SESSION_MAX_PIDS; i++)
		if (ss->pidfds[i] >= 0)
			close(ss->pidfds[i]);
	if (ss->sfd >= 0)
		close(ss->sfd);
	ss->sfd = -1;
	for (i = 0; i < SESSION_MAX_PIDS; i++)
		ss->pidfds[i] = -1;
	/* The last: the uprobes go once this process is done with them. */
	if (ss->behind_fd >= 0)
		close(ss->behind_fd);
	ss->behind_fd = -1;
}

int session__describe(const struct session *ss, char **command)
{
	const struct session_opts *o = ss->o;
	int pid = ss->launched ? (int)ss->launch.pid : 0;
	struct history_run r = { 0 };
	int err;

	err = history_run__describe(&r, o->cmd, ss->launched ? &pid : o->pids,
				    ss->launched ? 1 : o->npids,
				    o->binaries, o->nbinaries);
	if (!err) {
		*command = r.command;
		r.command = NULL;
	}
	history_run__free(&r);
	return err;
}

int session__store(const struct session *ss, struct history_db *h,
		   const char *label, const char *source, int64_t started_at,
		   const struct summary *s, const struct mem_report *mr,
		   int64_t *id)
{
	const struct session_opts *o = ss->o;
	int pid = ss->launched ? (int)ss->launch.pid : 0;
	struct run_origin orig = {
		.cmd = o->cmd,
		.pids = ss->launched ? &pid : o->pids,
		.npids = ss->launched ? 1 : o->npids,
		.binaries = o->binaries,
		.nbinaries = o->nbinaries,
	};

	return run_store(h, label, source, &orig, started_at, s, mr, id);
}
