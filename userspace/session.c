// SPDX-License-Identifier: MIT
/*
 * One tracing session: load bpf/query.bpf.c, attach it to every sp probe
 * site of the targets, count between two instants, detach.
 *
 * Counting is gated by the `armed` flag of the BPF program, set once every
 * site is attached and cleared before any is detached: sites are attached
 * and detached one link at a time, and without the gate an END attached
 * before its BEGIN (or left after it) would be counted as unbalanced. A
 * launched command execs only once the gate is open, so its first probe is
 * seen.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <sptrace/record_abi.h>
#include "commands.h"
#include "log.h"
#include "privileges.h"
#include "query.skel.h"
#include "query_maps.h"
#include "session.h"
#include "summary.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse_pids(struct session_opts *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		long v;

		if (parse_long(tok, 1, INT_MAX, &v)) {
			sp_err("invalid PID '%s' (expected a positive number, or a comma-separated list)",
			       tok);
			err = -EINVAL;
			break;
		}
		if (o->npids == SESSION_MAX_PIDS) {
			sp_err("too many PIDs (at most %d)", SESSION_MAX_PIDS);
			err = -EINVAL;
			break;
		}
		o->pids[o->npids++] = (pid_t)v;
	}
	free(copy);
	return err;
}

int session_opts__parse(struct session_opts *o, int c, const char *arg)
{
	long v;

	switch (c) {
	case 'p':
		return parse_pids(o, arg) ? -EINVAL : 1;
	case 'd':
		if (parse_double(arg, 0.001, 1e9, &o->duration_s)) {
			sp_err("invalid duration '%s' (expected seconds > 0)", arg);
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

int session_opts__check(const struct session_opts *o)
{
	if (!o->npids && !o->cmd) {
		sp_err("nothing to trace: give -p PID or -- CMD (see --help)");
		return -EINVAL;
	}
	if (o->npids && o->cmd) {
		sp_err("give either -p PID or -- CMD, not both");
		return -EINVAL;
	}
	return 0;
}

static char *comm_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	buf[0] = 0;
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, len, "?");
	return buf;
}

static int check_pids_exist(const struct session_opts *o)
{
	int i;

	for (i = 0; i < o->npids; i++) {
		if (kill(o->pids[i], 0) && errno == ESRCH) {
			sp_err("pid %d: no such process (check the PID)",
			       (int)o->pids[i]);
			return -ESRCH;
		}
	}
	return 0;
}

static int open_and_load(struct session *ss, bool multi)
{
	const struct session_opts *o = ss->o;
	struct bpf_program *prog;
	int err;

	ss->skel = query_bpf__open();
	if (!ss->skel)
		return -errno;
	bpf_object__for_each_program(prog, ss->skel->obj)
		if (multi && prog != ss->skel->progs.sp_thread_exit)
			attach__prepare_multi(prog);
	ss->skel->rodata->record = o->record;
	ss->skel->rodata->wakeup_bytes =
		(o->ringbuf_bytes ? o->ringbuf_bytes : SP_DEFAULT_RINGBUF) / 4;
	err = query_maps__resize(ss->skel, o->max_queries, o->max_threads);
	if (!err && o->record && o->ringbuf_bytes)
		err = bpf_map__set_max_entries(ss->skel->maps.events,
					       o->ringbuf_bytes);
	if (!err && !o->record)
		/* The smallest ring buffer: one page. */
		err = bpf_map__set_max_entries(ss->skel->maps.events,
					       (uint32_t)getpagesize());
	if (!err)
		err = query_bpf__load(ss->skel);
	if (err) {
		query_bpf__destroy(ss->skel);
		ss->skel = NULL;
	}
	return err;
}

static int load_bpf(struct session *ss)
{
	int err;

	/* uprobe_multi links first (Linux 6.6+), else one uprobe per site. */
	ss->multi = true;
	err = open_and_load(ss, true);
	if (err && err != -EPERM && err != -EACCES) {
		sp_info("no uprobe_multi links (%s); attaching site by site",
			strerror(-err));
		ss->multi = false;
		err = open_and_load(ss, false);
	}
	if (err) {
		privileges__explain_load_error(err, "the query BPF program");
		return err;
	}
	/* Frees the stacks of exiting threads and counts their open frames;
	 * optional: without it only the thread map can fill up. */
	ss->exit_link = bpf_program__attach(ss->skel->progs.sp_thread_exit);
	if (!ss->exit_link)
		sp_warn("cannot watch thread exits (%s): queries left open by exiting threads are not counted",
			strerror(errno));
	return 0;
}

