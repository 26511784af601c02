// SPDX-License-Identifier: MIT
/*
 * The query provider: loads bpf/query.bpf.c (uprobe_multi links where the
 * kernel has them, else one uprobe per site), binds each sp probe name to
 * its program, and gates counting with the program's `armed` flag.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sptrace/query_abi.h>
#include <sptrace/batch_abi.h>
#include <sptrace/record_abi.h>
#include <sptrace/spec_norm.h>
#include "attach.h"
#include "clock.h"
#include "batch_drain.h"
#include "elf_notes.h"
#include "log.h"
#include "proc_maps.h"
#include "privileges.h"
#include <sptrace/tsc_map.h>	/* the .bss of query.skel.h */
#include "query.skel.h"
#include "query_maps.h"
#include "query_provider.h"
#include "site_guard.h"
#include "split_load.h"
#include "spec_norm_text.h"
#include "summary.h"
#include "tsc_clock.h"
#include "usdt_args.h"

/* A file a --query spec's probes were looked for in, per process. */
struct qp_spec_file {
	pid_t pid;
	dev_t dev;
	ino_t ino;
};

/*
 * The spec lines as BPF sees them. Each line gets a track (a per-thread
 * stack) of its own; lines with the same stack=NAME share one, so their
 * intervals nest.
 */
static void specs_rodata(const struct query_provider *qp, struct query_bpf *m)
{
	const struct session_opts *o = qp->o;
	__u32 ntracks = 0;
	int k, j;

	for (k = 0; k < o->nqspecs; k++) {
		const struct query_spec *q = &o->qspecs[k];
		struct sp_spec_line l = {
			.name_type = (__u8)q->name_type,
			.name_arg = (__u8)(q->arg < 0 ? 0 : q->arg),
			.normalize = (__u8)q->normalize,
			.kind = (__u8)q->kind,
			.if_arg = (__u8)q->cond.arg,
			.if_op = (__u8)q->cond.op,
			.hit_arg = (__u8)q->hit.arg,
			.hit_op = (__u8)q->hit.op,
			.max_rows = q->name_type == SP_SPEC_NAME_FIXED ? 0 :
				    q->max_rows ? q->max_rows :
				    QUERY_SPEC_DEFAULT_MAX_ROWS,
			.flags = (q->cache ? SP_SPEC_F_CACHE : 0) |
				 (q->outcomes ? SP_SPEC_F_OUTCOMES : 0) |
				 (q->serial ? SP_SPEC_F_SERIAL : 0) |
				 ((__u32)q->abandon << SP_SPEC_F_ABANDON_SHIFT),
			.if_val = q->cond.val,
			.hit_val = q->hit.val,
		};

		l.track = ntracks;
		for (j = 0; q->stack && j < k; j++)
			if (o->qspecs[j].stack &&
			    !strcmp(o->qspecs[j].stack, q->stack)) {
				l.track = m->rodata->spec_lines[j].track;
				break;
			}
		if (l.track == ntracks)
			ntracks++;
		memcpy((void *)&m->rodata->spec_lines[k], &l, sizeof(l));
	}
	m->rodata->spec_ntracks = ntracks;
	for (k = 0; k < o->nqspecs; k++)
		m->rodata->spec_norms |= 1u << o->qspecs[k].normalize;
}

/*
 * Only the program families the session uses are loaded: the kernel
 * verifies each program it loads, and that is most of the time before
 * tracing starts (bpf/query.bpf.c). The sp probes (sp_event, every probe
 * name) and thread exits always, but for -b files without sp probes;
 * batched events unless per-event only or no -b file batches; --query and
 * --func programs only when asked. Files met later (--follow, dlopen, a
 * -p target's, a command's libraries) may bring any sp probe or a batched
 * header, so those sessions load by what they ask, never by what the
 * first target has; -b attaches to its files only, known now. Their maps
 * are made all the same (under a millisecond: small or not preallocated).
 */
static void unused_families(struct query_bpf *s, const struct session_opts *o,
			    bool sp, bool batch)
{
	bool cache = false, pair = false;
	int i;

	if (!sp)
		bpf_program__set_autoload(s->progs.sp_event, false);
	if (!batch) {
		bpf_program__set_autoload(s->progs.sp_flush, false);
		bpf_program__set_autoload(s->progs.sp_tsc, false);
		bpf_program__set_autoload(s->progs.sp_batch_feed, false);
		bpf_program__set_autoload(s->progs.sp_exec_drain, false);
	}
	if (!o->nfuncs) {
		bpf_program__set_autoload(s->progs.sp_func_entry, false);
		bpf_program__set_autoload(s->progs.sp_func_return, false);
	}
	/* --query: a one-probe line's program and an interval line's pair
	 * each only where a line needs them; the BEGIN and the cache
	 * program each carry the name path (normalizing, hashing, admitting
	 * rows), the most verifying of the object (PostgreSQL's default
	 * spec has no one-probe line). */
	for (i = 0; i < o->nqspecs; i++) {
		cache |= o->qspecs[i].cache;
		pair |= !o->qspecs[i].cache;
	}
	if (!pair) {
		bpf_program__set_autoload(s->progs.sp_spec_begin, false);
		bpf_program__set_autoload(s->progs.sp_spec_end, false);
	}
	if (!cache)
		bpf_program__set_autoload(s->progs.sp_spec_cache, false);
}

/* The programs loaded in the second share (split_load.h), where the
 * batched drain is loaded: its programs and the --query ones (all of a
 * USDT family in one object), about half the verifier's time. Without the
 * drain one object does: the --query programs are most of that session's
 * verifying, and a third object's load would cost more than it saves. */
static bool second_share(const struct query_bpf *s,
			 const struct bpf_program *prog)
{
	return prog == s->progs.sp_flush || prog == s->progs.sp_batch_feed ||
	       prog == s->progs.sp_tsc || prog == s->progs.sp_spec_begin ||
	       prog == s->progs.sp_spec_end || prog == s->progs.sp_spec_cache;
}

/* Which programs `s` loads: those the session uses, of its share where
 * the load is split (`second`: the second share). */
static void choose_programs(struct query_bpf *s, const struct query_provider *qp,
			    bool multi, bool batch, bool split, bool second)
{
	struct bpf_program *prog;

	unused_families(s, qp->o, qp->sp, batch);
	bpf_object__for_each_program(prog, s->obj) {
		if (split && second_share(s, prog) != second)
			bpf_program__set_autoload(prog, false);
		if (!bpf_program__autoload(prog))
			continue;
		/* Not the --query programs: libbpf attaches USDT probes as
		 * perf event uprobes, which a uprobe_multi program cannot
		 * be. */
		if (multi && prog != s->progs.sp_thread_exit &&
		    prog != s->progs.sp_spec_begin &&
		    prog != s->progs.sp_spec_end &&
		    prog != s->progs.sp_spec_cache &&
		    prog != s->progs.sp_batch_feed &&
		    prog != s->progs.sp_exec_drain)
			attach__prepare_multi(prog);
	}
}

/* a's skeleton points at b's programs of the second share, loaded there
 * (both skeletons list the object's programs in one order). */
static void graft_second_share(struct query_bpf *a, const struct query_bpf *b)
{
	const struct bpf_object_skeleton *sa = a->skeleton, *sb = b->skeleton;
	int i;

	for (i = 0; i < sa->prog_cnt; i++) {
		struct bpf_program **pa = ((struct bpf_prog_skeleton *)
			((char *)sa->progs + (size_t)i * (size_t)sa->prog_skel_sz))->prog;
		struct bpf_program **pb = ((struct bpf_prog_skeleton *)
			((char *)sb->progs + (size_t)i * (size_t)sb->prog_skel_sz))->prog;

		if (second_share(a, *pa))
			*pa = *pb;
	}
}

