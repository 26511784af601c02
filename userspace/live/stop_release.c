// SPDX-License-Identifier: MIT
/*
 * Stops that end when sptrace does: the maps every stopping program shares
 * (include/sptrace/stop_abi.h, created from bpf/stop_maps.bpf.c), sptrace's
 * side of a release, and the releaser, a process sptrace forks before it
 * loads anything that stops a process, which keeps these maps and no other
 * fd of sptrace's, and continues what sptrace left stopped once sptrace is
 * gone (bpf/stop_release.bpf.h says why that is race-free).
 *
 * Why a process and not the kernel's own cleanup: closing the programs'
 * links stops new stops, but nothing in the kernel continues a process a
 * SIGSTOP already stopped. ptrace would hold the process instead of
 * stopping it (its stops end when the tracer dies), but a followed process
 * may already be traced (gdb, strace), and PTRACE_O_EXITKILL kills.
 *
 * The releaser learns that sptrace is gone from EOF on a pipe whose write
 * end only sptrace holds (the kernel closes it however sptrace dies), or
 * from PR_SET_PDEATHSIG, whichever comes first: a child sptrace forked
 * without exec (a scratch process of site_guard.c) may hold a copy of the
 * write end for a while. It ignores the terminal's signals and leaves
 * sptrace's session, so that Ctrl-C, or a kill of sptrace's process group,
 * does not take it with sptrace. Everything it runs after fork() is
 * async-signal-safe: sptrace may have threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sptrace/stop_abi.h>
#include "log.h"
#include "privileges.h"
#include "stop_maps.skel.h"
#include "stop_release.h"

static volatile sig_atomic_t parent_gone;

static void on_parent_death(int sig)
{
	(void)sig;
	parent_gone = 1;
}

/* Is pid still the process whose leader started at start_ns (boot time,
 * ns)? /proc/PID/stat's 22nd field is that time in clock ticks. */
static bool same_process(__u32 pid, __u64 start_ns, long tck)
{
	char path[32], buf[512], *p;
	unsigned long long v = 0;
	int fd, field = 2;
	ssize_t n;

	if (!start_ns || tck <= 0)
		return true;	/* not known: continue it anyway */
	/* No snprintf after fork(): it may take locks. */
	p = path + sizeof(path);
	*--p = 0;
	memcpy(p -= 5, "/stat", 5);
	do
		*--p = (char)('0' + pid % 10);
	while ((pid /= 10));
	memcpy(p -= 6, "/proc/", 6);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;	/* gone */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the name may hold anything but this */
	if (!p)
		return false;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (unsigned long long)(*p++ - '0');
	return v == start_ns / (1000000000ull / (unsigned long long)tck);
}

/* Continues every process whose stops outnumber the releases. Entries may
 * go meanwhile (their processes exit): bounded, since a deleted key
 * restarts the walk. */
static void sweep(int held, int released, long tck)
{
	__u32 key = 0, next;
	bool first = true;
	int i;

	for (i = 0; i < 4 * SP_STOP_MAX; i++) {
		struct sp_stop_held h;
		__u64 done = 0;

		if (bpf_map_get_next_key(held, first ? NULL : &key, &next))
			break;
		first = false;
		key = next;
		if (bpf_map_lookup_elem(held, &key, &h))
			continue;
		bpf_map_lookup_elem(released, &key, &done);	/* none: 0 */
		if (h.stops != done && same_process(key, h.start_ns, tck))
			kill((pid_t)key, SIGCONT);
	}
}

/* Sets `closed`: nothing stops a process from now on. */
static void set_closed(int ctl_fd)
{
	struct sp_stop_ctl ctl = { 0 };
	__u32 zero = 0;

	bpf_map_lookup_elem(ctl_fd, &zero, &ctl);
	ctl.closed = 1;
	bpf_map_update_elem(ctl_fd, &zero, &ctl, BPF_ANY);
}

static void __attribute__((noreturn))
releaser(const struct stop_release *sr, int rfd, pid_t parent, long tck)
{
	int keep[4] = { sr->held_fd, sr->released_fd, sr->ctl_fd, rfd };
	int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN,
		       SIGTTOU, SIGPIPE };
	struct sigaction sa = { .sa_handler = on_parent_death };
	unsigned int lo = 3;
	sigset_t none;
	size_t i, j;
	char c;

	/* Nothing of sptrace's but these four fds: in particular no BPF
	 * link, which would outlive sptrace here. */
	for (i = 0; i < 4; i++)
		for (j = i + 1; j < 4; j++)
			if (keep[j] < keep[i]) {
				int t = keep[i];

				keep[i] = keep[j];
				keep[j] = t;
			}
	for (i = 0; i < 4; i++) {
		if ((unsigned int)keep[i] > lo)
			close_range(lo, (unsigned int)keep[i] - 1, 0);
		lo = (unsigned int)keep[i] + 1;
	}
	close_range(lo, ~0U, 0);

	setsid();
	prctl(PR_SET_NAME, "sptrace-release");
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_IGN);
	sigaction(SIGUSR1, &sa, NULL);	/* no SA_RESTART: read() returns */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
	if (getppid() != parent)
		parent_gone = 1;	/* died before the prctl */

	while (!parent_gone) {
		ssize_t n = read(rfd, &c, 1);

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	/* (a) then (b) of stop_release.bpf.h, with a full barrier between
	 * the store to the map and the loads of the walk. */
	set_closed(sr->ctl_fd);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	sweep(sr->held_fd, sr->released_fd, tck);
	_exit(0);
}

