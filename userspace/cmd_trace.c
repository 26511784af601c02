// SPDX-License-Identifier: MIT
/*
 * The live mode: `sptrace -p PID[,PID...]` and `sptrace -- CMD`. Loads the
 * query BPF program, attaches it to every sp probe site of the targets,
 * waits (Ctrl-C/SIGTERM, -d, or every target gone), detaches, reads the maps
 * into a summary and writes it in the chosen format.
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
#include "addr_space.h"
#include "attach.h"
#include "commands.h"
#include "launch.h"
#include "log.h"
#include "output.h"
#include "privileges.h"
#include "query.skel.h"
#include "query_maps.h"
#include "report.h"
#include "summary.h"

#define MAX_PIDS 256

struct trace_env {
	pid_t pids[MAX_PIDS];
	int npids;
	double duration_s;		/* 0: until stopped */
	const char *output;
	bool force;
	struct report_opts ropts;
	enum summary_sort sort;
	unsigned int max_queries;
	unsigned int max_threads;
	char **cmd;			/* launch mode */
};

struct trace_state {
	struct trace_env *env;
	struct query_bpf *skel;
	struct attacher att;
	struct addr_spaces spaces;	/* to read query names */
	struct launch launch;
	bool multi;			/* uprobe_multi links */
	struct bpf_link *exit_link;	/* thread-exit tracepoint */
	bool launched;
	int child_status;		/* launch mode: exit status to return */
	bool child_exited;
	int sfd;			/* signalfd */
	int pidfds[MAX_PIDS];
	bool alive[MAX_PIDS];
	int stop_signal;
};

static const char usage[] =
"Usage: sptrace [OPTIONS] -p PID[,PID...]\n"
"       sptrace [OPTIONS] -- CMD [ARGS...]\n"
"Trace the sp probes of running processes or of a command and print one row\n"
"per query: self and total time, counts, cache hits, blocked and\n"
"incremental-load time, latency percentiles.\n"
"\n"
"  -p, --pid PID[,PID...]   trace these running processes\n"
"  -d, --duration SECONDS   stop after this long (default: Ctrl-C, or exit)\n"
"  -f, --format FMT         table (default), json or csv\n"
"  -o, --output FILE        write there instead of stdout (0600, no symlink)\n"
"      --force              overwrite an existing output file\n"
"  -s, --sort COLUMN        self (default), total, count, name, cache-hits,\n"
"                           blocked, incr, p50, p99, max\n"
"      --hist               print each query's latency histogram\n"
"      --percent-above P    hide rows with at most P%% of the self time\n"
"      --max-queries N      distinct (process, query) rows kept in the\n"
"                           kernel (default %u)\n"
"      --max-threads N      threads with open queries (default %u)\n"
"  -v, --verbose            say what is attached; show libbpf's messages\n"
"  -h, --help\n"
"\n"
"Other commands: sptrace help\n";

static void print_usage(FILE *f)
{
	fprintf(f, usage, SP_DEFAULT_MAX_QUERIES, SP_DEFAULT_MAX_THREADS);
}

static int parse_pids(const char *arg, struct trace_env *env)
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
		if (env->npids == MAX_PIDS) {
			sp_err("too many PIDs (at most %d)", MAX_PIDS);
			err = -E2BIG;
			break;
		}
		env->pids[env->npids++] = (pid_t)v;
	}
	free(copy);
	return err;
}

enum { OPT_FORCE = 256, OPT_HIST, OPT_PERCENT_ABOVE, OPT_MAX_QUERIES,
       OPT_MAX_THREADS };

