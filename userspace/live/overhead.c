// SPDX-License-Identifier: MIT
/*
 * What sptrace's probes cost the processes it traces (overhead.h).
 *
 * THE ESTIMATE. BPF counts, per process, the hits of each kind while armed
 * (query_abi.h's enum sp_hit). Each kind has a price, ns a hit:
 *  - a per-event site: the trap as this kernel takes it on such a site
 *    (site_guard.h's mode: pinned int3, optimized call, or single-stepped
 *    lea), plus sp_event's own run time;
 *  - a flush, a --query probe: the trap of a 1-byte nop, plus the run time
 *    of sp_flush (its drain) or of the spec program;
 *  - a --func probe: half a function's entry and return probe, plus the
 *    run time of the func program;
 *  - a batched record: the host's append (a clock read, a 32-byte store).
 * The traps and the append are measured at start in a scratch child, on
 * sites in sptrace's own text with a no-op program, against the same
 * code without probes (median of rounds). The run times are the kernel's
 * (bpf_enable_stats(BPF_STATS_RUN_TIME): while sptrace holds its fd the
 * kernel times every BPF program run; closing it, even by a kill, turns
 * that off again). The sum, over the process's CPU time in the same
 * window (/proc/PID/stat, or wait4() for the launched command), is the
 * share of its CPU that went to sptrace's probes.
 *
 * The append is measured on the same work as probes/sp_probe.h's (its
 * clock, reserve, store and commit), not on that code: sptrace does not
 * include the probe header it traces. tests/e2e/test_overhead.py checks
 * the whole estimate against a host's measured loss.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "clock.h"
#include "log.h"
#include "overhead.h"
#include "proc_maps.h"
#include "proc_pid.h"
#include "site_guard.h"
#include "summary.h"
#include "uprobe_multi.h"
#include "vec.h"

/* Rounds of the calibration, and hits a round (traps: ~5 ms a round on a
 * VM whose trap costs 5 us). The median round is taken. */
#define CAL_ROUNDS 7
#define CAL_TRAPS 300
#define CAL_APPENDS 20000
/* How often the loop reads hits and CPU times, the first time sooner
 * (--max-overhead decides on them). */
#define SAMPLE_NS 250000000ull
#define FIRST_SAMPLE_NS 150000000ull

enum { CAL_EVENT = 1, CAL_NOP = 2, CAL_FUNC = 4, CAL_FUNC_STEP = 8 };

void overhead__set_tsc(struct overhead *oh, bool tsc)
{
	oh->tsc = tsc;
}

#if defined(__x86_64__)
/* Sites in sptrace's own text, each with a twin never probed: sp_probe.h's
 * per-event site, a 1-byte nop (the flush's, and sys/sdt.h's), and a
 * function's entry. Hidden: their addresses need no relocation. */
__asm__(".pushsection .text.sp_overhead, \"ax\", @progbits\n"
	".balign 16\n"
	".hidden sp_cal_site\n"
	"sp_cal_site:\n"
	"lea -128(%rsp), %rsp\n"
	".hidden sp_cal_site_nop\n"
	"sp_cal_site_nop: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"lea 128(%rsp), %rsp\n"
	"ret\n"
	".balign 16\n"
	".hidden sp_cal_site_bare\n"
	"sp_cal_site_bare:\n"
	"lea -128(%rsp), %rsp\n"
	".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"lea 128(%rsp), %rsp\n"
	"ret\n"
	".balign 16\n"
	".hidden sp_cal_nop\n"
	"sp_cal_nop:\n"
	"nop\n"
	"ret\n"
	".balign 16\n"
	".hidden sp_cal_nop_bare\n"
	"sp_cal_nop_bare:\n"
	"nop\n"
	"ret\n"
	".balign 16\n"
	".hidden sp_cal_func\n"
	"sp_cal_func:\n"
	"push %rbp\n"
	"mov %rsp, %rbp\n"
	"pop %rbp\n"
	"ret\n"
	".balign 16\n"
	".hidden sp_cal_func_bare\n"
	"sp_cal_func_bare:\n"
	"push %rbp\n"
	"mov %rsp, %rbp\n"
	"pop %rbp\n"
	"ret\n"
	/* A first instruction the kernel single-steps (attach.c). */
	".balign 16\n"
	".hidden sp_cal_func_step\n"
	"sp_cal_func_step:\n"
	"lea 1(%rdi), %rax\n"
	"ret\n"
	".balign 16\n"
	".hidden sp_cal_func_step_bare\n"
	"sp_cal_func_step_bare:\n"
	"lea 1(%rdi), %rax\n"
	"ret\n"
	".popsection\n");
