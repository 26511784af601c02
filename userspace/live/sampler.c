// SPDX-License-Identifier: MIT
/*
 * --max-overhead PCT: each traced process is traced in 1 of N windows of
 * 100 ms, N a power of two chosen so that the estimated cost of its probes
 * (overhead.c) stays under PCT percent of its CPU time.
 *
 * HOW A PROCESS IS NOT TRACED. Its sp probes are gated by their semaphores
 * (probes/sp_probe.h tests them before any work): outside its windows
 * sptrace lowers them to 0 in the process's memory, so a probe costs what
 * an untraced one does, a load and a branch, with no trap and no record.
 * At a window's start they get their values back (the kernel's count of
 * consumers; left alone if the kernel changed them meanwhile). Only sp
 * probes can be sampled: a --query probe has no semaphore to lower, and
 * --func probes have none either.
 *
 * WHAT A WINDOW'S EDGES CUT. An interval open when a window closes, or
 * begun before one opens and ended inside, is not counted: at a window's
 * start the rings are drained and the process's window number in BPF
 * (`sample_epochs`) goes up, so each thread's stack is emptied at its next
 * event and an END without its BEGIN counts as cut, not as an error
 * (SP_CNT_SAMPLE_CUT). Whole intervals of the windows are counted as
 * always; the summary scales a sampled process's rows by the share of its
 * time that was traced and marks them as estimates (docs/numbers.md).
 *
 * THE DECISION, every quarter of a second per process: the cost its probes
 * would have at full tracing, F = (priced hits since the last decision) /
 * (its CPU time in windows since then); N is the smallest
 * power of two with F / N <= 0.8 x the budget. It grows at once; it
 * shrinks a halving at a time, once F / (N / 2) <= 0.6 x the budget.
 *
 * THE ORDER. --func probes go first: a process over its budget whose
 * --func probes cost anything has them detached, for the whole session
 * (under -b and --follow one link serves every process), and only what
 * the sp probes cost then decides its N. A --func probe costs a trap per
 * call whatever its program does, so detaching is the only way to shed
 * it. They come back for a try once every process is traced in full, 2 s
 * after they went, then after twice as long each time a try ends shed
 * again (up to a minute; back to 2 s after a try that held 30 s). A
 * process's --func rows are scaled by the share of its work done while
 * they were on, found as the sp probes' share is (traced_share()).
 * --query probes are never shed: they have no semaphore, and no cheaper
 * way to be off than detached for good.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "attach.h"
#include "clock.h"
#include "log.h"
#include "overhead.h"
#include "proc_maps.h"
#include "proc_pid.h"
#include "query_maps.h"
#include "sampler.h"
#include "summary.h"
#include "vec.h"

#define DECIDE_NS 250000000ull
/* How far the overhead estimate's probe time may be off, relative (its
 * test, e2e_overhead, holds it to 1.5x; measured within 1.2x). */
#define PRICE_ERR 0.5
/* Too little CPU since the last decision to tell its cost. */
#define MIN_CPU_NS 10000000ull
/* --func probes shed: the first wait before they come back, the longest,
 * and how long a try must hold to start again from the first. */
#define FUNCS_WAIT_NS 2000000000ull
#define FUNCS_WAIT_MAX_NS 64000000000ull
#define FUNCS_HELD_NS 30000000000ull

static uint64_t boot_ns(void)
{
	return clock__ns(CLOCK_BOOTTIME);
}

void sampler__init(struct sampler *sm, double pct)
{
	memset(sm, 0, sizeof(*sm));
	sm->budget = pct > 0 ? pct / 100 : 0;
	sm->epochs_fd = -1;
}

void sampler__start(struct sampler *sm)
{
	if (!sm->budget)
		return;
	sm->t0 = boot_ns();
	sm->next_decide_ns = sm->t0;
	sm->running = true;
}

static struct sampled_proc *proc_get(struct sampler *sm, uint32_t pid,
				     uint64_t now)
{
	size_t at = VEC_LOWER_BOUND(sm->procs, sm->nprocs, pid, pid);
	struct sampled_proc *p;
	struct proc_pid_stat st;

	if (at < sm->nprocs && sm->procs[at].pid == pid)
		return &sm->procs[at];
	p = VEC_INSERT_AT(sm->procs, sm->nprocs, sm->cap, at);
	if (!p)
		return NULL;
	p->pid = pid;
	p->every = p->max_every = 1;
	/* Traced since arming, or since it started if later. */
	p->first_ns = sm->t0;
	if (!proc_pid__stat((int)pid, &st) &&
	    proc_pid__ticks_ns(st.start_ticks) > sm->t0)
		p->first_ns = proc_pid__ticks_ns(st.start_ticks);
	if (p->first_ns > now)
		p->first_ns = now;
	p->state_ns = p->first_ns;
	return p;
}

