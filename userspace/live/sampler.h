/* SPDX-License-Identifier: MIT */
/*
 * --max-overhead: keeping sptrace's cost on each traced process under a
 * share of its CPU time by tracing it in 1 of N time windows (sampler.c).
 */
#ifndef SPTRACE_SAMPLER_H
#define SPTRACE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "summary.h"

struct attacher;
struct overhead;
struct overhead_prog;

/* Length of a sampling window (the summary says it). */
#define SAMPLER_WINDOW_NS SUMMARY_SAMPLE_WINDOW_NS
/* The sparsest sampling: 1 window in this many. */
#define SAMPLER_MAX_EVERY 1024u

struct sampled_sema {
	uint64_t addr;		/* in the process */
	uint16_t val;		/* its value before it was lowered */
	bool lowered;
};

struct sampled_proc {
	uint32_t pid;
	unsigned int every;	/* traced in 1 of `every` windows; 1: all */
	bool off;		/* its semaphores lowered now */
	uint32_t epoch;		/* the window open, as BPF knows it */
	uint64_t first_ns;	/* CLOCK_BOOTTIME: its traced time starts */
	uint64_t state_ns;	/* when `off` last changed */
	uint64_t on_ns;		/* time traced, first_ns to state_ns */
	uint64_t shed_ns;	/* when it was first sampled; 0: never */
	uint64_t stop_ns;	/* sampler__stop(): its traced time ends */
	uint64_t cpu_at_on;	/* its CPU time when the open window opened */
	uint64_t cpu_on_ns;	/* its CPU time inside windows, closed ones */
	bool numbered;		/* in BPF's `sample_epochs` */
	unsigned int max_every;	/* the sparsest it was sampled at */
	/* The controller's last reading: priced hits, CPU time, CPU time
	 * inside windows. */
	uint64_t probe0, cpu0, on0;
	bool have0;
	struct sampled_sema *semas;
	size_t nsemas;
	bool semas_read;	/* semas found (a process's files attached) */
	/* --func probes, shed for the whole session before any sampling:
	 * whether they were on at its last reading, its CPU time and probe
	 * time in the stretches they were on (closed ones), the readings
	 * where the open stretch began, and the priced --func hits at the
	 * last decision. */
	bool func_on, func_shed;
	uint64_t func_cpu_ns, func_probe_ns, func_cpu_at, func_probe_at;
	uint64_t func0;
};

struct sampler {
	double budget;		/* share of a process's CPU time; 0: off */
	int epochs_fd;		/* the `sample_epochs` map */
	volatile bool *sampling;	/* BPF's flag (.bss) */
	const struct attacher *att;	/* the sp files and their semaphores */
	struct overhead *oh;
	const struct overhead_prog *progs;	/* for the prices */
	int nprogs;
	int (*drain)(void *ctx);	/* the rings, before a window opens */
	void *drain_ctx;
	/* --func links, shed first (NULL: no --func); when they may come
	 * back (CLOCK_BOOTTIME), the wait before the next try, and when
	 * they last came back. */
	struct attacher *fatt;
	bool shed_funcs;	/* a decision asks for it */
	uint64_t funcs_back_ns, funcs_wait_ns, funcs_on_ns;
	uint64_t t0;		/* CLOCK_BOOTTIME at arming: the window grid */
	uint64_t next_decide_ns;
	bool running;
	struct sampled_proc *procs;	/* sorted by pid */
	size_t nprocs, cap;
};

/* Budget `pct` percent (0: none: the sampler does nothing). */
void sampler__init(struct sampler *sm, double pct);
/* Counting armed: the window grid starts now. */
void sampler__start(struct sampler *sm);
/* From the session's loop: decides each process's sampling every half
 * second and opens and closes windows. */
void sampler__tick(struct sampler *sm);
/* Before detaching: every semaphore back, every window open. */
void sampler__stop(struct sampler *sm);
/*
 * The share of its work each sampled process was traced in, for scaling
 * its rows (by its CPU time less its probes', from `o`, the overhead
 * figures of the same read; else by wall time): *out malloc'd (sorted by pid), *n of them; none
 * (NULL, 0) when nothing was sampled. 0 or -ENOMEM.
 */
int sampler__scales(const struct sampler *sm, const struct summary_overhead *o,
		    struct summary_sampled **out, size_t *n);
void sampler__destroy(struct sampler *sm);

#endif /* SPTRACE_SAMPLER_H */