extern const unsigned char sp_cal_site_nop[];
void sp_cal_site(void);
void sp_cal_site_bare(void);
void sp_cal_nop(void);
void sp_cal_nop_bare(void);
void sp_cal_func(void);
void sp_cal_func_bare(void);
void sp_cal_func_step(void);
void sp_cal_func_step_bare(void);

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* CPU time of the calling thread: a round preempted by sptrace's own
 * attaching (which runs meanwhile) is not made longer by it. */
static uint64_t cpu_now(void)
{
	return clock__ns(CLOCK_THREAD_CPUTIME_ID);
}

/* ns a call of `probed` costs over one of `bare`, median of the rounds. */
static double per_hit(void (*probed)(void), void (*bare)(void), int hits)
{
	double v[CAL_ROUNDS];
	uint64_t t0, t1, t2;
	int r, i;

	for (i = 0; i < 4; i++)	/* first hits: a kernel may patch the site */
		probed();
	for (r = 0; r < CAL_ROUNDS; r++) {
		t0 = cpu_now();
		for (i = 0; i < hits; i++)
			probed();
		t1 = cpu_now();
		for (i = 0; i < hits; i++)
			bare();
		t2 = cpu_now();
		v[r] = ((double)(t1 - t0) - (double)(t2 - t1)) / hits;
		if (v[r] < 0)
			v[r] = 0;
	}
	return median(v, CAL_ROUNDS);
}

/* A batched append's work (probes/sp_probe.h, sp__batch_add()): a busy
 * count, a timestamp (the TSC, or CLOCK_MONOTONIC by the vDSO), a reserve
 * that a signal cannot split, a 32-byte record, a commit, the flush test. */
struct cal_rec {
	uint64_t ts, name, arg;
	uint32_t kind, commit;
};

static struct cal_ring {
	uint64_t seq, flushed;
	int busy;
	struct cal_rec rec[256];
} cal_ring;

static __attribute__((noinline)) void cal_append(bool tsc, const void *name)
{
	struct cal_ring *b = &cal_ring;
	unsigned long long ts, i = 1;
	struct cal_rec *r;

	b->busy++;
	if (tsc) {
		unsigned int lo, hi;

		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		ts = ((unsigned long long)hi << 32) | lo;
	} else {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		ts = (unsigned long long)t.tv_sec * 1000000000ull +
		     (unsigned long long)t.tv_nsec;
	}
	__asm__ __volatile__("xaddq %0, %1" : "+r"(i), "+m"(b->seq) : : "memory");
	r = &b->rec[i & 255];
	r->ts = ts;
	r->name = (uint64_t)(uintptr_t)name;
	r->arg = 0;
	r->kind = 1;
	__asm__ __volatile__("" ::: "memory");
	r->commit = (uint32_t)(i + 1);
	if (i + 2 - b->flushed >= 255 ||
	    ts - b->rec[b->flushed & 255].ts > 10000000ull)
		b->flushed = i;
	__asm__ __volatile__("" ::: "memory");
	b->busy--;
}

static __attribute__((noinline)) void cal_bare(bool tsc, const void *name)
{
	__asm__ __volatile__("" : : "r"(tsc), "r"(name) : "memory");
}

static double append_cost(bool tsc)
{
	double v[CAL_ROUNDS];
	uint64_t t0, t1, t2;
	int r, i;

	for (r = 0; r < CAL_ROUNDS; r++) {
		t0 = cpu_now();
		for (i = 0; i < CAL_APPENDS; i++)
			cal_append(tsc, &cal_ring);
		t1 = cpu_now();
		for (i = 0; i < CAL_APPENDS; i++)
			cal_bare(tsc, &cal_ring);
		t2 = cpu_now();
		v[r] = ((double)(t1 - t0) - (double)(t2 - t1)) / CAL_APPENDS;
		if (v[r] < 0)
			v[r] = 0;
	}
	return median(v, CAL_ROUNDS);
}