/* The object that makes the maps: .rodata and sizes (the shares of a
 * split load reuse its maps). */
static int configure_maps(struct query_provider *qp, struct query_bpf *m,
			  bool batch)
{
	const struct session_opts *o = qp->o;
	int err;

	m->rodata->record = o->record;
	m->rodata->follow = qp->follow;
	m->rodata->ladder = o->hist_ladder;
	m->rodata->query_keys = o->query_keys;
	m->rodata->batch_loaded = batch;
	specs_rodata(qp, m);
	err = qp->follow ? bpf_map__reuse_fd(m->maps.followed, qp->followed_fd) :
			   bpf_map__set_max_entries(m->maps.followed, 1);
	if (err)
		return err;
	m->rodata->wakeup_bytes =
		(o->ringbuf_bytes ? o->ringbuf_bytes : SP_DEFAULT_RINGBUF) / 4;
	err = query_maps__resize(m, o->max_queries, o->max_threads,
				 o->query_keys);
	/* --query: third-party probes fire in busy programs whose caches
	 * are cold at each event; `hist` allocated element by element cost
	 * an END 1.35 us where a preallocated one costs 0.63 us under
	 * PostgreSQL (bench/run_pg_bench.sh, A/B in one run). Its memory:
	 * 16 x --max-queries x (56 + 8 x CPUs) bytes, up front. */
	if (!err && o->nqspecs)
		err = bpf_map__set_map_flags(m->maps.hist, 0);
	if (!err && o->record && o->ringbuf_bytes)
		err = bpf_map__set_max_entries(m->maps.events,
					       o->ringbuf_bytes);
	if (!err && !o->record)
		/* The smallest ring buffer: one page. */
		err = bpf_map__set_max_entries(m->maps.events,
					       (uint32_t)getpagesize());
	return err;
}

/*
 * The session's programs, with the batched drain verified in two shares
 * at once (split_load.h): qp->skel, whose progs of the second share are
 * qp->skel2's, so that every user of qp->skel->progs finds the program
 * that was loaded.
 */
static int open_and_load(struct query_provider *qp, bool multi, bool batch)
{
	struct query_bpf *m = NULL, *a = query_bpf__open(), *b = NULL;
	struct bpf_program *prog;
	int err;

	if (!a)
		return -errno;
	if (batch) {
		m = query_bpf__open();
		b = query_bpf__open();
		if (!m || !b) {
			err = -errno;
			goto out;
		}
	}
	err = configure_maps(qp, m ? m : a, batch);
	if (err)
		goto out;
	choose_programs(a, qp, multi, batch, b != NULL, false);
	if (!b) {
		err = query_bpf__load(a);
		goto done;
	}
	choose_programs(b, qp, multi, batch, true, true);
	bpf_object__for_each_program(prog, m->obj)
		bpf_program__set_autoload(prog, false);
	err = split_load(m->skeleton, a->skeleton, b->skeleton);
	if (err)
		goto out;
	graft_second_share(a, b);
done:
	if (!err) {
		qp->skel = a;
		qp->skel2 = b;
		a = b = NULL;
	}
out:
	query_bpf__destroy(m);	/* its maps live on in a and b */
	query_bpf__destroy(a);
	query_bpf__destroy(b);
	return err;
}

/* Has the ELF file at `path` sp probes, and a batching header? False
 * where it cannot be read (attaching fails there too). A file found
 * without is remembered (by inode) in qp->sp_none, not read again. */
static bool file_has_sp(struct query_provider *qp, const char *path,
			bool *flush)
{
	struct usdt_file *f;
	struct stat st;
	bool sp = false;
	size_t i;
	int k;

	*flush = false;
	if (stat(path, &st))
		return false;
	for (k = 0; k < qp->nsp_none; k++)
		if (qp->sp_none[k].dev == st.st_dev &&
		    qp->sp_none[k].ino == st.st_ino)
			return false;
	if (usdt_file__open(path, &f, NULL))
		return false;
	for (i = 0; i < f->nsites; i++) {
		if (strcmp(f->sites[i].provider, "sp"))
			continue;
		sp = true;
		*flush |= !strcmp(f->sites[i].name, "flush");
	}
	usdt_file__free(f);
	if (!sp && qp->nsp_none < SESSION_MAX_PIDS) {
		qp->sp_none[qp->nsp_none].dev = st.st_dev;
		qp->sp_none[qp->nsp_none++].ino = st.st_ino;
	}
	return sp;
}

/* -b alone: the sp families its files need (unused_families()). */
static void binaries_families(struct query_provider *qp)
{
	const struct session_opts *o = qp->o;
	bool sp = false, batch = false, flush;
	int i;

	if (!o->nbinaries || o->cmd || o->npids || o->follow)
		return;
	for (i = 0; i < o->nbinaries; i++) {
		sp |= file_has_sp(qp, o->binaries[i], &flush);
		batch |= flush;
	}
	qp->sp = sp;
	qp->batch &= batch;
}

static bool want(const struct session_opts *o, enum sp_event_class c)
{
	return !o->record || (o->classes & (1u << c));
}

/*
 * Which program serves which probe: only what was asked for is attached.
 * ENDs come first: a library attached while the session is armed (loaded
 * late by a running target) then gives at worst an END without BEGIN,
 * counted, never a BEGIN whose END is missed, which would stay open.
 */
static size_t bind_probes(struct query_provider *qp)
{
	/* When a probe is bound: its class is wanted (every class when not
	 * recording); recorded and asked for; live only. */
	enum { BIND_WANTED, BIND_RECORDED, BIND_LIVE };
	static const struct {
		const char *name;
		unsigned int ev;	/* its cookie's SP_COOKIE_EVENT() */
		enum sp_event_class cls;
		int when;
	} probes[] = {
		{ "query_end", SP_EV_QUERY_END, SP_EVC_QUERY, BIND_WANTED },
		/* Async queries: live only; a recording has no event for a
		 * poll (docs/instrumenting.md, "Async queries"). */
		{ "query_poll_end", SP_COOKIE_POLL_END, SP_EVC_QUERY, BIND_LIVE },
		{ "query_finish", SP_COOKIE_FINISH, SP_EVC_QUERY, BIND_LIVE },
		{ "blocked_end", SP_EV_BLOCKED_END, SP_EVC_BLOCKED, BIND_WANTED },
		{ "incr_load_end", SP_EV_INCR_LOAD_END, SP_EVC_INCR, BIND_WANTED },
		{ "query_begin", SP_EV_QUERY_BEGIN, SP_EVC_QUERY, BIND_WANTED },
		{ "blocked_begin", SP_EV_BLOCKED_BEGIN, SP_EVC_BLOCKED,
		  BIND_WANTED },
		{ "incr_load_begin", SP_EV_INCR_LOAD_BEGIN, SP_EVC_INCR,
		  BIND_WANTED },
		{ "cache_hit", SP_EV_CACHE_HIT, SP_EVC_CACHE, BIND_WANTED },
		/* Marks and allocations: only recorded, when asked. */
		{ "mark", SP_EV_MARK, SP_EVC_MARK, BIND_RECORDED },
		{ "alloc", SP_EV_ALLOC, SP_EVC_ALLOC, BIND_RECORDED },
		{ "free", SP_EV_FREE, SP_EVC_ALLOC, BIND_RECORDED },
	};
	const struct session_opts *o = qp->o;
	struct probe_binding *b = qp->bindings;
	struct bpf_program *prog = qp->skel->progs.sp_event;
	size_t i = 0, k;

	for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
		unsigned int cls = probes[k].cls;
		bool bound;

		switch (probes[k].when) {
		case BIND_RECORDED:
			bound = o->record && (o->classes & (1u << cls));
			break;
		case BIND_LIVE:
			bound = !o->record;
			break;
		default:
			bound = want(o, cls);
		}
		if (!bound)
			continue;
		b[i++] = (struct probe_binding){
			.name = probes[k].name, .prog = prog,
			.cookie = SP_COOKIE_OF_EVENT(probes[k].ev),
		};
	}
	b[i++] = (struct probe_binding){
		.name = "thread_name", .prog = prog,
		.cookie = SP_COOKIE_OF_EVENT(SP_EV_THREAD_NAME),
	};
	return i;
}