static bool want(const struct session_opts *o, enum sp_event_class c)
{
	return !o->record || (o->classes & (1u << c));
}

/* Which program serves which probe: only what was asked for is attached. */
static size_t bind_probes(struct session *ss)
{
	const struct session_opts *o = ss->o;
	struct probe_binding *b = ss->bindings;
	struct query_bpf *s = ss->skel;
	size_t i = 0;

	if (want(o, SP_EVC_QUERY)) {
		b[i++] = (struct probe_binding){ "query_begin", s->progs.sp_query_begin };
		b[i++] = (struct probe_binding){ "query_end", s->progs.sp_query_end };
	}
	if (want(o, SP_EVC_CACHE))
		b[i++] = (struct probe_binding){ "cache_hit", s->progs.sp_cache_hit };
	if (want(o, SP_EVC_BLOCKED)) {
		b[i++] = (struct probe_binding){ "blocked_begin", s->progs.sp_blocked_begin };
		b[i++] = (struct probe_binding){ "blocked_end", s->progs.sp_blocked_end };
	}
	if (want(o, SP_EVC_INCR)) {
		b[i++] = (struct probe_binding){ "incr_load_begin", s->progs.sp_incr_load_begin };
		b[i++] = (struct probe_binding){ "incr_load_end", s->progs.sp_incr_load_end };
	}
	if (o->record && (o->classes & (1u << SP_EVC_MARK)))
		b[i++] = (struct probe_binding){ "mark", s->progs.sp_mark };
	if (o->record && (o->classes & (1u << SP_EVC_ALLOC))) {
		b[i++] = (struct probe_binding){ "alloc", s->progs.sp_alloc };
		b[i++] = (struct probe_binding){ "free", s->progs.sp_free };
	}
	b[i++] = (struct probe_binding){ "thread_name", s->progs.sp_thread_name };
	return i;
}

static int attach_pids(struct session *ss)
{
	const struct session_opts *o = ss->o;
	char comm[32];
	int i, n;

	for (i = 0; i < o->npids; i++) {
		pid_t pid = o->pids[i];

		n = attacher__attach_pid(&ss->att, pid);
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
			       (int)pid, comm_of(pid, comm, sizeof(comm)));
			return -ENOENT;
		}
		addr_spaces__snapshot(&ss->spaces, pid);
		ss->pidfds[i] = (int)syscall(SYS_pidfd_open, pid, 0);
		ss->alive[i] = true;
		sp_info("pid %d (%s): %d probe sites attached", (int)pid,
			comm_of(pid, comm, sizeof(comm)), n);
	}
	return 0;
}