/* The scratch child: waits for the mask of the sites probed, measures
 * them, writes its struct overhead_calib, exits. */
static void calib_child(int go, int out)
{
	struct overhead_calib c;
	unsigned char mask;

	memset(&c, 0, sizeof(c));
	if (read(go, &mask, 1) != 1)
		_exit(20);
	if (mask & CAL_EVENT)
		c.event_trap_ns = per_hit(sp_cal_site, sp_cal_site_bare,
					  CAL_TRAPS);
	if (mask & CAL_NOP)
		c.nop_trap_ns = per_hit(sp_cal_nop, sp_cal_nop_bare, CAL_TRAPS);
	if (mask & CAL_FUNC)
		c.func_trap_ns = per_hit(sp_cal_func, sp_cal_func_bare,
					 CAL_TRAPS) / 2;
	/* Its entry's share of a call: the return costs what the other's
	 * does. */
	if ((mask & CAL_FUNC) && (mask & CAL_FUNC_STEP))
		c.func_step_ns = per_hit(sp_cal_func_step,
					 sp_cal_func_step_bare, CAL_TRAPS) -
				 c.func_trap_ns;
	c.record_ns = append_cost(false);
	c.record_tsc_ns = append_cost(true);
	if (write(out, &c, sizeof(c)) != (ssize_t)sizeof(c))
		_exit(21);
	_exit(0);
}

/* The no-op program on the site at sptrace's own address p, for process
 * pid alone; `guarded`: as a per-event sp site is attached. Link fd or
 * -errno. */
static int probe_self(pid_t pid, const void *p, bool guarded, bool ret)
{
	int prog = site_guard__noop_prog(), link, err;
	struct site_guard g = { .fd = -1 };
	uint64_t off;

	if (prog < 0)
		return prog;
	err = proc_maps__self_offset(p, &off);
	if (err)
		return err;
	if (guarded) {
		err = site_guard__prepare("/proc/self/exe", "sptrace", &off,
					  NULL, 1, true, &g);
		if (err)
			return err;
		if (off == SITE_GUARD_DROP) {
			site_guard__release(&g);
			return -EOPNOTSUPP;
		}
	}
	link = uprobe_multi__link(prog, pid, "/proc/self/exe", &off, NULL,
				  NULL, 1, ret);
	site_guard__release(&g);
	return link;
}

static int calibrate(struct overhead_calib *c)
{
	int go[2], res[2], links[6] = { -1, -1, -1, -1, -1, -1 };
	int st, err = 0, i;
	pid_t pid, parent = getpid();
	unsigned char mask = 0;
	ssize_t n;

	err = site_guard__decided();
	if (err)
		return err;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(res, O_CLOEXEC)) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	if (!pid) {
		int keep[2] = { go[0] < res[1] ? go[0] : res[1],
				go[0] < res[1] ? res[1] : go[0] };

		site_guard__scratch_child(parent, keep, 2);
		calib_child(go[0], res[1]);
	}
	close(go[0]);
	close(res[1]);
	go[0] = res[1] = -1;
	links[0] = probe_self(pid, sp_cal_site_nop, true, false);
	links[1] = probe_self(pid, (const void *)sp_cal_nop, false, false);
	links[2] = probe_self(pid, (const void *)sp_cal_func, false, false);
	if (links[2] >= 0)
		links[3] = probe_self(pid, (const void *)sp_cal_func, false,
				      true);
	links[4] = probe_self(pid, (const void *)sp_cal_func_step, false,
			      false);
	if (links[4] >= 0)
		links[5] = probe_self(pid, (const void *)sp_cal_func_step,
				      false, true);
	mask = (links[0] >= 0 ? CAL_EVENT : 0) | (links[1] >= 0 ? CAL_NOP : 0) |
	       (links[2] >= 0 && links[3] >= 0 ? CAL_FUNC : 0) |
	       (links[4] >= 0 && links[5] >= 0 ? CAL_FUNC_STEP : 0);
	if (write(go[1], &mask, 1) != 1)
		err = -EPIPE;
	close(go[1]);
	go[1] = -1;
	n = err ? 0 : read(res[0], c, sizeof(*c));
	if (!err && n != (ssize_t)sizeof(*c))
		err = -ECHILD;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	for (i = 0; i < 6; i++)
		site_guard__close_later(links[i]);
	if (!err && links[0] < 0)
		sp_info("overhead: a per-event site could not be calibrated: %s",
			strerror(-links[0]));