/*
 * Files whose header batches (an sp:flush site): the flush program, and the
 * per-event programs as for any file (see below). After attacher__init().
 */
static size_t bind_batch_probes(struct query_provider *qp)
{
	struct probe_binding *b = qp->batch_bindings;
	struct query_bpf *s = qp->skel;
	size_t i = 0;

	size_t k;

	/* The per-event bindings too: probes of the same names compiled
	 * without batching (SP_PROBES_NO_BATCH) stay events, as do batched
	 * probes that find no ring; a batched site (C or Rust) never fires
	 * its own while it can write a record. */
	for (k = 0; k < qp->att.nbindings; k++)
		b[i++] = qp->bindings[k];
	/* Closed last: its drains go on while the other links detach. */
	b[i++] = (struct probe_binding){ .name = "flush",
					 .prog = s->progs.sp_flush,
					 .close_last = true };
	/* sp:tsc raises TSC timestamps through its semaphore; it also marks
	 * the header's slow path, which tells events that fell back to a
	 * per-event site (bpf/query_batch.bpf.c, sp_tsc): without the TSC it is
	 * watched with the semaphore left alone. */
	b[i++] = (struct probe_binding){ .name = "tsc", .prog = s->progs.sp_tsc };
	qp->att.watch_only = qp->tsc_ask ? NULL : "tsc";
	return i;
}

/*
 * Batched records stamped with the TSC (cheaper than clock_gettime by
 * ~2x per pair) where the kernel itself keeps time with the TSC, i.e.
 * trusts it to be invariant and synchronised across CPUs. Calibrated over
 * at least 20 ms against CLOCK_MONOTONIC (the first sample before the BPF
 * load, the second after it: the load fills the window), then 100 and
 * 300 ms later and about once a second while the session runs (qp_tick),
 * as NTP slews the clock (tsc_clock.h).
 * SPTRACE_NO_TSC=1 keeps clock_gettime (qp->tsc_ask false), but the map is
 * still kept: the stamp follows the semaphore, which another session
 * tracing the same file with the TSC raises for both.
 */
struct tsc_sample {
	bool ok;
	uint64_t t, n;
};

/* The first sample, if the kernel keeps time with the TSC. */
static void tsc_sample_first(struct tsc_sample *first)
{
	char src[32] = "";
	FILE *f;

	first->ok = false;
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (!f)
		return;
	if (!fgets(src, sizeof(src), f))
		src[0] = 0;
	fclose(f);
	if (strcmp(src, "tsc\n"))
		return;
	first->ok = !tsc_clock__sample(&first->t, &first->n);
}

static bool tsc_calibrate(struct query_provider *qp,
			  const struct tsc_sample *first)
{
	const char *e = getenv("SPTRACE_NO_TSC");
	bool no_tsc = e && *e && strcmp(e, "0");
	const uint64_t window = 20000000;
	uint64_t t1, n1, now;

	if (!first->ok) {
		sp_info("batched events: clock_gettime timestamps (the kernel's clock source is not the TSC)");
		return false;
	}
	now = now_ns();
	if (now - first->n < window) {
		struct timespec pause = { 0, (long)(window - (now - first->n)) };

		nanosleep(&pause, NULL);
	}
	if (tsc_clock__sample(&t1, &n1) ||
	    tsc_clock__start(&qp->tclock, &qp->skel->bss->tsc_clock, first->t,
			     first->n, t1, n1))
		return false;
	qp->tsc_ask = !no_tsc;
	sp_info("batched events: %s, %.4f ns per tick, recalibrated every %.0f s",
		no_tsc ? "clock_gettime timestamps (SPTRACE_NO_TSC); the TSC mapped for records another session has stamped with it" :
			 "TSC timestamps",
		(double)(n1 - first->n) / (double)(t1 - first->t),
		TSC_CLOCK_PERIOD_NS / 1e9);
	return true;
}

/* Batched events unless SPTRACE_PER_EVENT is set (to compare, or to work
 * around a problem), or `record --events` leaves out a class the rings
 * carry: a flush applies every record of a ring, so only per-event sites
 * can be attached class by class. */
static bool want_batch(const struct session_opts *o)
{
	const uint32_t batched = 1u << SP_EVC_QUERY | 1u << SP_EVC_CACHE |
				 1u << SP_EVC_BLOCKED | 1u << SP_EVC_INCR;
	const char *e = getenv("SPTRACE_PER_EVENT");

	if (e && *e && strcmp(e, "0"))
		return false;
	if (o->record && (o->classes & batched) != batched) {
		sp_info("record --events without all of query, cache, blocked and incr: per-event probes");
		return false;
	}
	return true;
}

static int specs_init(struct query_provider *qp)
{
	const struct session_opts *o = qp->o;

	if (!o->nqspecs)
		return 0;
	if (o->nqspecs > SP_SPEC_MAX_LINES) {
		sp_err("--query: %d spec lines: at most %d (one BPF table each)",
		       o->nqspecs, SP_SPEC_MAX_LINES);
		return -E2BIG;
	}
	qp->spec_found = calloc((size_t)o->nqspecs * QUERY_SPEC_MAX_PROBES,
				sizeof(*qp->spec_found));
	return qp->spec_found ? 0 : -ENOMEM;
}

/*
 * Batched records still in a ring when its process execs: drained at the
 * execve entry. That program runs on every system call of the machine
 * (34 ns each under pgbench, ten times the --query events), so it is
 * attached only once a file is attached batched, just before.
 */
static void watch_exec(void *ctx)
{
	struct query_provider *qp = ctx;

	/* And from now on each per-event program drains the thread's rings
	 * before its own event (query_core.bpf.h, drain_first()). */
	qp->skel->bss->batching = true;
	if (qp->exec_link)
		return;
	qp->exec_link = bpf_program__attach(qp->skel->progs.sp_exec_drain);
	if (!qp->exec_link)
		sp_warn("cannot watch exec() (%s): batched events still buffered in a process that execs are lost",
			strerror(errno));
}

/* The programs whose run times price each kind of hit (overhead.h). */
static void overhead_progs(struct query_provider *qp)
{
	struct query_bpf *k = qp->skel;
	const struct overhead_prog progs[] = {
		{ bpf_program__fd(k->progs.sp_event), SP_HIT_EVENT },
		{ bpf_program__fd(k->progs.sp_flush), SP_HIT_FLUSH },
		{ bpf_program__fd(k->progs.sp_spec_begin), SP_HIT_SPEC },
		{ bpf_program__fd(k->progs.sp_spec_end), SP_HIT_SPEC },
		{ bpf_program__fd(k->progs.sp_spec_cache), SP_HIT_SPEC },
		{ bpf_program__fd(k->progs.sp_func_entry), SP_HIT_FUNC },
		{ bpf_program__fd(k->progs.sp_func_return), SP_HIT_FUNC },
		/* on every process of the machine */
		{ bpf_program__fd(k->progs.sp_exec_drain), -1 },
		{ bpf_program__fd(k->progs.sp_thread_exit), -1 },
	};

	_Static_assert(sizeof(progs) == sizeof(qp->oh_progs),
		       "oh_progs holds every program");
	memcpy(qp->oh_progs, progs, sizeof(progs));
}