void stop_release__init(struct stop_release *sr)
{
	memset(sr, 0, sizeof(*sr));
	sr->held_fd = sr->released_fd = sr->ctl_fd = sr->pipe_fd = -1;
}

/* The kernel's inode number of the initial PID namespace. */
#define PROC_PID_INIT_INO 0xEFFFFFFCu

/* sptrace's PID namespace, unless it is the initial one (see
 * sp_stop_ctl.ns_ino), into the control map. 0 or -errno. */
static int set_pid_ns(int ctl_fd)
{
	struct sp_stop_ctl ctl = { 0 };
	struct stat st;
	__u32 zero = 0;

	if (stat("/proc/self/ns/pid", &st))
		return -errno;
	if (st.st_ino != PROC_PID_INIT_INO) {
		ctl.ns_dev = (__u64)st.st_dev;
		ctl.ns_ino = (__u64)st.st_ino;
	}
	return bpf_map_update_elem(ctl_fd, &zero, &ctl, BPF_ANY) ? -errno : 0;
}

int stop_release__open(struct stop_release *sr)
{
	long tck = sysconf(_SC_CLK_TCK);
	pid_t parent = getpid();
	struct stop_maps_bpf *skel;
	int p[2], err;

	stop_release__init(sr);
	skel = stop_maps_bpf__open_and_load();
	if (!skel) {
		err = -errno;
		privileges__explain_load_error(err, "the maps that end sptrace's stops if it dies");
		return err;
	}
	/* Ours, not the object's: it goes now, the maps stay. */
	sr->held_fd = fcntl(bpf_map__fd(skel->maps.stop_held), F_DUPFD_CLOEXEC, 0);
	sr->released_fd = fcntl(bpf_map__fd(skel->maps.stop_released),
				F_DUPFD_CLOEXEC, 0);
	sr->ctl_fd = fcntl(bpf_map__fd(skel->maps.stop_ctl), F_DUPFD_CLOEXEC, 0);
	stop_maps_bpf__destroy(skel);
	err = sr->held_fd < 0 || sr->released_fd < 0 || sr->ctl_fd < 0 ?
	      -errno : set_pid_ns(sr->ctl_fd);
	if (err) {
		sp_err("cannot set up the maps that end sptrace's stops if it dies: %s",
		       strerror(-err));
		goto fail;
	}
	if (pipe2(p, O_CLOEXEC)) {
		err = -errno;
		sp_err("cannot start the process that ends sptrace's stops if it dies: pipe: %s",
		       strerror(-err));
		goto fail;
	}
	sr->pid = fork();
	if (sr->pid < 0) {
		err = -errno;
		sr->pid = 0;
		sp_err("cannot start the process that ends sptrace's stops if it dies: fork: %s",
		       strerror(-err));
		close(p[0]);
		close(p[1]);
		goto fail;
	}
	if (sr->pid == 0) {
		close(p[1]);
		releaser(sr, p[0], parent, tck);
	}
	close(p[0]);
	sr->pipe_fd = p[1];
	return 0;
fail:
	stop_release__close(sr);
	return err;
}

int stop_release__use(const struct stop_release *sr, struct bpf_map *held,
		      struct bpf_map *released, struct bpf_map *ctl)
{
	int err;

	if (!sr || sr->held_fd < 0) {
		/* Never stops: one entry each (a hash cannot have none). */
		err = bpf_map__set_max_entries(held, 1);
		if (!err)
			err = bpf_map__set_max_entries(released, 1);
		return err;
	}
	err = bpf_map__reuse_fd(held, sr->held_fd);
	if (!err)
		err = bpf_map__reuse_fd(released, sr->released_fd);
	if (!err)
		err = bpf_map__reuse_fd(ctl, sr->ctl_fd);
	return err;
}

void stop_release__continue(const struct stop_release *sr, pid_t tgid)
{
	struct sp_stop_held h;
	__u32 key = (__u32)tgid;
	bool known;

	/* The count read before the SIGCONT: a stop made after it is one
	 * more than this, which the releaser ends if sptrace cannot. */
	known = sr && sr->held_fd >= 0 &&
		!bpf_map_lookup_elem(sr->held_fd, &key, &h);
	kill(tgid, SIGCONT);
	if (known)
		bpf_map_update_elem(sr->released_fd, &key, &h.stops, BPF_ANY);
}

void stop_release__check(struct stop_release *sr)
{
	if (sr->pid <= 0 || sr->ctl_fd < 0 ||
	    waitpid(sr->pid, NULL, WNOHANG) != sr->pid)
		return;
	sr->pid = 0;
	sr->lost = true;
	/* Nothing may stop a process now that nobody is sure to end it. */
	set_closed(sr->ctl_fd);
	sp_warn("the process that ends sptrace's stops if sptrace dies has exited: processes are no longer stopped for attaching, and files they map from now on are attached late");
}

void stop_release__close(struct stop_release *sr)
{
	int i;

	if (sr->pipe_fd >= 0)
		close(sr->pipe_fd);	/* the releaser sweeps and exits */
	if (sr->held_fd >= 0)
		close(sr->held_fd);
	if (sr->released_fd >= 0)
		close(sr->released_fd);
	if (sr->ctl_fd >= 0)
		close(sr->ctl_fd);
	/* Reaped if quick; else it ends by itself (PR_SET_PDEATHSIG). */
	for (i = 0; sr->pid > 0 && i < 100; i++) {
		if (waitpid(sr->pid, NULL, WNOHANG) == sr->pid)
			break;
		usleep(10000);
	}
	stop_release__init(sr);
}
