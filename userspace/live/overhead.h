/* SPDX-License-Identifier: MIT */
/*
 * What sptrace's probes cost the processes it traces (issue 27): the hits
 * that BPF counts per process (query_abi.h's enum sp_hit), priced by a
 * calibration on this machine and the kernel's own run time of each BPF
 * program, over each process's CPU time. docs/numbers.md, "Overhead".
 */
#ifndef SPTRACE_OVERHEAD_H
#define SPTRACE_OVERHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sptrace/query_abi.h>

struct summary_overhead;

/* The calibration's prices, ns a hit; 0: not measured. */
struct overhead_calib {
	double event_trap_ns;	/* a per-event sp site, attached as the
				 * site guard attaches them (site_guard.h) */
	double nop_trap_ns;	/* a 1-byte nop site: sp:flush, --query */
	double func_trap_ns;	/* half a function's entry and return probe */
	double func_step_ns;	/* an entry probe the kernel single-steps */
	double record_ns;	/* one batched append's work in the host,
				 * stamped by clock_gettime() */
	double record_tsc_ns;	/* the same, stamped with the TSC */
	int err;		/* why not measured: 0 or -errno */
};

struct overhead_proc {
	uint32_t pid;
	uint64_t start_ticks;		/* with pid, the process */
	uint64_t hits[SP_HIT__MAX];	/* latest, the whole session */
	uint64_t base[SP_HIT__MAX];	/* taken from its deleted BPF entry */
	/* The window of its share: hits and CPU time at its first reading
	 * (0 for a process started traced) and at its last. */
	uint64_t hits0[SP_HIT__MAX], hits1[SP_HIT__MAX];
	uint64_t cpu0_ns, cpu1_ns;
	bool window;			/* cpu0 is known */
	bool gone;			/* exited; its BPF entry deleted */
};

/* A BPF program whose runs are hits of `kind`, for its run time. */
struct overhead_prog {
	int fd;
	int kind;			/* enum sp_hit, or -1: system-wide */
};

struct overhead {
	struct overhead_calib cal;
	pthread_t thread;
	bool started, joined;
	bool cal_done;			/* the thread is done (atomic) */
	bool tsc;			/* records stamped with the TSC */
	int stats_fd;			/* bpf_enable_stats(): while open, the
					 * kernel times every BPF program */
	int hits_fd;			/* the `probe_hits` map, or -1 */
	int ncpus;
	uint64_t armed_ticks;		/* CLOCK_BOOTTIME at arming, clock ticks */
	bool armed;
	pid_t launched;			/* launch mode: the command */
	uint64_t launched_cpu_ns;	/* its CPU time once reaped; 0: not yet */
	uint64_t next_sample_ns;
	struct overhead_proc *procs;	/* sorted by pid */
	size_t nprocs, cap;
};

/*
 * At the start of the BPF load: turns the kernel's BPF run-time statistics
 * on for the session, and starts the calibration in a thread (scratch
 * children: 50-150 ms, beside the load, done before the target runs).
 * Never fails: what cannot be measured is said with -v and left out.
 */
void overhead__start(struct overhead *oh);
/* Records are stamped with the TSC (the price of an append). */
void overhead__set_tsc(struct overhead *oh, bool tsc);
/* After the load: the `probe_hits` map (its catch-all key 0 made). */
int overhead__set_map(struct overhead *oh, int hits_fd);
/* Counting starts: the CPU time of the given processes is read now. */
void overhead__armed(struct overhead *oh, const pid_t *pids, size_t n,
		     pid_t launched);
/* The launched command was reaped, having used cpu_ns of CPU time. */
void overhead__reaped(struct overhead *oh, uint64_t cpu_ns);
/* Reads hits and CPU times now. 0 or -errno. */
int overhead__refresh(struct overhead *oh);
/* From the session's loop: reads hits and CPU times every 250 ms. */
void overhead__tick(struct overhead *oh, uint64_t now);
/*
 * Reads hits and CPU times now and prices them into *out (its procs
 * malloc'd, the caller's). progs: the loaded programs by kind. 0 or
 * -errno (out->known false).
 */
int overhead__figures(struct overhead *oh, const struct overhead_prog *progs,
		      int nprogs, struct summary_overhead *out);
/*
 * Process pid at its latest reading: its hits since its window started,
 * priced now (*func_ns: its --func probes' part), and its CPU time then
 * and at the window's start. -EAGAIN while the calibration runs,
 * -ENODATA without a reading. For --max-overhead (sampler.h).
 */
int overhead__latest(struct overhead *oh, const struct overhead_prog *progs,
		     int nprogs, uint32_t pid, uint64_t *probe_ns,
		     uint64_t *func_ns, uint64_t *cpu_ns, uint64_t *cpu0_ns);
void overhead__destroy(struct overhead *oh);

#endif /* SPTRACE_OVERHEAD_H */
