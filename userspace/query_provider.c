// SPDX-License-Identifier: MIT
/*
 * The query provider: loads bpf/query.bpf.c (uprobe_multi links where the
 * kernel has them, else one uprobe per site), binds each sp probe name to
 * its program, and gates counting with the program's `armed` flag.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <sptrace/record_abi.h>
#include "log.h"
#include "privileges.h"
#include "query.skel.h"
#include "query_maps.h"
#include "query_provider.h"
#include "summary.h"

static int open_and_load(struct query_provider *qp, bool multi)
{
	const struct session_opts *o = qp->o;
	struct bpf_program *prog;
	int err;

	qp->skel = query_bpf__open();
	if (!qp->skel)
		return -errno;
	bpf_object__for_each_program(prog, qp->skel->obj)
		if (multi && prog != qp->skel->progs.sp_thread_exit)
			attach__prepare_multi(prog);
	qp->skel->rodata->record = o->record;
	qp->skel->rodata->wakeup_bytes =
		(o->ringbuf_bytes ? o->ringbuf_bytes : SP_DEFAULT_RINGBUF) / 4;
	err = query_maps__resize(qp->skel, o->max_queries, o->max_threads);
	if (!err && o->record && o->ringbuf_bytes)
		err = bpf_map__set_max_entries(qp->skel->maps.events,
					       o->ringbuf_bytes);
	if (!err && !o->record)
		/* The smallest ring buffer: one page. */
		err = bpf_map__set_max_entries(qp->skel->maps.events,
					       (uint32_t)getpagesize());
	if (!err)
		err = query_bpf__load(qp->skel);
	if (err) {
		query_bpf__destroy(qp->skel);
		qp->skel = NULL;
	}
	return err;
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
	const struct session_opts *o = qp->o;
	struct probe_binding *b = qp->bindings;
	struct query_bpf *s = qp->skel;
	size_t i = 0;

	if (want(o, SP_EVC_QUERY))
		b[i++] = (struct probe_binding){ "query_end", s->progs.sp_query_end };
	if (want(o, SP_EVC_BLOCKED))
		b[i++] = (struct probe_binding){ "blocked_end", s->progs.sp_blocked_end };
	if (want(o, SP_EVC_INCR))
		b[i++] = (struct probe_binding){ "incr_load_end", s->progs.sp_incr_load_end };
	if (want(o, SP_EVC_QUERY))
		b[i++] = (struct probe_binding){ "query_begin", s->progs.sp_query_begin };
	if (want(o, SP_EVC_BLOCKED))
		b[i++] = (struct probe_binding){ "blocked_begin", s->progs.sp_blocked_begin };
	if (want(o, SP_EVC_INCR))
		b[i++] = (struct probe_binding){ "incr_load_begin", s->progs.sp_incr_load_begin };
	if (want(o, SP_EVC_CACHE))
		b[i++] = (struct probe_binding){ "cache_hit", s->progs.sp_cache_hit };
	if (o->record && (o->classes & (1u << SP_EVC_MARK)))
		b[i++] = (struct probe_binding){ "mark", s->progs.sp_mark };
	if (o->record && (o->classes & (1u << SP_EVC_ALLOC))) {
		b[i++] = (struct probe_binding){ "alloc", s->progs.sp_alloc };
		b[i++] = (struct probe_binding){ "free", s->progs.sp_free };
	}
	b[i++] = (struct probe_binding){ "thread_name", s->progs.sp_thread_name };
	return i;
}

static int qp_load(void *ctx, const struct session_opts *o)
{
	struct query_provider *qp = ctx;
	int err;

	qp->o = o;
	/* uprobe_multi links first (Linux 6.6+), else one uprobe per site. */
	qp->multi = true;
	err = open_and_load(qp, true);
	if (err && err != -EPERM && err != -EACCES) {
		sp_info("no uprobe_multi links (%s); attaching site by site",
			strerror(-err));
		qp->multi = false;
		err = open_and_load(qp, false);
	}
	if (err) {
		privileges__explain_load_error(err, "the query BPF program");
		return err;
	}
	/* Frees the stacks of exiting threads and counts their open frames;
	 * optional: without it only the thread map can fill up. */
	qp->exit_link = bpf_program__attach(qp->skel->progs.sp_thread_exit);
	if (!qp->exit_link)
		sp_warn("cannot watch thread exits (%s): queries left open by exiting threads are not counted",
			strerror(errno));
	attacher__init(&qp->att, "sp", qp->bindings, bind_probes(qp),
		       qp->multi);
	return 0;
}

static int qp_attach(void *ctx, pid_t pid, const char *path)
{
	struct query_provider *qp = ctx;

	if (path)
		return attacher__attach_file(&qp->att, pid, path, path);
	return attacher__attach_pid(&qp->att, pid);
}

static void qp_arm(void *ctx, bool on)
{
	struct query_provider *qp = ctx;

	qp->skel->bss->armed = on;
}

static void qp_detach(void *ctx)
{
	struct query_provider *qp = ctx;

	attacher__destroy(&qp->att);
}

static void qp_destroy(void *ctx)
{
	struct query_provider *qp = ctx;

	attacher__destroy(&qp->att);
	bpf_link__destroy(qp->exit_link);
	query_bpf__destroy(qp->skel);
	qp->exit_link = NULL;
	qp->skel = NULL;
}

void query_provider__init(struct query_provider *qp,
			  struct session_provider *p)
{
	memset(qp, 0, sizeof(*qp));
	*p = (struct session_provider){
		.name = "query", .ctx = qp, .load = qp_load,
		.attach = qp_attach, .arm = qp_arm, .detach = qp_detach,
		.destroy = qp_destroy,
	};
}

int query_provider__read(struct query_provider *qp, const struct session *ss,
			 struct summary *s)
{
	int err;

	s->duration_ns = session__duration(ss);
	err = query_maps__read(qp->skel, &ss->spaces, s);
	if (err)
		sp_err("cannot read the BPF maps: %s", strerror(-err));
	return err;
}