out:
	for (i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (res[i] >= 0)
			close(res[i]);
	}
	return err;
}
#else
static int calibrate(struct overhead_calib *c)
{
	(void)c;
	return -EOPNOTSUPP;
}
#endif

static void *calib_thread(void *arg)
{
	struct overhead *oh = arg;
	struct overhead_calib c;

	memset(&c, 0, sizeof(c));
	c.err = calibrate(&c);
	oh->cal = c;
	__atomic_store_n(&oh->cal_done, true, __ATOMIC_RELEASE);
	return NULL;
}

void overhead__start(struct overhead *oh)
{
	memset(oh, 0, sizeof(*oh));
	oh->stats_fd = oh->hits_fd = -1;
	oh->ncpus = libbpf_num_possible_cpus();
	oh->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (oh->stats_fd < 0)
		sp_info("overhead: the kernel's BPF run times are not available (%s): the estimate leaves them out",
			strerror(errno));
	oh->started = !pthread_create(&oh->thread, NULL, calib_thread, oh);
	if (!oh->started)
		oh->cal.err = -EAGAIN;
}

static void join(struct overhead *oh)
{
	if (!oh->started || oh->joined)
		return;
	pthread_join(oh->thread, NULL);
	oh->joined = true;
	if (oh->cal.err)
		sp_info("overhead: calibration failed: %s (no estimate)",
			strerror(-oh->cal.err));
	else
		sp_info("overhead: calibrated a per-event site's trap %.0f ns, a 1-byte nop's %.0f ns, a function probe's %.0f ns (%.0f ns at an entry single-stepped), a batched append %.1f ns (%.1f ns with the TSC)",
			oh->cal.event_trap_ns, oh->cal.nop_trap_ns,
			oh->cal.func_trap_ns, oh->cal.func_step_ns,
			oh->cal.record_ns, oh->cal.record_tsc_ns);
}

int overhead__set_map(struct overhead *oh, int hits_fd)
{
	struct sp_probe_hits *zero;
	uint32_t key = 0;
	int err = 0;

	zero = calloc((size_t)(oh->ncpus > 0 ? oh->ncpus : 1), sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(hits_fd, &key, zero, BPF_NOEXIST) &&
	    errno != EEXIST)
		err = -errno;
	free(zero);
	if (!err)
		oh->hits_fd = hits_fd;
	return err;
}

/* Its CPU time: to the ns by its CPU-time clock, else in stat's ticks. */
static uint64_t cpu_ns(uint32_t pid, const struct proc_pid_stat *st)
{
	uint64_t ns;

	return proc_pid__cpu_ns((int)pid, &ns) ? proc_pid__ticks_ns(st->cpu_ticks)
						: ns;
}

static struct overhead_proc *proc_find(struct overhead *oh, uint32_t pid)
{
	size_t at = VEC_LOWER_BOUND(oh->procs, oh->nprocs, pid, pid);

	return at < oh->nprocs && oh->procs[at].pid == pid ? &oh->procs[at]
							    : NULL;
}

/* A process first seen: its window starts now, or at 0 if it started
 * after arming (or is the launched command). NULL: no memory. */