/* Before a sampling window opens: the records of the closed one. */
static int drain_for_sampler(void *ctx)
{
	struct query_provider *qp = ctx;

	return batch_drain__run(qp->skel);
}

static int qp_load(void *ctx, const struct session_opts *o)
{
	struct query_provider *qp = ctx;
	struct tsc_sample tsc0 = { .ok = false };
	int err;

	qp->o = o;
	err = specs_init(qp);
	if (err) {
		if (err == -ENOMEM)
			sp_err("cannot set up --query: %s", strerror(-err));
		return err;
	}
	/* uprobe_multi links first (Linux 6.6+), else one uprobe per site;
	 * batched events where the kernel can load their programs (bpf_loop,
	 * syscall programs: Linux 5.17+), else per-event everywhere. */
	qp->multi = true;
	qp->sp = true;
	qp->batch = want_batch(o);
	binaries_families(qp);
	/* The overhead's calibration runs in a thread beside the load, on
	 * the CPU that a load in one share leaves free. A split load (the
	 * batched drain's, split_load.h) verifies on both: its calibration
	 * starts after (below), beside the attaching and the first tens of
	 * ms of tracing. Its rounds are timed in its own CPU time, so sharing
	 * a CPU does not lengthen them; the first --max-overhead decision
	 * (150 ms in) waits for it. */
	if (!qp->batch) {
		overhead__start(&qp->oh);
		qp->oh_started = true;
	}
	if (qp->batch)
		tsc_sample_first(&tsc0);
	err = open_and_load(qp, true, qp->batch);
	if (err && qp->batch && err != -EPERM && err != -EACCES) {
		sp_info("cannot load the batched-event programs (%s); per-event probes",
			strerror(-err));
		qp->batch = false;
		err = open_and_load(qp, true, false);
	}
	if (err && err != -EPERM && err != -EACCES) {
		sp_info("no uprobe_multi links (%s); attaching site by site",
			strerror(-err));
		qp->multi = false;
		err = open_and_load(qp, false, qp->batch);
	}
	if (err) {
		privileges__explain_load_error(err, "the query BPF program");
		return err;
	}
	if (!qp->oh_started) {
		overhead__start(&qp->oh);
		qp->oh_started = true;
	}
	/* Frees the stacks of exiting threads and counts their open frames;
	 * optional: without it only the thread map can fill up. */
	qp->exit_link = bpf_program__attach(qp->skel->progs.sp_thread_exit);
	if (!qp->exit_link)
		sp_warn("cannot watch thread exits (%s): queries left open by exiting threads are not counted",
			strerror(errno));
	attacher__init(&qp->att, "sp", qp->bindings,
		       qp->sp ? bind_probes(qp) : 0, qp->multi);
	if (qp->batch) {
		qp->att.before_batched = watch_exec;
		qp->att.before_batched_ctx = qp;
		qp->tsc = tsc_calibrate(qp, &tsc0);
		qp->att.batch_bindings = qp->batch_bindings;
		qp->att.nbatch = bind_batch_probes(qp);
	}
	attacher__init(&qp->fatt, "", NULL, 0, qp->multi);
	qp->att.any_pid = qp->fatt.any_pid = qp->follow;
	overhead__set_tsc(&qp->oh, qp->tsc_ask);
	overhead_progs(qp);
	err = overhead__set_map(&qp->oh, bpf_map__fd(qp->skel->maps.probe_hits));
	if (err)
		sp_info("overhead: no per-process counts (%s)", strerror(-err));
	sampler__init(&qp->sm, o->max_overhead);
	qp->sm.epochs_fd = bpf_map__fd(qp->skel->maps.sample_epochs);
	qp->sm.sampling = &qp->skel->bss->sampling;
	qp->sm.att = &qp->att;
	qp->sm.fatt = o->nfuncs ? &qp->fatt : NULL;
	qp->sm.oh = &qp->oh;
	qp->sm.progs = qp->oh_progs;
	qp->sm.nprogs = (int)(sizeof(qp->oh_progs) / sizeof(qp->oh_progs[0]));
	qp->sm.drain = qp->batch ? drain_for_sampler : NULL;
	qp->sm.drain_ctx = qp;
	return 0;
}

static int qp_follow(void *ctx, int followed_fd)
{
	struct query_provider *qp = ctx;

	qp->follow = true;
	qp->followed_fd = followed_fd;
	return 0;
}

static int qp_name_maps(void *ctx, int *names_fd, int *unread_fd)
{
	struct query_provider *qp = ctx;

	if (!qp->skel)
		return -ENOENT;
	*names_fd = bpf_map__fd(qp->skel->maps.names);
	*unread_fd = bpf_map__fd(qp->skel->maps.unread_names);
	return 0;
}

/* Does --func spec `spec` ([LIB:]GLOB) apply to the file `path`? A bare
 * GLOB applies to the executable; LIB matches a path or a file name
 * prefix ("libc" matches libc.so.6). Sets *glob. */
static bool func_spec_applies(const char *spec, const char *path, bool exe,
			      const char **glob)
{
	const char *colon = strchr(spec, ':'), *base = strrchr(path, '/');
	size_t len;

	base = base ? base + 1 : path;
	if (!colon) {
		*glob = spec;
		return exe;
	}
	*glob = colon + 1;
	len = (size_t)(colon - spec);
	if (strchr(spec, '/') && strchr(spec, '/') < colon)
		return strlen(path) == len && !strncmp(path, spec, len);
	return !strncmp(base, spec, len);
}

/* --func: entry and return probes on the matching functions of one file. */
static int attach_funcs(struct query_provider *qp, pid_t pid,
			const char *open_path, const char *path, bool exe)
{
	struct elf_functions fns;
	uint64_t *offs = NULL, *cookies = NULL;
	const char *glob;
	size_t i, n = 0;
	int k, err = 0;

	for (k = 0; k < qp->o->nfuncs && !err; k++) {
		if (!func_spec_applies(qp->o->funcs[k], path, exe, &glob))
			continue;
		err = elf_functions(open_path, glob, &fns);
		if (err) {
			sp_err("%s: cannot read its symbols for --func: %s", path,
			       strerror(-err));
			break;
		}
		qp->func_found[k] += fns.n;
		if (fns.throws && fns.n && !qp->o->func_unsafe) {
			/* A return probe replaces the return address on the
			 * stack; the C++ unwinder finds no unwind data for it
			 * and calls std::terminate(). */
			sp_err("%s: C++ exceptions (it uses __cxa_throw): a throw through a function with a --func return probe aborts the program; refused (instrument with SP_SCOPE, or --func-unsafe if no exception crosses these functions)",
			       path);
			elf_functions__free(&fns);
			err = -EOPNOTSUPP;
			break;
		}
		if (fns.go && fns.n) {
			sp_err("%s: a Go binary: --func refuses return probes there (Go moves stacks, and a return probe corrupts them)",
			       path);
			elf_functions__free(&fns);
			err = -EOPNOTSUPP;
			break;
		}
		offs = realloc(offs, (n + fns.n + 1) * sizeof(*offs));
		cookies = realloc(cookies, (n + fns.n + 1) * sizeof(*cookies));
		if (!offs || !cookies) {
			elf_functions__free(&fns);
			err = -ENOMEM;
			break;
		}
		for (i = 0; i < fns.n && !err; i++) {
			char **v = realloc(qp->fnames,
					   (qp->nfnames + 1) * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				break;
			}
			qp->fnames = v;
			v[qp->nfnames] = fns.v[i].name;	/* taken over */
			fns.v[i].name = NULL;
			offs[n] = fns.v[i].offset;
			cookies[n] = SP_FUNC_TAG | qp->nfnames++;
			n++;
		}
		elf_functions__free(&fns);
	}
	if (!err && n)
		err = attacher__attach_funcs(&qp->fatt, pid, open_path, path,
					     offs, cookies, n,
					     qp->skel->progs.sp_func_entry,
					     qp->skel->progs.sp_func_return);
	free(offs);
	free(cookies);
	return err;
}