static int parse_args(int argc, char **argv, struct trace_env *env)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "sort", required_argument, NULL, 's' },
		{ "hist", no_argument, NULL, OPT_HIST },
		{ "percent-above", required_argument, NULL, OPT_PERCENT_ABOVE },
		{ "max-queries", required_argument, NULL, OPT_MAX_QUERIES },
		{ "max-threads", required_argument, NULL, OPT_MAX_THREADS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:d:f:o:s:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(optarg, env))
				return -EINVAL;
			break;
		case 'd':
			if (parse_double(optarg, 0.001, 1e9, &env->duration_s)) {
				sp_err("invalid duration '%s' (expected seconds > 0)",
				       optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			if (report__parse_format(optarg, &env->ropts.format)) {
				sp_err("unknown format '%s' (expected table, json or csv)",
				       optarg);
				return -EINVAL;
			}
			break;
		case 'o':
			env->output = optarg;
			break;
		case OPT_FORCE:
			env->force = true;
			break;
		case 's':
			if (summary__parse_sort(optarg, &env->sort)) {
				sp_err("unknown sort column '%s' (see --help)",
				       optarg);
				return -EINVAL;
			}
			break;
		case OPT_HIST:
			env->ropts.hist = true;
			break;
		case OPT_PERCENT_ABOVE:
			if (parse_double(optarg, 0, 100,
					 &env->ropts.percent_above)) {
				sp_err("invalid --percent-above '%s' (expected 0..100)",
				       optarg);
				return -EINVAL;
			}
			break;
		case OPT_MAX_QUERIES:
		case OPT_MAX_THREADS:
			if (parse_long(optarg, 16, 1 << 24, &v)) {
				sp_err("invalid %s '%s' (expected 16..16777216)",
				       c == OPT_MAX_QUERIES ? "--max-queries"
							    : "--max-threads",
				       optarg);
				return -EINVAL;
			}
			if (c == OPT_MAX_QUERIES)
				env->max_queries = (unsigned int)v;
			else
				env->max_threads = (unsigned int)v;
			break;
		case 'v':
			sp_verbose = true;
			break;
		case 'h':
			print_usage(stdout);
			exit(0);
		default:
			print_usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		env->cmd = &argv[optind];
	if (!env->npids && !env->cmd) {
		sp_err("nothing to trace: give -p PID or -- CMD (see --help)");
		return -EINVAL;
	}
	if (env->npids && env->cmd) {
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

static int check_pids_exist(const struct trace_env *env)
{
	int i;

	for (i = 0; i < env->npids; i++) {
		if (kill(env->pids[i], 0) && errno == ESRCH) {
			sp_err("pid %d: no such process (check the PID)",
			       (int)env->pids[i]);
			return -ESRCH;
		}
	}
	return 0;
}

static int open_and_load(struct trace_state *ts, bool multi)
{
	struct bpf_program *prog;
	int err;

	ts->skel = query_bpf__open();
	if (!ts->skel)
		return -errno;
	bpf_object__for_each_program(prog, ts->skel->obj)
		if (multi && prog != ts->skel->progs.sp_thread_exit)
			attach__prepare_multi(prog);
	err = query_maps__resize(ts->skel, ts->env->max_queries,
				 ts->env->max_threads);
	if (!err)
		err = query_bpf__load(ts->skel);
	if (err) {
		query_bpf__destroy(ts->skel);
		ts->skel = NULL;
	}
	return err;
}

static int load_bpf(struct trace_state *ts)
{
	int err;

	/* uprobe_multi links first (Linux 6.6+), else one uprobe per site. */
	ts->multi = true;
	err = open_and_load(ts, true);
	if (err && err != -EPERM && err != -EACCES) {
		sp_info("no uprobe_multi links (%s); attaching site by site",
			strerror(-err));
		ts->multi = false;
		err = open_and_load(ts, false);
	}
	if (err) {
		privileges__explain_load_error(err, "the query BPF program");
		return err;
	}
	/* Frees the stacks of exiting threads and counts their open frames;
	 * optional: without it only the thread map can fill up. */
	ts->exit_link = bpf_program__attach(ts->skel->progs.sp_thread_exit);
	if (!ts->exit_link)
		sp_warn("cannot watch thread exits (%s): queries left open by exiting threads are not counted",
			strerror(errno));
	return 0;
}

static void bind_probes(struct trace_state *ts, struct probe_binding *b,
			size_t *n)
{
	struct query_bpf *s = ts->skel;
	size_t i = 0;

	b[i++] = (struct probe_binding){ "query_begin", s->progs.sp_query_begin };
	b[i++] = (struct probe_binding){ "query_end", s->progs.sp_query_end };
	b[i++] = (struct probe_binding){ "cache_hit", s->progs.sp_cache_hit };
	b[i++] = (struct probe_binding){ "blocked_begin", s->progs.sp_blocked_begin };
	b[i++] = (struct probe_binding){ "blocked_end", s->progs.sp_blocked_end };
	b[i++] = (struct probe_binding){ "incr_load_begin", s->progs.sp_incr_load_begin };
	b[i++] = (struct probe_binding){ "incr_load_end", s->progs.sp_incr_load_end };
	b[i++] = (struct probe_binding){ "thread_name", s->progs.sp_thread_name };
	*n = i;
}

static int attach_pids(struct trace_state *ts)
{
	struct trace_env *env = ts->env;
	int i, n, with_probes = 0;
	char comm[32];

	for (i = 0; i < env->npids; i++) {
		pid_t pid = env->pids[i];

		n = attacher__attach_pid(&ts->att, pid);
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
		with_probes++;
		addr_spaces__snapshot(&ts->spaces, pid);
		ts->pidfds[i] = (int)syscall(SYS_pidfd_open, pid, 0);
		ts->alive[i] = true;
		sp_info("pid %d (%s): %d probe sites attached", (int)pid,
			comm_of(pid, comm, sizeof(comm)), n);
	}
	return with_probes ? 0 : -ENOENT;
}

static int start_command(struct trace_state *ts)
{
	int err;

	err = launch__fork(&ts->launch, ts->env->cmd);
	if (err)
		return err;
	ts->launched = true;
	/* The executable's own probes, by file offset, before it exists as a
	 * mapping; its libraries are attached when ld.so stops it. */
	err = attacher__attach_file(&ts->att, ts->launch.pid, ts->launch.path,
				    ts->launch.path);
	if (err < 0)
		return err;
	return launch__arm_stopper(&ts->launch);
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
static void reap_child(struct trace_state *ts, bool *stop)
{
	int status;
	pid_t r;

	while ((r = waitpid(ts->launch.pid, &status,
			    WNOHANG | WUNTRACED)) > 0) {
		if (WIFSTOPPED(status)) {
			if (WSTOPSIG(status) == SIGSTOP &&
			    launch__stop_is_ours(&ts->launch)) {
				int n = attacher__attach_pid(&ts->att,
							     ts->launch.pid);

				if (n < 0 && n != -ESRCH)
					sp_warn("pid %d: attaching new libraries failed: %s",
						(int)ts->launch.pid,
						strerror(-n));
				addr_spaces__snapshot(&ts->spaces,
						      ts->launch.pid);
				kill(ts->launch.pid, SIGCONT);
			}
			continue;
		}
		ts->child_status = exit_status(status);
		ts->child_exited = true;
		*stop = true;
		return;
	}
}

static int wait_loop(struct trace_state *ts)
{
	struct trace_env *env = ts->env;
	struct pollfd pfd[MAX_PIDS + 1];
	struct timespec start, now;
	bool stop = false;
	int i, n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!stop) {
		int timeout = -1, live = 0;

		pfd[0] = (struct pollfd){ .fd = ts->sfd, .events = POLLIN };
		n = 1;
		for (i = 0; i < env->npids; i++) {
			if (!ts->alive[i])
				continue;
			live++;
			pfd[n++] = (struct pollfd){ .fd = ts->pidfds[i],
						    .events = POLLIN };
		}
		if (env->npids && !live)
			break;	/* every target exited */
		if (env->duration_s > 0) {
			double left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = env->duration_s -
			       ((double)(now.tv_sec - start.tv_sec) +
				(double)(now.tv_nsec - start.tv_nsec) / 1e9);
			if (left <= 0)
				break;
			timeout = (int)(left * 1000) + 1;
		}
		if (poll(pfd, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(ts->sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGCHLD && ts->launched) {
					reap_child(ts, &stop);
				} else if (si.ssi_signo == SIGINT ||
					   si.ssi_signo == SIGTERM) {
					ts->stop_signal = (int)si.ssi_signo;
					stop = true;
				}
			}
		}
		for (i = 0, n = 1; i < env->npids; i++) {
			if (!ts->alive[i])
				continue;
			if (pfd[n].revents & (POLLIN | POLLHUP | POLLERR)) {
				ts->alive[i] = false;
				sp_info("pid %d exited", (int)env->pids[i]);
			}
			n++;
		}
	}
	return 0;
}

static int setup_signals(struct trace_state *ts)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	ts->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return ts->sfd < 0 ? -errno : 0;
}

static int write_report(struct trace_state *ts, struct summary *s)
{
	FILE *out;
	int err;

	err = output__open(ts->env->output, ts->env->force, &out);
	if (err)
		return err;
	err = report__write(out, s, &ts->env->ropts);
	if (err)
		sp_err("%s: write failed: %s",
		       ts->env->output ? ts->env->output : "stdout",
		       strerror(-err));
	if (output__close(out, ts->env->output) && !err)
		err = -EIO;
	return err;
}

int cmd_trace(int argc, char **argv)
{
	struct trace_env env = { .sort = SORT_SELF };
	struct trace_state ts = { .env = &env, .sfd = -1 };
	struct probe_binding bindings[16];
	struct timespec t0, t1;
	struct summary s;
	size_t nb;
	int err, i;

	for (i = 0; i < MAX_PIDS; i++)
		ts.pidfds[i] = -1;
	summary__init(&s);
	err = parse_args(argc, argv, &env);
	if (err)
		return 1;
	if (output__precheck(env.output, env.force))
		return 1;
	sp_log_setup_libbpf();
	if (check_pids_exist(&env) || privileges__check())
		return 1;
	err = setup_signals(&ts);
	if (err) {
		sp_err("cannot set up signal handling: %s", strerror(-err));
		return 1;
	}
	err = load_bpf(&ts);
	if (err)
		goto cleanup;
	bind_probes(&ts, bindings, &nb);
	attacher__init(&ts.att, "sp", bindings, nb, ts.multi);

	err = env.cmd ? start_command(&ts) : attach_pids(&ts);
	if (err)
		goto cleanup;
	/* Every site is attached: let the BPF side count from now on. A
	 * command runs only now, so it is seen from its first instruction. */
	ts.skel->bss->armed = true;
	if (env.cmd) {
		err = launch__go(&ts.launch, env.cmd[0]);
		if (err)
			goto cleanup;
	}
	if (!env.cmd && !env.duration_s)
		fprintf(stderr, "sptrace: tracing %zu probe sites; Ctrl-C to stop\n",
			attacher__sites(&ts.att));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = wait_loop(&ts);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* Disarm, then detach: links go one by one, and an END still attached
	 * after its BEGIN is gone would count as unbalanced. */
	ts.skel->bss->armed = false;
	attacher__destroy(&ts.att);
	if (err)
		goto cleanup;

	s.duration_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			(uint64_t)(t1.tv_nsec - t0.tv_nsec);
	err = query_maps__read(ts.skel, &ts.spaces, &s);
	if (err) {
		sp_err("cannot read the BPF maps: %s", strerror(-err));
		goto cleanup;
	}
	if (env.cmd && !attacher__sites(&ts.att) && !s.nrows)
		sp_warn("'%s' has no sp probes in its executable or libraries (instrument it with probes/sp_probe.h)",
			env.cmd[0]);
	summary__finish(&s);
	summary__sort(&s, env.sort);
	err = write_report(&ts, &s);

cleanup:
	attacher__destroy(&ts.att);
	if (ts.launched) {
		if (!ts.child_exited && ts.launch.pid > 0) {
			int status;

			/* Stopped by us and never resumed? Let it go. */
			kill(ts.launch.pid, SIGCONT);
			if (ts.stop_signal)
				kill(ts.launch.pid, ts.stop_signal);
			if (waitpid(ts.launch.pid, &status, WNOHANG) > 0) {
				ts.child_status = exit_status(status);
				ts.child_exited = true;
			}
		}
		launch__destroy(&ts.launch);
	}
	bpf_link__destroy(ts.exit_link);
	query_bpf__destroy(ts.skel);
	addr_spaces__free(&ts.spaces);
	summary__free(&s);
	for (i = 0; i < env.npids; i++)
		if (ts.pidfds[i] >= 0)
			close(ts.pidfds[i]);
	if (ts.sfd >= 0)
		close(ts.sfd);
	if (err)
		return 1;
	if (ts.launched)
		return ts.child_exited ? ts.child_status
				       : 128 + (ts.stop_signal ? ts.stop_signal
							       : SIGTERM);
	return 0;
}
