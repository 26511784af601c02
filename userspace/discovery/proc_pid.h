/* SPDX-License-Identifier: MIT */
/*
 * discovery/ layer: what a PID names, from /proc/PID/stat and /proc/PID/comm:
 * its name, state, parent, start time, and whether it is a process sptrace
 * can trace at all (a user process whose mappings it may read), so that a
 * PID that cannot work is refused before anything is loaded.
 *
 * Nothing here prints; callers name the PID in their own message.
 */
#ifndef SPTRACE_PROC_PID_H
#define SPTRACE_PROC_PID_H

#include <stddef.h>
#include <stdint.h>

struct proc_pid_stat {
	char comm[64];		/* between the first '(' and the last ')' */
	char state;		/* 'R', 'S', 'Z', ... */
	int ppid;
	uint64_t flags;		/* PF_* of the task */
	uint64_t start_ticks;	/* clock ticks since boot */
	uint64_t cpu_ticks;	/* utime + stime: CPU time of the whole process
				 * (its exited threads too), clock ticks */
};

/* Parses the text of a /proc/PID/stat file (comm may hold blanks and
 * parentheses: the fields after it start at the last ')'). 0 or -EINVAL. */
int proc_pid__parse_stat(const char *text, struct proc_pid_stat *st);
/* Reads /proc/PID/stat. 0 or -errno (-ENOENT: no such process). */
int proc_pid__stat(int pid, struct proc_pid_stat *st);

/* The start time of process `pid` (/proc/PID/stat field 22, in clock
 * ticks since boot: a PID that names a younger process than expected was
 * reused) and its parent. 0 or -errno (-ENOENT: no such process). */
int proc_pid__start_time(int pid, uint64_t *ticks, int *ppid);
/* The CPU time of process pid, all its threads (those exited too), in ns
 * (its CPU-time clock, clock_getcpuclockid()). 0 or -errno (-ESRCH: gone). */
int proc_pid__cpu_ns(int pid, uint64_t *ns);

/* `ticks` clock ticks of /proc/PID/stat (USER_HZ; 100 a second where
 * sysconf() cannot say) in ns. */
uint64_t proc_pid__ticks_ns(uint64_t ticks);

/* Its name (/proc/PID/comm) into buf, "?" when it cannot be read. */
const char *proc_pid__comm(int pid, char *buf, size_t len);

/*
 * Whether `pid` is something sptrace can trace: a user process, alive,
 * whose /proc/PID/maps this process may read. 0, or -errno with the reason
 * (the words after "pid N (comm): ") in why:
 *   -ENOENT  no such process
 *   -ESRCH   a zombie, or it exited while looked at
 *   -EINVAL  a kernel thread (no program, no mappings)
 *   -EACCES  its mappings are not ours to read (the hint names what is
 *            missing: CAP_SYS_PTRACE when we are root, else root too)
 */
int proc_pid__traceable(int pid, char *why, size_t len);

#endif /* SPTRACE_PROC_PID_H */