static struct overhead_proc *proc_add(struct overhead *oh, uint32_t pid,
				      const uint64_t *hits)
{
	struct proc_pid_stat st;
	struct overhead_proc *p;

	p = VEC_INSERT_AT(oh->procs, oh->nprocs, oh->cap,
			  VEC_LOWER_BOUND(oh->procs, oh->nprocs, pid, pid));
	if (!p)
		return NULL;
	p->pid = pid;
	if (!pid || proc_pid__stat((int)pid, &st))
		return p;	/* no window: share unknown */
	p->start_ticks = st.start_ticks;
	p->window = true;
	if ((pid_t)pid == oh->launched || st.start_ticks >= oh->armed_ticks)
		return p;	/* traced all its life */
	p->cpu0_ns = p->cpu1_ns = cpu_ns(pid, &st);
	if (hits) {
		memcpy(p->hits0, hits, sizeof(p->hits0));
		memcpy(p->hits1, hits, sizeof(p->hits1));
	}
	return p;
}

void overhead__armed(struct overhead *oh, const pid_t *pids, size_t n,
		     pid_t launched)
{
	size_t i;

	oh->armed_ticks = clock__ns(CLOCK_BOOTTIME) / proc_pid__ticks_ns(1);
	oh->armed = true;
	oh->launched = launched;
	for (i = 0; i < n; i++)
		if (pids[i] > 0 && !proc_find(oh, (uint32_t)pids[i]))
			(void)proc_add(oh, (uint32_t)pids[i], NULL);
	if (launched > 0 && !proc_find(oh, (uint32_t)launched))
		(void)proc_add(oh, (uint32_t)launched, NULL);
	oh->next_sample_ns = now_ns() + FIRST_SAMPLE_NS;
}

void overhead__reaped(struct overhead *oh, uint64_t cpu_ns)
{
	oh->launched_cpu_ns = cpu_ns ? cpu_ns : 1;
}

/* Sums a per-CPU value of `probe_hits`. */
static void sum_cpus(const struct sp_probe_hits *v, int ncpus, uint64_t *out)
{
	int c, k;

	memset(out, 0, SP_HIT__MAX * sizeof(*out));
	for (c = 0; c < ncpus; c++)
		for (k = 0; k < SP_HIT__MAX; k++)
			out[k] += v[c].n[k];
}

/* Moves a process's window end to now, if it is the same process. false:
 * gone (or replaced under its pid). */
static bool proc_read(struct overhead *oh, struct overhead_proc *p)
{
	struct proc_pid_stat st;

	if ((pid_t)p->pid == oh->launched && oh->launched_cpu_ns) {
		memcpy(p->hits1, p->hits, sizeof(p->hits1));
		p->cpu1_ns = oh->launched_cpu_ns;
		return true;	/* its entry stays: the last drains add */
	}
	if (!p->window || proc_pid__stat((int)p->pid, &st) ||
	    st.start_ticks != p->start_ticks || st.state == 'Z' ||
	    st.state == 'X')
		return (pid_t)p->pid == oh->launched;	/* wait4() tells */
	memcpy(p->hits1, p->hits, sizeof(p->hits1));
	p->cpu1_ns = cpu_ns(p->pid, &st);
	return true;
}

/* Is pid, a process gone before, another process now? */
static bool pid_reused(const struct overhead_proc *p)
{
	struct proc_pid_stat st;

	return !proc_pid__stat((int)p->pid, &st) &&
	       st.start_ticks != p->start_ticks;
}

/* Reads every process's hits and CPU time. A gone process's BPF entry is
 * deleted once read, its hits kept in `base` (late drains of its records
 * make a new entry, added to them), so that churn never fills the map. */