/* Where process p maps its files' semaphores (found once, when it is
 * first sampled: its files are attached by then). */
static int find_semas(struct sampler *sm, struct sampled_proc *p)
{
	struct proc_maps m;
	size_t i, j, k, n = 0;
	int err;

	p->semas_read = true;
	err = proc_maps__read((int)p->pid, &m);
	if (err)
		return err;
	for (i = 0; i < sm->att->nobjs; i++)
		n += sm->att->objs[i].nsemas;
	p->semas = calloc(n ? n : 1, sizeof(*p->semas));
	if (!p->semas) {
		proc_maps__free(&m);
		return -ENOMEM;
	}
	for (i = 0; i < sm->att->nobjs; i++) {
		const struct attached_obj *o = &sm->att->objs[i];

		if (o->pid > 0 && (uint32_t)o->pid != p->pid)
			continue;
		for (j = 0; j < o->nsemas; j++)
			for (k = 0; k < m.n; k++) {
				const struct proc_mapping *v = &m.v[k];

				if (makedev(v->dev_major, v->dev_minor) != o->dev ||
				    v->inode != o->ino || o->semas[j] < v->pgoff ||
				    o->semas[j] - v->pgoff >= v->end - v->start ||
				    v->perms[1] != 'w')
					continue;
				p->semas[p->nsemas++].addr =
					v->start + o->semas[j] - v->pgoff;
				break;
			}
	}
	proc_maps__free(&m);
	return 0;
}

static int mem_rw(pid_t pid, uint64_t addr, uint16_t *v, bool write)
{
	struct iovec local = { .iov_base = v, .iov_len = sizeof(*v) };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr,
				.iov_len = sizeof(*v) };
	ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)sizeof(*v) ? 0 : n < 0 ? -errno : -EIO;
}

/* Outside a window: its semaphores to 0, their values kept. */
static void lower(struct sampled_proc *p)
{
	size_t i;

	for (i = 0; i < p->nsemas; i++) {
		struct sampled_sema *s = &p->semas[i];
		uint16_t zero = 0;

		if (s->lowered || mem_rw((pid_t)p->pid, s->addr, &s->val, false) ||
		    !s->val || mem_rw((pid_t)p->pid, s->addr, &zero, true))
			continue;
		s->lowered = true;
	}
}

/* A window opens: what the closed one left in the rings counted first,
 * then a new window number (BPF empties the stacks), then the semaphores
 * back where the kernel has not changed them meanwhile. */
static void raise_(struct sampler *sm, struct sampled_proc *p)
{
	size_t i;

	if (sm->drain)
		(void)sm->drain(sm->drain_ctx);
	p->epoch++;
	if (bpf_map_update_elem(sm->epochs_fd, &p->pid, &p->epoch, BPF_ANY))
		sp_info("pid %u: sampling window not numbered (%s)", p->pid,
			strerror(errno));
	for (i = 0; i < p->nsemas; i++) {
		struct sampled_sema *s = &p->semas[i];
		uint16_t now;

		if (!s->lowered)
			continue;
		s->lowered = false;
		if (!mem_rw((pid_t)p->pid, s->addr, &now, false) && !now)
			(void)mem_rw((pid_t)p->pid, s->addr, &s->val, true);
	}
}

/* Its CPU time inside windows, to `cpu` (its CPU time now) if a window is
 * open. */
static uint64_t on_cpu(const struct sampled_proc *p, uint64_t cpu)
{
	return p->cpu_on_ns +
	       (!p->off && cpu > p->cpu_at_on ? cpu - p->cpu_at_on : 0);
}

/* Known to BPF as sampled (`sample_epochs`): what a switch's edge cuts
 * (an END whose BEGIN came before) counts as cut, not as an error. */
static void number(struct sampler *sm, struct sampled_proc *p)
{
	if (p->numbered)
		return;
	p->numbered = true;
	if (bpf_map_update_elem(sm->epochs_fd, &p->pid, &p->epoch, BPF_ANY))
		sp_info("pid %u: sampling window not numbered (%s)", p->pid,
			strerror(errno));
}