/* --func on a running process: every executable mapping it has. */
struct funcs_pid {
	struct query_provider *qp;
	pid_t pid;
	struct stat exe;
};

static int funcs_file(void *ctx, const char *open_path, const char *path)
{
	struct funcs_pid *fp = ctx;
	struct stat st;

	if (stat(open_path, &st))
		return 0;	/* unmapped meanwhile */
	return attach_funcs(fp->qp, fp->pid, open_path, path,
			    st.st_dev == fp->exe.st_dev &&
			    st.st_ino == fp->exe.st_ino);
}

static int attach_funcs_pid(struct query_provider *qp, pid_t pid)
{
	struct funcs_pid fp = { .qp = qp, .pid = pid };
	char exe[64];

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	if (stat(exe, &fp.exe))
		return -errno;
	return proc_maps__for_each_exec_file(pid, funcs_file, &fp);
}

/* ---- --query specs ------------------------------------------------------ */

static bool spec_file_seen(struct query_provider *qp, pid_t pid,
			   const struct stat *st, int *err)
{
	struct qp_spec_file *v;
	size_t i;

	*err = 0;
	for (i = 0; i < qp->nspec_files; i++)
		if (qp->spec_files[i].pid == pid &&
		    qp->spec_files[i].dev == st->st_dev &&
		    qp->spec_files[i].ino == st->st_ino)
			return true;
	v = realloc(qp->spec_files, (qp->nspec_files + 1) * sizeof(*v));
	if (!v) {
		*err = -ENOMEM;
		return true;
	}
	qp->spec_files = v;
	v[qp->nspec_files++] = (struct qp_spec_file){
		.pid = pid, .dev = st->st_dev, .ino = st->st_ino,
	};
	return false;
}

/* The next site of probe `p` of spec `q` in f, from site *i on: false
 * after the last; else its arguments parsed into args[USDT_ARGS_MAX] and
 * their number (or usdt_args__parse()'s error) in *nargs. */
static bool next_spec_site(const struct query_spec *q, int p,
			   const struct usdt_file *f, size_t *i,
			   struct usdt_arg *args, int *nargs)
{
	for (; *i < f->nsites; ++*i) {
		const struct usdt_site *s = &f->sites[*i];

		if (strcmp(s->provider, q->provider[p]) ||
		    strcmp(s->name, q->probe[p]))
			continue;
		++*i;
		*nargs = usdt_args__parse(s->args, args, USDT_ARGS_MAX);
		return true;
	}
	return false;
}

/* Sites of probe `p` of spec `q` in the file; each must have the
 * arguments the line reads there (spec_precheck.c checked the files known
 * before tracing; this is for those mapped later). Their number or
 * -EINVAL (reported). */
static int spec_sites(const struct query_spec *q, int p,
		      const struct usdt_file *f, const char *path)
{
	struct usdt_arg args[USDT_ARGS_MAX];
	int n = 0, nargs;
	size_t i = 0;

	while (next_spec_site(q, p, f, &i, args, &nargs)) {
		if (query_spec__args_check(q, p, path, nargs))
			return -EINVAL;
		n++;
	}
	return n;
}

/*
 * The register (enum sp_reg) that holds argument `arg` of probe p at every
 * site of it in f, as a plain 64-bit value; SP_REG_NONE if any site has it
 * elsewhere (the BPF program then decodes libbpf's USDT spec of the site).
 * With a register, an event reads only the cookie's cache line of the spec.
 */
static unsigned int spec_name_reg(const struct query_spec *q, int p, int arg,
				  const struct usdt_file *f)
{
	struct usdt_arg args[USDT_ARGS_MAX];
	unsigned int reg = SP_REG_NONE;
	int nargs, r;
	size_t i = 0;

	if (arg < 0)
		return SP_REG_NONE;
	while (next_spec_site(q, p, f, &i, args, &nargs)) {
		if (nargs <= arg || args[arg].kind != USDT_ARG_REG ||
		    args[arg].size != 8)
			return SP_REG_NONE;
		r = attach__reg(args[arg].reg);
		if (r == SP_REG_NONE || (reg != SP_REG_NONE && (unsigned int)r != reg))
			return SP_REG_NONE;
		reg = (unsigned int)r;
	}
	return reg;
}

static int push_spec_link(struct query_provider *qp, struct bpf_link *link)
{
	struct bpf_link **v = realloc(qp->spec_links, (qp->nspec_links + 1) *
							      sizeof(*v));

	if (!v)
		return -ENOMEM;
	qp->spec_links = v;
	v[qp->nspec_links++] = link;
	return 0;
}