static int start_command(struct session *ss)
{
	int err;

	err = launch__fork(&ss->launch, ss->o->cmd);
	if (err)
		return err;
	ss->launched = true;
	/* The executable's own probes, by file offset, before it exists as a
	 * mapping; its libraries are attached when ld.so stops it. */
	err = attacher__attach_file(&ss->att, ss->launch.pid, ss->launch.path,
				    ss->launch.path);
	if (err < 0)
		return err;
	return launch__arm_stopper(&ss->launch);
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

int session__start(struct session *ss, const struct session_opts *o)
{
	int err, i;

	memset(ss, 0, sizeof(*ss));
	ss->o = o;
	ss->sfd = -1;
	for (i = 0; i < SESSION_MAX_PIDS; i++)
		ss->pidfds[i] = -1;
	sp_log_setup_libbpf();
	if (check_pids_exist(o) || privileges__check())
		return -EINVAL;
	err = setup_signals(ss);
	if (err) {
		sp_err("cannot set up signal handling: %s", strerror(-err));
		return err;
	}
	err = load_bpf(ss);
	if (err)
		return err;
	attacher__init(&ss->att, "sp", ss->bindings, bind_probes(ss),
		       ss->multi);
	err = o->cmd ? start_command(ss) : attach_pids(ss);
	if (err)
		return err;
	/* Every site is attached: count from now on. */
	ss->skel->bss->armed = true;
	ss->start_ns = now_ns();
	if (o->cmd)
		return launch__go(&ss->launch, o->cmd[0]);
	if (!o->duration_s)
		fprintf(stderr, "sptrace: tracing %zu probe sites; Ctrl-C to stop\n",
			attacher__sites(&ss->att));
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
	int status;

	while (waitpid(ss->launch.pid, &status, WNOHANG | WUNTRACED) > 0) {
		if (WIFSTOPPED(status)) {
			if (WSTOPSIG(status) == SIGSTOP &&
			    launch__stop_is_ours(&ss->launch)) {
				int n = attacher__attach_pid(&ss->att,
							     ss->launch.pid);

				if (n < 0 && n != -ESRCH)
					sp_warn("pid %d: attaching new libraries failed: %s",
						(int)ss->launch.pid,
						strerror(-n));
				addr_spaces__snapshot(&ss->spaces,
						      ss->launch.pid);
				kill(ss->launch.pid, SIGCONT);
			}
			continue;
		}
		ss->child_status = exit_status(status);
		ss->child_exited = true;
		*stop = true;
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

static int wait_loop(struct session *ss, int fd, session_poll_fn fn, void *ctx)
{
	const struct session_opts *o = ss->o;
	struct pollfd pfd[SESSION_MAX_PIDS + 2];
	bool stop = false;
	int i, n, nfixed, err;

	while (!stop) {
		int timeout = fn ? 50 : -1, live = 0;

		pfd[0] = (struct pollfd){ .fd = ss->sfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = fd, .events = POLLIN };
		nfixed = n = 2;
		for (i = 0; i < o->npids; i++) {
			if (!ss->alive[i])
				continue;
			live++;
			pfd[n++] = (struct pollfd){ .fd = ss->pidfds[i],
						    .events = POLLIN };
		}
		if (o->npids && !live)
			break;	/* every target exited */
		if (o->duration_s > 0) {
			double left = o->duration_s -
				      (double)(now_ns() - ss->start_ns) / 1e9;

			if (left <= 0)
				break;
			if (timeout < 0 || left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents & POLLIN)
			read_signals(ss, &stop);
		if (fn) {
			err = fn(ctx);
			if (err)
				return err;
		}
		for (i = 0, n = nfixed; i < o->npids; i++) {
			if (!ss->alive[i])
				continue;
			if (pfd[n].revents & (POLLIN | POLLHUP | POLLERR)) {
				ss->alive[i] = false;
				sp_info("pid %d exited", (int)o->pids[i]);
			}
			n++;
		}
	}
	return 0;
}

int session__run(struct session *ss, int fd, session_poll_fn fn, void *ctx)
{
	int err;

	err = wait_loop(ss, fd, fn, ctx);
	/* Disarm, then detach: links go one by one, and an END still attached
	 * after its BEGIN is gone would count as unbalanced. */
	ss->skel->bss->armed = false;
	ss->stop_ns = now_ns();
	attacher__destroy(&ss->att);
	/* What the ring buffer still holds was counted: drain it. */
	if (!err && fn)
		err = fn(ctx);
	return err;
}

int session__read(struct session *ss, struct summary *s)
{
	int err;

	s->duration_ns = ss->stop_ns - ss->start_ns;
	err = query_maps__read(ss->skel, &ss->spaces, s);
	if (err) {
		sp_err("cannot read the BPF maps: %s", strerror(-err));
		return err;
	}
	if (ss->o->cmd && !attacher__sites(&ss->att) && !s->nrows)
		sp_warn("'%s' has no sp probes in its executable or libraries (instrument it with probes/sp_probe.h)",
			ss->o->cmd[0]);
	return 0;
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

	attacher__destroy(&ss->att);
	if (ss->launched) {
		if (!ss->child_exited && ss->launch.pid > 0) {
			int status, i;

			/* Stopped (our stopper, or -d / a signal ended the trace
			 * first): like timeout(1), the command gets the signal
			 * that ended the trace, SIGTERM after -d, and a second
			 * to exit; its status becomes ours. */
			kill(ss->launch.pid, ss->stop_signal ? ss->stop_signal
							     : SIGTERM);
			kill(ss->launch.pid, SIGCONT);
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
	bpf_link__destroy(ss->exit_link);
	query_bpf__destroy(ss->skel);
	addr_spaces__free(&ss->spaces);
	for (i = 0; i < SESSION_MAX_PIDS; i++)
		if (ss->pidfds[i] >= 0)
			close(ss->pidfds[i]);
	if (ss->sfd >= 0)
		close(ss->sfd);
	ss->skel = NULL;
	ss->exit_link = NULL;
	ss->sfd = -1;
	for (i = 0; i < SESSION_MAX_PIDS; i++)
		ss->pidfds[i] = -1;
}