static void set_off(struct sampler *sm, struct sampled_proc *p, bool off,
		    uint64_t now)
{
	uint64_t cpu = 0;
	bool known;

	if (p->off == off)
		return;
	known = !proc_pid__cpu_ns((int)p->pid, &cpu);
	if (!p->off)
		p->on_ns += now - p->state_ns;
	if (!p->off && known)
		p->cpu_on_ns = on_cpu(p, cpu);
	p->state_ns = now;
	p->off = off;
	if (off) {
		/* Known to BPF from its first window's close: what that cuts
		 * is counted as cut, even if no window opens again. */
		number(sm, p);
		lower(p);
	} else {
		/* Gone (sampler__stop() after its exit): no CPU time to add. */
		p->cpu_at_on = known ? cpu : UINT64_MAX;
		raise_(sm, p);
	}
}

/* Time traced from first_ns to now. */
static uint64_t traced_ns(const struct sampled_proc *p, uint64_t now)
{
	return p->on_ns + (p->off ? 0 : now - p->state_ns);
}

static unsigned int every_for(double full, double budget)
{
	unsigned int n = 1;

	while (n < SAMPLER_MAX_EVERY && full / n > 0.8 * budget)
		n *= 2;
	return n;
}

/* The readings its next decision counts from. */
static void rebase(struct sampled_proc *p, uint64_t probe, uint64_t func,
		   uint64_t cpu, uint64_t on)
{
	p->probe0 = probe;
	p->func0 = func;
	p->cpu0 = cpu;
	p->on0 = on;
}

/* The decision for one process (THE DECISION above). */
static void decide(struct sampler *sm, struct sampled_proc *p, uint64_t now)
{
	uint64_t probe, func, cpu, cpu_start, on;
	unsigned int want;
	double full, funcs;

	if (overhead__latest(sm->oh, sm->progs, sm->nprogs, p->pid, &probe,
			     &func, &cpu, &cpu_start))
		return;
	if (!p->have0) {
		/* From the start of its window, traced in full until now. */
		p->cpu_at_on = cpu_start;
		rebase(p, 0, 0, cpu_start, 0);
		p->have0 = true;
		p->func_on = sm->fatt && !sm->fatt->funcs_off;
		p->func_cpu_at = cpu_start;
		p->func_probe_at = 0;
	}
	on = on_cpu(p, cpu);
	if (probe < p->probe0 || cpu < p->cpu0 || on < p->on0 ||
	    func < p->func0) {
		rebase(p, probe, func, cpu, on);
		return;
	}
	/* Its CPU time in windows since: what the probes cost there. */
	if (on - p->on0 < MIN_CPU_NS)
		return;		/* too little traced since: nothing learnt */
	full = (double)(probe - p->probe0) / (double)(on - p->on0);
	funcs = (double)(func - p->func0) / (double)(on - p->on0);
	rebase(p, probe, func, cpu, on);
	if (full > 0.8 * sm->budget && funcs > 0 && sm->fatt &&
	    !sm->fatt->funcs_off) {
		/* THE ORDER: --func probes first. */
		sp_info("pid %u: probes cost an estimated %.2f%% of its CPU time, %.2f%% of it --func probes, budget %.2f%%: --func probes shed first",
			p->pid, 100 * full, 100 * funcs, 100 * sm->budget);
		sm->shed_funcs = true;
		full -= funcs;
	}
	want = every_for(full, sm->budget);
	if (want < p->every && full / (p->every / 2) > 0.6 * sm->budget)
		want = p->every;
	else if (want < p->every)
		want = p->every / 2;
	if (want == p->every)
		return;
	if (want > 1 && !p->semas_read) {
		int err = find_semas(sm, p);

		if (err || !p->nsemas) {
			sp_info("pid %u: cannot sample it (%s): traced in full",
				p->pid, err ? strerror(-err) : "no sp semaphores");
			return;
		}
	}
	if (want > 1 && !p->nsemas)
		return;
	sp_info("pid %u: probes cost an estimated %.2f%% of its CPU time traced in full, budget %.2f%%: traced in 1 of %u windows of %llu ms (was 1 of %u)",
		p->pid, 100 * full, 100 * sm->budget, want,
		SAMPLER_WINDOW_NS / 1000000, p->every);
	if (want > 1 && !p->shed_ns)
		p->shed_ns = now;
	if (want > p->max_every)
		p->max_every = want;
	p->every = want;
	if (!*sm->sampling && want > 1)
		*sm->sampling = true;
}

/*
 * --func probes on or off (THE ORDER), and each process's readings where
 * its stretch with them on began or ended. Attaching and closing take
 * milliseconds (closing waits for a grace period after the probes are
 * gone), so a stretch starts at a CPU reading taken once the links are
 * made and ends at one taken before they close, and takes the probes'
 * hits read after they closed. Return probes are attached first
 * (attach.c): a call caught between the two links has its return and not
 * its entry, which BPF counts as cut for a process numbered here.
 */