/* Remembers the USDT providers of a file, for "matches nothing". */
static int note_providers(struct query_provider *qp, const struct usdt_file *f)
{
	size_t i, j;

	for (i = 0; i < f->nsites; i++) {
		char **v;

		for (j = 0; j < qp->nproviders; j++)
			if (!strcmp(qp->providers[j], f->sites[i].provider))
				break;
		if (j < qp->nproviders)
			continue;
		v = realloc(qp->providers, (qp->nproviders + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		qp->providers = v;
		v[qp->nproviders] = strdup(f->sites[i].provider);
		if (!v[qp->nproviders])
			return -ENOMEM;
		qp->nproviders++;
	}
	return 0;
}

/* Before probe `p` of spec `q` is attached in f: its sites on a 5-byte nop
 * made safe for forked children (site_guard.c; libbpf attaches at the
 * note's address, so no site can move). Release g after. 0 or -errno
 * (said). */
static int guard_spec_sites(const struct query_spec *q, int p,
			    const struct usdt_file *f, const char *open_path,
			    const char *path, struct site_guard *g)
{
	uint64_t *offs = calloc(f->nsites + 1, sizeof(*offs));
	uint64_t *refs = calloc(f->nsites + 1, sizeof(*refs));
	char wbuf[640];
	size_t i, n = 0;
	int err = -ENOMEM;

	g->fd = -1;
	if (!offs || !refs)
		goto out;
	for (i = 0; i < f->nsites; i++)
		if (!strcmp(f->sites[i].provider, q->provider[p]) &&
		    !strcmp(f->sites[i].name, q->probe[p])) {
			offs[n] = f->sites[i].pc_offset;
			refs[n++] = f->sites[i].sema_offset;
		}
	err = site_guard__prepare(open_path, path, offs, refs, n, false, g);
	if (!err && g->pinned)
		sp_info("%s: %s: %zu 5-byte-nop sites of %s:%s pinned to the trap path (forked children keep running them)",
			query_spec__where(q, wbuf, sizeof(wbuf)), path,
			g->pinned, q->provider[p], q->probe[p]);
	if (!err && g->dropped) {
		sp_err("%s: %s: %zu sites of %s:%s are 5-byte nops, which this kernel's uprobes make unsafe for forked children; refused",
		       query_spec__where(q, wbuf, sizeof(wbuf)), path,
		       g->dropped, q->provider[p], q->probe[p]);
		site_guard__release(g);
		err = -EOPNOTSUPP;
	}
out:
	free(offs);
	free(refs);
	return err;
}

/* Every --query probe in one file, for pid: per line its ENDs before its
 * BEGIN, as in bind_probes(). The sites attached or -errno (reported). */
static int attach_specs_file(struct query_provider *qp, pid_t pid,
			     const char *open_path, const char *path)
{
	struct query_bpf *skel = qp->skel;
	struct usdt_file *f = NULL;
	int k, p, n, err, total = 0;
	char wbuf[640];
	struct stat st;

	if (qp->follow)
		pid = -1;	/* links for every process: BPF filters */
	if (stat(open_path, &st))
		return 0;	/* gone; nothing of it can run */
	if (spec_file_seen(qp, pid, &st, &err))
		return err;
	err = usdt_file__open(open_path, &f, NULL);
	if (err)
		return 0;	/* not an ELF file sptrace can attach to */
	err = note_providers(qp, f);
	for (k = 0; k < qp->o->nqspecs && !err; k++) {
		const struct query_spec *q = &qp->o->qspecs[k];
		struct sp_spec_line l;

		/* The loaded program's own copy: what its events decode. */
		memcpy(&l, (const void *)&skel->rodata->spec_lines[k], sizeof(l));
		for (p = q->nprobes - 1; p >= 0 && !err; p--) {
			LIBBPF_OPTS(bpf_usdt_opts, uo,
				.usdt_cookie = SP_SPEC_COOKIE(k, p, &l) |
					SP_SPEC_COOKIE_REG(p || l.name_type ==
							   SP_SPEC_NAME_FIXED ? 0 :
							   spec_name_reg(q, p, q->arg, f)));
			struct bpf_program *prog =
				q->cache ? skel->progs.sp_spec_cache :
				p ? skel->progs.sp_spec_end :
				    skel->progs.sp_spec_begin;
			struct bpf_link *link;

			struct site_guard g;

			n = spec_sites(q, p, f, path);
			if (n <= 0) {
				err = n;
				continue;	/* maybe another probe is here */
			}
			err = guard_spec_sites(q, p, f, open_path, path, &g);
			if (err)
				break;
			link = bpf_program__attach_usdt(prog, pid, open_path,
							q->provider[p],
							q->probe[p], &uo);
			if (!link)
				err = -errno;
			site_guard__release(&g);
			if (!link) {
				sp_err("%s: %s: cannot attach probe %s:%s: %s (see -v)",
				       query_spec__where(q, wbuf, sizeof(wbuf)),
				       path, q->provider[p], q->probe[p],
				       strerror(-err));
				break;
			}
			err = push_spec_link(qp, link);
			if (err) {
				bpf_link__destroy(link);
				break;
			}
			qp->spec_found[k * QUERY_SPEC_MAX_PROBES + p] +=
				(size_t)n;
			total += n;
			if (pid < 0)	/* -b, --follow: a link for all */
				sp_info("every process: %s: %d sites of %s:%s attached (%s)",
					path, n, q->provider[p], q->probe[p],
					query_spec__where(q, wbuf, sizeof(wbuf)));
			else
				sp_info("pid %d: %s: %d sites of %s:%s attached (%s)",
					(int)pid, path, n, q->provider[p],
					q->probe[p],
					query_spec__where(q, wbuf, sizeof(wbuf)));
		}
	}
	usdt_file__free(f);
	return err ? err : total;
}

/* Every executable mapping of a running process. */
struct specs_pid {
	struct query_provider *qp;
	pid_t pid;
};

static int specs_file(void *ctx, const char *open_path, const char *path)
{
	struct specs_pid *sp = ctx;

	return attach_specs_file(sp->qp, sp->pid, open_path, path);
}

static int attach_specs_pid(struct query_provider *qp, pid_t pid)
{
	struct specs_pid sp = { .qp = qp, .pid = pid };

	return proc_maps__for_each_exec_file(pid, specs_file, &sp);
}

static int check_specs(const struct query_provider *qp, const char *target)
{
	char wbuf[640], provs[512];
	size_t i, at = 0;
	int k, p;

	provs[0] = 0;
	for (i = 0; i < qp->nproviders && at < sizeof(provs) - 1; i++)
		at += (size_t)snprintf(provs + at, sizeof(provs) - at, "%s%s",
				       i ? ", " : "", qp->providers[i]);
	for (k = 0; qp->o && k < qp->o->nqspecs; k++) {
		const struct query_spec *q = &qp->o->qspecs[k];

		for (p = 0; p < q->nprobes; p++) {
			if (qp->spec_found[k * QUERY_SPEC_MAX_PROBES + p])
				continue;
			if (qp->nproviders)
				sp_err("%s: no probe %s:%s in %s or its libraries (their providers: %s; sptrace list FILE shows the probes)",
				       query_spec__where(q, wbuf, sizeof(wbuf)),
				       q->provider[p], q->probe[p], target,
				       provs);
			else
				sp_err("%s: no probe %s:%s in %s or its libraries (they have no USDT probes at all)",
				       query_spec__where(q, wbuf, sizeof(wbuf)),
				       q->provider[p], q->probe[p], target);
			return -ENOENT;
		}
	}
	return 0;
}

static int check_funcs(const struct query_provider *qp, const char *target)
{
	int k;

	for (k = 0; qp->o && k < qp->o->nfuncs; k++) {
		if (qp->func_found[k])
			continue;
		/* A glob that matches nothing times nothing: a typo, not an
		 * empty result. */
		sp_err("--func '%s': no function matches in %s or its libraries "
		       "(readelf -Ws FILE lists a file's functions)",
		       qp->o->funcs[k], target);
		return -ENOENT;
	}
	return 0;
}

int query_provider__check(const struct query_provider *qp,
			  const char *target)
{
	int err = check_specs(qp, target);

	return err ? err : check_funcs(qp, target);
}

/* A --query row's name (see SP_SPEC_NAME in query_abi.h). */
static int spec_row_name(const struct query_provider *qp, __u64 name,
			 char *buf, size_t len)
{
	unsigned int line = SP_SPEC_NAME_LINE(name);
	unsigned int outcome = SP_SPEC_NAME_OUTCOME(name);
	__u64 value = name & SP_SPEC_VALUE_MASK;
	const struct query_spec *q;
	struct sp_spec_name v;
	long long iv;

	if (!qp->o || line >= (unsigned int)qp->o->nqspecs)
		return -ENOENT;
	q = &qp->o->qspecs[line];
	if (outcome == SP_SPEC_OUTCOME_OTHER) {
		snprintf(buf, len, "%s <other>", query_spec__label(q));
		return 0;
	}
	if (outcome) {
		if (outcome >= (unsigned int)q->nprobes)
			return -ENOENT;
		snprintf(buf, len, "%s [%s]", query_spec__label(q),
			 q->label[outcome] ? q->label[outcome] :
					     q->probe[outcome]);
		return 0;
	}
	switch (q->name_type) {
	case SP_SPEC_NAME_FIXED:
		snprintf(buf, len, "%s", q->literal);
		return 0;
	case SP_SPEC_NAME_INT:
		/* 50 bits kept: sign-extend, so small negatives print. */
		iv = (long long)value;
		if (value & (1ull << (SP_SPEC_OUTCOME_SHIFT - 1)))
			iv -= (long long)(1ull << SP_SPEC_OUTCOME_SHIFT);
		snprintf(buf, len, "%s%lld",
			 q->literal[0] == ':' ? "" : q->literal, iv);
		return 0;
	}
	if (!qp->skel ||
	    bpf_map_lookup_elem(bpf_map__fd(qp->skel->maps.spec_names), &name,
				&v))
		return -ENOENT;
	v.str[sizeof(v.str) - 1] = 0;
	if (q->normalize == SP_NORM_PG && qp->pgt)
		return pg_text__name(qp->pgt, v.str,
				     strlen(v.str) == sizeof(v.str) - 1, value,
				     buf, len);
	spec_norm__text(q->normalize, v.str, buf, len);
	return 0;
}

int query_provider__tag_name(const struct query_provider *qp, __u64 name,
			     char *buf, size_t len)
{
	if (name & SP_FUNC_TAG) {
		name &= ~SP_FUNC_TAG;
		if (name >= qp->nfnames)
			return -ENOENT;
		snprintf(buf, len, "%s", qp->fnames[name]);
		return 0;
	}
	if (!(name & SP_SPEC_TAG))
		return -EINVAL;
	return spec_row_name(qp, name, buf, len);
}

/* A spec line's warning again at most this often while a session is read
 * again and again (serve, --interval), and only when its count grew; the
 * last read (tracing stopped) says every total. */
#define SPEC_WARN_PERIOD_NS (60ull * 1000000000ull)

/* What went wrong per spec line, one warning each, naming the line. */
static void report_specs(struct query_provider *qp)
{
	static const char *const what[SP_SPEC_ERR__MAX] = {
		[SP_SPEC_ERR_END_WITHOUT_BEGIN] = "ENDs without a BEGIN (end_without_begin)",
		[SP_SPEC_ERR_END_MISMATCH] = "ENDs that closed intervals opened inside theirs (end_mismatch; share a stack= only between lines that nest)",
		[SP_SPEC_ERR_STACK_OVERFLOW] = "BEGINs deeper than the stack (stack_overflow)",
		[SP_SPEC_ERR_NAME_READ] = "name arguments unreadable (name_read_failed)",
		[SP_SPEC_ERR_NAMES_FULL] = "events whose new name found the names map full, counted in <other> (raise --max-queries)",
		[SP_SPEC_ERR_OTHER] = "events of names beyond max-rows, counted in its <other> row",
		[SP_SPEC_ERR_TRUNCATED] = "strings longer than the 255 bytes copied (each its own row, keyed by a hash of its first 16 KiB, named <truncated #HASH>)",
		[SP_SPEC_ERR_ABANDONED] = "intervals whose END never came, dropped at the next BEGIN or at abandon= (abandoned)",
	};
	int ncpus = libbpf_num_possible_cpus(), k, i;
	uint64_t now = now_ns();
	char wbuf[640];
	__u64 *vals, n;
	__u32 slot, e;

	if (!qp->skel || !qp->o || !qp->o->nqspecs || ncpus <= 0)
		return;
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals)
		return;
	for (k = 0; k < qp->o->nqspecs; k++)
		for (e = 0; e < SP_SPEC_ERR__MAX; e++) {
			slot = (__u32)k * SP_SPEC_ERR__MAX + e;
			if (bpf_map_lookup_elem(bpf_map__fd(qp->skel->maps.spec_errors),
						&slot, vals))
				continue;
			for (n = 0, i = 0; i < ncpus; i++)
				n += vals[i];
			if (!n || (!qp->drained &&
				   (n == qp->spec_warned_n[slot] ||
				    (qp->spec_warned_ns[slot] &&
				     now < qp->spec_warned_ns[slot] +
					   SPEC_WARN_PERIOD_NS))))
				continue;
			qp->spec_warned_ns[slot] = now;
			qp->spec_warned_n[slot] = n;
			sp_warn("%s: %llu %s",
					query_spec__where(&qp->o->qspecs[k],
							  wbuf, sizeof(wbuf)),
					(unsigned long long)n, what[e]);
		}
	free(vals);
}

static int qp_attach_specs(struct query_provider *qp, pid_t pid,
			   const char *path)
{
	char target[32];
	int n;

	if (path) {
		qp->spec_by_path = true;
		return attach_specs_file(qp, pid, path, path);
	}
	n = attach_specs_pid(qp, pid);
	/* -p: the process is complete now; a command or -b is checked
	 * once it ran (a library it loads later may bring the probes). */
	if (n >= 0 && !qp->spec_by_path) {
		snprintf(target, sizeof(target), "pid %d", (int)pid);
		qp->spec_by_path = true;	/* checked once */
		/* Not -ENOENT: the session reads that as "exited". */
		if (check_specs(qp, target))
			return -EINVAL;
	}
	return n;
}

/* A -b file replaced by one with sp probes, after the session loaded no
 * sp program (none of the -b files had any): said once. */
static void sp_unloaded(struct query_provider *qp, const char *path)
{
	bool flush;

	if (qp->sp_told || !file_has_sp(qp, path, &flush))
		return;
	qp->sp_told = true;
	sp_warn("%s: its sp probes are not traced: no -b file had any when sptrace started (start it again to trace them)",
		path);
}

static int qp_attach(void *ctx, pid_t pid, const char *path)
{
	struct query_provider *qp = ctx;
	int n, f = 0;

	if (path) {
		qp->launched = pid;
		n = attacher__attach_file(&qp->att, pid, path, path);
	} else
		n = attacher__attach_pid(&qp->att, pid);
	if (path && !qp->sp)
		sp_unloaded(qp, path);
	if (n >= 0 && qp->o->nqspecs) {
		f = qp_attach_specs(qp, pid, path);
		n = f < 0 ? f : n + f;
	}
	if (n < 0 || !qp->o->nfuncs)
		return n;
	if (path)
		f = attach_funcs(qp, pid, path, path, true);
	else
		f = attach_funcs_pid(qp, pid);
	if (f < 0)
		return f;
	/* -p: the process is complete now (as for the specs). */
	if (!path && !qp->func_checked) {
		char target[32];

		qp->func_checked = true;
		snprintf(target, sizeof(target), "pid %d", (int)pid);
		if (check_funcs(qp, target))
			return -EINVAL;
	}
	return n + 2 * f;
}

static void qp_arm(void *ctx, bool on)
{
	struct query_provider *qp = ctx;

	/* Batched records carry the host's times: those outside
	 * [armed_ns, disarmed_ns) are not counted, as events outside the
	 * armed window are not. */
	if (on) {
		qp->skel->bss->disarmed_ns = 0;
		qp->skel->bss->armed_ns = now_ns();
		if (qp->oh_started) {
			overhead__armed(&qp->oh, qp->o->pids,
					(size_t)qp->o->npids, qp->launched);
			sampler__start(&qp->sm);
		}
	} else {
		/* Every semaphore back before anything is detached. */
		if (qp->oh_started)
			sampler__stop(&qp->sm);
		qp->skel->bss->disarmed_ns = now_ns();
	}
	qp->skel->bss->armed = on;
}

/* From the session's loop: the TSC map follows CLOCK_MONOTONIC. */
static void qp_tick(void *ctx)
{
	struct query_provider *qp = ctx;

	if (qp->tsc)
		tsc_clock__tick(&qp->tclock, now_ns());
	if (qp->oh_started) {
		overhead__tick(&qp->oh, now_ns());
		sampler__tick(&qp->sm);
	}
}

/* The links are gone: count what the hosts' rings still hold, once. */
static void drain_rings(struct query_provider *qp)
{
	if (!qp->batch || qp->drained || !qp->skel || !qp->batched_files)
		return;
	qp->drained = true;
	(void)batch_drain__run(qp->skel);	/* reported */
}

static void destroy_spec_links(struct query_provider *qp)
{
	size_t i;

	/* One after the other (PostgreSQL's 24 sites: 5 s under load), not
	 * by attach.c's concurrent closers: destroying a USDT link hands its
	 * spec IDs back to the object's usdt_manager, a realloc()ed array
	 * libbpf does not lock (two at once: a double free under ASan). */
	for (i = 0; i < qp->nspec_links; i++)
		bpf_link__destroy(qp->spec_links[i]);
	free(qp->spec_links);
	qp->spec_links = NULL;
	qp->nspec_links = 0;
}

/* The attacher's counts of files, kept past its destruction at detach:
 * read while tracing (--interval, serve) and for the last report. A file
 * whose sp:tsc watch was refused is one of them. */
static void keep_file_counts(struct query_provider *qp)
{
	if (qp->att.batched_files || qp->att.event_files) {
		qp->batched_files = qp->att.batched_files;
		qp->event_files = qp->att.event_files;
		qp->tsc_unwatched = qp->att.watch_refused;
	}
}

static void qp_detach(void *ctx)
{
	struct query_provider *qp = ctx;

	keep_file_counts(qp);
	attacher__destroy(&qp->att);
	drain_rings(qp);
	attacher__destroy(&qp->fatt);
	destroy_spec_links(qp);
	if (qp->tsc && qp->tclock.updates && !qp->tsc_told) {
		qp->tsc_told = true;
		sp_info("TSC map: %lu recalibrations (%lu samples rejected, %lu after a rate change), map - CLOCK_MONOTONIC %+lld ns at the last, at most %lld ns after the first",
			qp->tclock.updates, qp->tclock.rejected,
			qp->tclock.relocks,
			(long long)qp->tclock.offset_ns,
			(long long)qp->tclock.max_offset_ns);
	}
}

static void qp_destroy(void *ctx)
{
	struct query_provider *qp = ctx;

	attacher__destroy(&qp->att);
	attacher__destroy(&qp->fatt);
	destroy_spec_links(qp);
	free(qp->spec_files);
	free(qp->spec_found);
	qp->spec_files = NULL;
	qp->spec_found = NULL;
	for (size_t i = 0; i < qp->nproviders; i++)
		free(qp->providers[i]);
	free(qp->providers);
	qp->providers = NULL;
	qp->nproviders = 0;
	qp->nspec_files = 0;
	for (size_t i = 0; i < qp->nfnames; i++)
		free(qp->fnames[i]);
	free(qp->fnames);
	qp->fnames = NULL;
	qp->nfnames = 0;
	bpf_link__destroy(qp->exit_link);
	bpf_link__destroy(qp->exec_link);
	if (qp->oh_started) {
		sampler__destroy(&qp->sm);
		overhead__destroy(&qp->oh);
	}
	qp->oh_started = false;
	query_bpf__destroy(qp->skel);
	query_bpf__destroy(qp->skel2);
	query_names__free(qp->names);
	pg_text__free(qp->pgt);
	qp->pgt = NULL;
	qp->names = NULL;
	qp->exit_link = NULL;
	qp->exec_link = NULL;
	qp->skel = NULL;
	qp->skel2 = NULL;
}

void query_provider__init(struct query_provider *qp,
			  struct session_provider *p)
{
	memset(qp, 0, sizeof(*qp));
	qp->scale_rows = true;
	*p = (struct session_provider){
		.name = "query", .ctx = qp, .load = qp_load,
		.attach = qp_attach, .arm = qp_arm, .detach = qp_detach,
		.destroy = qp_destroy, .follow = qp_follow, .tick = qp_tick,
		.name_maps = qp_name_maps,
		/* the TSC map's early and re-lock samples come 100 ms apart */
		.tick_ms = TSC_CLOCK_RELOCK_NS / 1000000,
	};
}

/* normalize=pg: every string of those lines learnt before any is named,
 * so rows pg_stat_statements counts as one print as one name. */
static void learn_pg_names(struct query_provider *qp)
{
	__u64 key, next, *prev = NULL;
	struct sp_spec_name v;
	unsigned int line;
	bool any = false;
	int k, fd;

	for (k = 0; qp->o && k < qp->o->nqspecs; k++)
		any |= qp->o->qspecs[k].normalize == SP_NORM_PG;
	if (!any || !qp->skel)
		return;
	if (!qp->pgt)
		qp->pgt = pg_text__new();
	if (!qp->pgt)
		return;
	fd = bpf_map__fd(qp->skel->maps.spec_names);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		line = SP_SPEC_NAME_LINE(key);
		if (line >= (unsigned int)qp->o->nqspecs ||
		    qp->o->qspecs[line].normalize != SP_NORM_PG ||
		    bpf_map_lookup_elem(fd, &key, &v))
			continue;
		v.str[sizeof(v.str) - 1] = 0;
		if (strlen(v.str) < sizeof(v.str) - 1)
			(void)pg_text__learn(qp->pgt, v.str);
	}
}

