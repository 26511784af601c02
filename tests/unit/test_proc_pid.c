// SPDX-License-Identifier: MIT
/*
 * Unit test of what a PID names (discovery/proc_pid.c): /proc/PID/stat
 * lines with the awkward names a process may give itself, and the verdicts
 * on this process (traceable), a child left a zombie, a PID that does not
 * exist, and pid 2 (kthreadd, a kernel thread on every Linux since 3.x).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "proc_pid.h"

static void test_parse(void)
{
	struct proc_pid_stat st;

	CHECK(!proc_pid__parse_stat("42 (a) (b c) S 1 42 42 0 -1 4194560 0 0 0 0 "
				    "170 30 7 9 20 0 1 0 12345 0 0\n", &st));
	/* utime + stime, not the children's (cutime, cstime) */
	CHECK_U64(st.cpu_ticks, 200);
	CHECK_STR(st.comm, "a) (b c");
	CHECK(st.state == 'S');
	CHECK_U64(st.ppid, 1);
	CHECK_U64(st.flags, 4194560);
	CHECK_U64(st.start_ticks, 12345);
	/* kthreadd: PF_KTHREAD (0x00200000) in the flags. */
	CHECK(!proc_pid__parse_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 "
				    "0 0 0 0 20 0 1 0 2 0 0", &st));
	CHECK(st.flags & 0x00200000);
	/* Cut short, no name, a sign where a number is: refused. */
	CHECK(proc_pid__parse_stat("42 (x) S 1 42", &st) == -EINVAL);
	CHECK(proc_pid__parse_stat("42 x S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 "
				   "1 0 5 0", &st) == -EINVAL);
	CHECK(proc_pid__parse_stat("42 (x) S -1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 "
				   "0 1 0 5 0", &st) == -EINVAL);
}

/* Clock ticks in ns: USER_HZ, 100 a second on Linux. */
static void test_ticks(void)
{
	long hz = sysconf(_SC_CLK_TCK);

	CHECK(hz > 0);
	CHECK_U64(proc_pid__ticks_ns(0), 0);
	CHECK_U64(proc_pid__ticks_ns((uint64_t)hz), 1000000000ull);
	CHECK_U64(proc_pid__ticks_ns(12345), 12345 * (1000000000ull / (uint64_t)hz));
}

static void test_verdicts(void)
{
	char why[256], comm[64];
	pid_t child;
	int status;

	CHECK(!proc_pid__traceable((int)getpid(), why, sizeof(why)));
	CHECK(proc_pid__traceable(4194303, why, sizeof(why)) == -ENOENT ||
	      kill(4194303, 0) == 0);
	CHECK(proc_pid__traceable(2, why, sizeof(why)) == -EINVAL);
	CHECK(strstr(why, "a kernel thread") != NULL);
	CHECK_STR(proc_pid__comm(2, comm, sizeof(comm)), "kthreadd");

	child = fork();
	if (child == 0)
		_exit(0);
	/* A zombie until reaped: wait for its state without reaping it. */
	CHECK(!waitid(P_PID, (id_t)child, NULL, WEXITED | WNOWAIT));
	CHECK(proc_pid__traceable((int)child, why, sizeof(why)) == -ESRCH);
	CHECK(strstr(why, "a zombie") != NULL);
	waitpid(child, &status, 0);
}

int main(void)
{
	RUN(test_parse);
	RUN(test_ticks);
	RUN(test_verdicts);
	return check_status();
}