static void funcs_switch(struct sampler *sm, bool on, uint64_t now)
{
	uint64_t probe, func, cpu, cpu_start;
	size_t i;
	int n = 0;

	for (i = 0; i < sm->nprocs; i++)
		number(sm, &sm->procs[i]);
	*sm->sampling = true;
	if (on) {
		n = attacher__set_funcs(sm->fatt, true);
	} else {
		/* CPU readings before the links close. */
		(void)overhead__refresh(sm->oh);
		for (i = 0; i < sm->nprocs; i++) {
			struct sampled_proc *p = &sm->procs[i];

			if (p->have0 && p->func_on &&
			    !overhead__latest(sm->oh, sm->progs, sm->nprogs,
					      p->pid, &probe, &func, &cpu,
					      &cpu_start))
				p->func_cpu_ns += cpu - p->func_cpu_at;
		}
		(void)attacher__set_funcs(sm->fatt, false);
	}
	(void)overhead__refresh(sm->oh);
	for (i = 0; i < sm->nprocs; i++) {
		struct sampled_proc *p = &sm->procs[i];

		if (!p->have0 ||
		    overhead__latest(sm->oh, sm->progs, sm->nprogs, p->pid,
				     &probe, &func, &cpu, &cpu_start))
			continue;
		/* Its next decision learns from what follows the switch. */
		rebase(p, probe, func, cpu, on_cpu(p, cpu));
		if (p->func_on == on)
			continue;
		if (on) {
			p->func_cpu_at = cpu;
			p->func_probe_at = probe;
		} else {
			p->func_probe_ns += probe - p->func_probe_at;
			p->func_shed = true;
		}
		p->func_on = on;
	}
	if (on) {
		sm->funcs_on_ns = now;
		sp_info("--func probes attached again to %d %s, for a try",
			n, n == 1 ? "file" : "files");
		return;
	}
	if (!sm->funcs_wait_ns || now - sm->funcs_on_ns >= FUNCS_HELD_NS)
		sm->funcs_wait_ns = FUNCS_WAIT_NS;
	else if (sm->funcs_wait_ns < FUNCS_WAIT_MAX_NS)
		sm->funcs_wait_ns *= 2;
	sm->funcs_back_ns = now + sm->funcs_wait_ns;
	sp_info("--func probes detached (the budget's first step); tried again in %llu s if every process is then traced in full",
		(unsigned long long)(sm->funcs_wait_ns / 1000000000ull));
}

/* After the decisions: shed --func probes if one asked, or try them again
 * once their wait is over and every process is traced in full. */
static void funcs_decide(struct sampler *sm, uint64_t now)
{
	size_t i;

	if (!sm->fatt)
		return;
	if (sm->shed_funcs) {
		sm->shed_funcs = false;
		funcs_switch(sm, false, now);
		return;
	}
	if (!sm->fatt->funcs_off || now < sm->funcs_back_ns)
		return;
	for (i = 0; i < sm->nprocs; i++)
		if (sm->procs[i].every > 1)
			return;
	funcs_switch(sm, true, now);
}

void sampler__tick(struct sampler *sm)
{
	uint64_t now, k;
	size_t i;

	if (!sm->running)
		return;
	now = boot_ns();
	if (now >= sm->next_decide_ns) {
		const struct overhead *oh = sm->oh;

		sm->next_decide_ns = now + DECIDE_NS;
		(void)overhead__refresh(sm->oh);	/* with on_cpu(): now */
		for (i = 0; i < oh->nprocs; i++) {
			const struct overhead_proc *op = &oh->procs[i];
			struct sampled_proc *p;

			if (!op->pid || op->gone || !op->window)
				continue;
			p = proc_get(sm, op->pid, now);
			if (p)
				decide(sm, p, now);
		}
		funcs_decide(sm, now);
	}
	/* Window k of the grid is open for a process traced in 1 of N
	 * windows when k % N == 0. */
	k = (now - sm->t0) / SAMPLER_WINDOW_NS;
	for (i = 0; i < sm->nprocs; i++) {
		struct sampled_proc *p = &sm->procs[i];

		set_off(sm, p, p->every > 1 && k % p->every, now);
	}
}

void sampler__stop(struct sampler *sm)
{
	uint64_t now = boot_ns();
	size_t i;

	if (!sm->running)
		return;
	for (i = 0; i < sm->nprocs; i++) {
		set_off(sm, &sm->procs[i], false, now);
		sm->procs[i].stop_ns = now;
	}
	sm->running = false;
}