static int tag_name(void *ctx, __u64 name, char *buf, size_t len)
{
	return query_provider__tag_name(ctx, name, buf, len);
}

/* What the probes cost the targets so far, into s->overhead (none if it
 * cannot be had: said with -v, once). */
static void read_overhead(struct query_provider *qp, const struct session *ss,
			  struct summary *s)
{
	struct summary_overhead o;
	int err;

	if (!qp->oh_started)
		return;
	if (ss->child_exited)
		overhead__reaped(&qp->oh, ss->child_cpu_ns);
	err = overhead__figures(&qp->oh, qp->oh_progs,
				(int)(sizeof(qp->oh_progs) /
				      sizeof(qp->oh_progs[0])), &o);
	if (!err)
		err = summary__set_overhead(s, &o);
	free(o.procs);
	if (err && !qp->oh_told) {
		qp->oh_told = true;
		sp_info("overhead: no estimate of sptrace's own cost: %s",
			strerror(-err));
	}
}

int query_provider__read(struct query_provider *qp, const struct session *ss,
			 struct summary *s)
{
	struct summary_sampled *scales = NULL;
	size_t nscales = 0;
	int err = 0;

	s->duration_ns = session__duration(ss);
	/* A report while tracing (--interval, serve): records of threads
	 * that have not flushed since (one blocked, say) count now. */
	if (qp->batch && !qp->drained && qp->skel && qp->att.batched_files &&
	    !qp->evict_read)
		(void)batch_drain__run(qp->skel);	/* reported */
	keep_file_counts(qp);
	s->events_mode = !qp->batched_files ? "per-event" :
			 qp->event_files ? "mixed" : "batched";
	/* Fallbacks are told by sp:tsc hits (query_batch.bpf.c): not where another
	 * tracer's uprobe there kept sptrace from watching it. */
	s->batch_fallback_unknown = qp->tsc_unwatched > 0;
	learn_pg_names(qp);
	if (!qp->names)
		qp->names = query_names__new();
	if (!qp->names)
		err = -ENOMEM;
	else {
		/* First: sampled processes' rows are scaled by its figures. */
		read_overhead(qp, ss, s);
		if (qp->oh_started)
			err = sampler__scales(&qp->sm, &s->overhead, &scales,
					      &nscales);
		if (!err)
			err = query_maps__read(qp->skel, qp->names, &ss->spaces,
					       tag_name, qp,
					       qp->scale_rows ? scales : NULL,
					       qp->scale_rows ? nscales : 0, s);
		if (!err)
			err = summary__set_sampling(s, scales, nscales);
	}
	free(scales);
	if (err)
		sp_err("cannot read the BPF maps: %s", strerror(-err));
	else if (qp->drained && s->batch_fallback_unknown)
		sp_info("batched events: those that fired per-event sites instead are not counted (sp:tsc not watched in %zu files)",
			qp->tsc_unwatched);
	else if (qp->drained)	/* the last read, once tracing stopped */
		sp_info("batched events: %" PRIu64 " fired per-event sites instead "
			"(their thread's ring was gone at its exit, or could not be mapped)",
			s->batch_fallback);
	if (!qp->evict_read)
		report_specs(qp);
	return err;
}