static int sample(struct overhead *oh)
{
	struct sp_probe_hits *v;
	uint64_t hits[SP_HIT__MAX];
	uint32_t key, next, *del = NULL;
	size_t ndel = 0, cap = 0, i;
	bool first = true;
	int err = 0, k;

	if (oh->hits_fd < 0 || oh->ncpus <= 0)
		return -ENOENT;
	v = calloc((size_t)oh->ncpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	while (!bpf_map_get_next_key(oh->hits_fd, first ? NULL : &key, &next)) {
		struct overhead_proc *p;

		first = false;
		key = next;
		if (bpf_map_lookup_elem(oh->hits_fd, &key, v))
			continue;	/* deleted meanwhile */
		sum_cpus(v, oh->ncpus, hits);
		p = proc_find(oh, key);
		if (p && p->gone && pid_reused(p)) {
			/* A new process under a gone one's pid: the old one's
			 * figures give way (rare: pids wrap). */
			memset(p->base, 0, sizeof(p->base));
			p->gone = false;
			p->window = false;
			memset(p->hits0, 0, sizeof(p->hits0));
			memset(p->hits1, 0, sizeof(p->hits1));
			p->cpu0_ns = p->cpu1_ns = 0;
		}
		if (!p)
			p = proc_add(oh, key, hits);
		if (!p) {
			err = -ENOMEM;
			break;
		}
		for (k = 0; k < SP_HIT__MAX; k++)
			p->hits[k] = p->base[k] + hits[k];
		if (!key || (!p->gone && proc_read(oh, p)))
			continue;
		p->gone = true;
		memcpy(p->base, p->hits, sizeof(p->base));
		if (ndel == cap) {
			uint32_t *d = realloc(del, (cap ? 2 * cap : 16) * sizeof(*d));

			if (!d) {
				err = -ENOMEM;
				break;
			}
			del = d;
			cap = cap ? 2 * cap : 16;
		}
		del[ndel++] = key;
	}
	for (i = 0; i < ndel; i++)
		(void)bpf_map_delete_elem(oh->hits_fd, &del[i]);
	free(del);
	free(v);
	return err;
}

int overhead__refresh(struct overhead *oh)
{
	return oh->armed ? sample(oh) : -ENODATA;
}

void overhead__tick(struct overhead *oh, uint64_t now)
{
	if (!oh->armed || now < oh->next_sample_ns)
		return;
	oh->next_sample_ns = now + SAMPLE_NS;
	(void)sample(oh);
}

/* The kernel's run time per run of each kind's programs, and what the
 * system-wide ones ran in all. */
static bool run_times(const struct overhead *oh,
		      const struct overhead_prog *progs, int nprogs,
		      double *bpf_ns, uint64_t *system_ns)
{
	uint64_t t[SP_HIT__MAX] = { 0 }, c[SP_HIT__MAX] = { 0 };
	int i;

	memset(bpf_ns, 0, SP_HIT__MAX * sizeof(*bpf_ns));
	*system_ns = 0;
	if (oh->stats_fd < 0)
		return false;
	for (i = 0; i < nprogs; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (progs[i].fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(progs[i].fd, &info, &len))
			continue;
		if (progs[i].kind < 0) {
			*system_ns += info.run_time_ns;
		} else if (progs[i].kind < SP_HIT__MAX) {
			t[progs[i].kind] += info.run_time_ns;
			c[progs[i].kind] += info.run_cnt;
		}
	}
	for (i = 0; i < SP_HIT__MAX; i++)
		bpf_ns[i] = c[i] ? (double)t[i] / (double)c[i] : 0;
	return true;
}

static uint64_t price(const double *unit, const uint64_t *hits)
{
	double ns = 0;
	int k;

	for (k = 0; k < SP_HIT__MAX; k++)
		if (k != SP_HIT_PAUSE_NS)
			ns += unit[k] * (double)hits[k];
	return (uint64_t)(ns + 0.5);
}

/* The price of a hit of each kind now; false: no calibration (yet). */
static bool prices(struct overhead *oh, const struct overhead_prog *progs,
		   int nprogs, double *unit, bool *bpf_timed,
		   uint64_t *system_ns)
{
	double bpf[SP_HIT__MAX];
	uint64_t sys;
	bool timed;

	if (!oh->joined || oh->cal.err)
		return false;
	timed = run_times(oh, progs, nprogs, bpf, &sys);
	memset(unit, 0, SP_HIT__MAX * sizeof(*unit));
	unit[SP_HIT_EVENT] = oh->cal.event_trap_ns + bpf[SP_HIT_EVENT];
	unit[SP_HIT_FLUSH] = oh->cal.nop_trap_ns + bpf[SP_HIT_FLUSH];
	unit[SP_HIT_RECORD] = oh->tsc ? oh->cal.record_tsc_ns : oh->cal.record_ns;
	unit[SP_HIT_SPEC] = oh->cal.nop_trap_ns + bpf[SP_HIT_SPEC];
	unit[SP_HIT_FUNC] = oh->cal.func_trap_ns + bpf[SP_HIT_FUNC];
	/* An entry of either kind runs the same program. */
	unit[SP_HIT_FUNC_STEP] = (oh->cal.func_step_ns > oh->cal.func_trap_ns ?
				  oh->cal.func_step_ns : oh->cal.func_trap_ns) +
				 bpf[SP_HIT_FUNC];
	if (bpf_timed)
		*bpf_timed = timed;
	if (system_ns)
		*system_ns = sys;
	return true;
}

int overhead__latest(struct overhead *oh, const struct overhead_prog *progs,
		     int nprogs, uint32_t pid, uint64_t *probe_ns,
		     uint64_t *func_ns, uint64_t *cpu_ns, uint64_t *cpu0_ns)
{
	const struct overhead_proc *p = proc_find(oh, pid);
	double unit[SP_HIT__MAX], func_unit[SP_HIT__MAX] = { 0 };

	/* The calibration is waited for only once it is done. */
	if (oh->started && !oh->joined &&
	    !__atomic_load_n(&oh->cal_done, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	join(oh);
	if (!p || !p->window || p->gone ||
	    !prices(oh, progs, nprogs, unit, NULL, NULL))
		return -ENODATA;
	*probe_ns = price(unit, p->hits1) - price(unit, p->hits0);
	/* The same pricing, of the --func kinds alone. */
	func_unit[SP_HIT_FUNC] = unit[SP_HIT_FUNC];
	func_unit[SP_HIT_FUNC_STEP] = unit[SP_HIT_FUNC_STEP];
	*func_ns = price(func_unit, p->hits1) - price(func_unit, p->hits0);
	*cpu_ns = p->cpu1_ns;
	*cpu0_ns = p->cpu0_ns;
	return 0;
}

int overhead__figures(struct overhead *oh, const struct overhead_prog *progs,
		      int nprogs, struct summary_overhead *out)
{
	size_t i;
	int err;

	memset(out, 0, sizeof(*out));
	join(oh);
	if (oh->cal.err || !oh->armed)
		return oh->cal.err ? oh->cal.err : -ENODATA;
	err = sample(oh);
	if (err)
		return err;
	if (!prices(oh, progs, nprogs, out->unit_ns, &out->bpf_timed,
		    &out->system_bpf_ns))
		return -ENODATA;
	out->procs = calloc(oh->nprocs ? oh->nprocs : 1, sizeof(*out->procs));
	if (!out->procs)
		return -ENOMEM;
	for (i = 0; i < oh->nprocs; i++) {
		const struct overhead_proc *p = &oh->procs[i];
		struct summary_cost *c = &out->procs[out->nprocs];
		uint64_t d[SP_HIT__MAX];
		int k;

		if (!p->pid && !p->hits[SP_HIT_EVENT] && !p->hits[SP_HIT_FLUSH] &&
		    !p->hits[SP_HIT_SPEC] && !p->hits[SP_HIT_FUNC] &&
		    !p->hits[SP_HIT_FUNC_STEP])
			continue;	/* the catch-all, unused */
		c->pid = p->pid;
		memcpy(c->hits, p->hits, sizeof(c->hits));
		c->probe_ns = price(out->unit_ns, p->hits);
		if (p->window && p->cpu1_ns > p->cpu0_ns) {
			for (k = 0; k < SP_HIT__MAX; k++)
				d[k] = p->hits1[k] - p->hits0[k];
			c->win_probe_ns = price(out->unit_ns, d);
			c->win_cpu_ns = p->cpu1_ns - p->cpu0_ns;
			c->cpu_end_ns = p->cpu1_ns;
		}
		out->nprocs++;
	}
	out->known = true;
	return 0;
}

void overhead__destroy(struct overhead *oh)
{
	join(oh);
	if (oh->stats_fd >= 0)
		close(oh->stats_fd);
	free(oh->procs);
	memset(oh, 0, sizeof(*oh));
	oh->stats_fd = oh->hits_fd = -1;
}