/* Its window in the overhead figures (overhead.h), or NULL. */
static const struct summary_cost *cost_of(const struct summary_overhead *o,
					  uint32_t pid)
{
	unsigned int i;

	for (i = 0; o && o->known && i < o->nprocs; i++)
		if (o->procs[i].pid == pid)
			return &o->procs[i];
	return NULL;
}

/*
 * The share of a sampled process's work that was traced: of its CPU time
 * less its probes' (which all ran in windows), the part in windows. By CPU
 * time, not wall time: a CPU-bound process does less work in a window,
 * where the probes slow it, than outside. *bias: how far it may be off,
 * relative: the probes' time is an estimate (within PRICE_ERR of the
 * truth), and where it is most of the CPU time in windows, the work left
 * there is small and that error large against it. By wall time where the
 * CPU time is unknown.
 */
static double traced_share(const struct sampled_proc *p,
			   const struct summary_cost *c, uint64_t end,
			   double *bias)
{
	uint64_t cpu;
	double work, on;

	if (c && c->win_cpu_ns > c->win_probe_ns && c->cpu_end_ns) {
		/* Its CPU time at its last reading (alive, or at exit). */
		cpu = c->cpu_end_ns;
		if (!p->off && !proc_pid__cpu_ns((int)p->pid, &cpu) &&
		    cpu < c->cpu_end_ns)
			cpu = c->cpu_end_ns;
		work = (double)(c->win_cpu_ns - c->win_probe_ns);
		on = (double)on_cpu(p, cpu) - (double)c->win_probe_ns;
		if (on > 0 && on <= work) {
			*bias = PRICE_ERR * (double)c->win_probe_ns / on;
			return on / work;
		}
	}
	/* By wall time: a process slowed in its windows did less there. */
	*bias = 1;
	return (double)traced_ns(p, end) / (double)(end - p->first_ns);
}

/*
 * The share of its work done while --func probes were on (THE ORDER), as
 * traced_share() finds the sp probes': of its CPU time less its probes',
 * the part in those stretches, less their probes'. Those stretches hold
 * all its --func probes' time and most of its sp probes' (sampling starts
 * once they are off): *bias grows with the probe time against the work
 * left. 1 if they were never shed while it ran; 0 if it was never traced
 * with them (its --func rows are then what it had: none).
 */
static double func_share(const struct sampled_proc *p,
			 const struct summary_cost *c, double *bias)
{
	uint64_t cpu = p->func_cpu_ns, probe = p->func_probe_ns;
	double work, on;

	*bias = 0;
	if (!p->func_shed)
		return 1;
	if (!c || c->win_cpu_ns <= c->win_probe_ns || !c->cpu_end_ns)
		return 0;
	if (p->func_on && c->cpu_end_ns > p->func_cpu_at) {
		cpu += c->cpu_end_ns - p->func_cpu_at;
		if (c->win_probe_ns > p->func_probe_at)
			probe += c->win_probe_ns - p->func_probe_at;
	}
	work = (double)(c->win_cpu_ns - c->win_probe_ns);
	on = (double)cpu - (double)probe;
	if (on <= 0)
		return 0;
	if (on > work)
		on = work;
	*bias = PRICE_ERR * (double)probe / on;
	return on / work;
}

int sampler__scales(const struct sampler *sm, const struct summary_overhead *o,
		    struct summary_sampled **out, size_t *n)
{
	uint64_t now = boot_ns();
	size_t i;

	*out = NULL;
	*n = 0;
	for (i = 0; i < sm->nprocs; i++) {
		const struct sampled_proc *p = &sm->procs[i];
		const struct summary_cost *c = cost_of(o, p->pid);
		uint64_t end = p->stop_ns ? p->stop_ns : now;
		struct summary_sampled *v;

		if ((!p->shed_ns && !p->func_shed) || end <= p->first_ns)
			continue;
		if (!*out) {
			*out = calloc(sm->nprocs, sizeof(**out));
			if (!*out)
				return -ENOMEM;
		}
		v = &(*out)[(*n)++];
		v->pid = p->pid;
		v->traced = 1;
		if (p->shed_ns)
			v->traced = traced_share(p, c, end, &v->bias);
		v->every = p->max_every;
		v->func_traced = func_share(p, c, &v->func_bias);
	}
	return 0;
}

void sampler__destroy(struct sampler *sm)
{
	size_t i;

	sampler__stop(sm);
	for (i = 0; i < sm->nprocs; i++)
		free(sm->procs[i].semas);
	free(sm->procs);
	memset(sm, 0, sizeof(*sm));
	sm->epochs_fd = -1;
}
