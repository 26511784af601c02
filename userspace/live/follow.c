// SPDX-License-Identifier: MIT
/*
 * --follow, userspace side: loads bpf/follow.bpf.c, seeds `followed` with
 * the command, and turns its ring buffer into calls of the session's
 * handler, each followed by the SIGCONT that ends the stop (through
 * stop_release.c, whose releaser ends it if sptrace dies first).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "follow.h"
#include "follow.skel.h"
#include "log.h"
#include "privileges.h"
#include "stop_release.h"

static int on_event(void *ctx, void *data, size_t len)
{
	struct follow *f = ctx;
	const struct sp_follow_event *e = data;

	if (len < sizeof(*e))
		return 0;
	if (f->fn)
		f->fn(f->ctx, e);
	/* Stopped before SIGCONT, or its stop still pending: SIGCONT
	 * discards a pending stop, so either way it runs on, attached. */
	if (e->kind == SP_FOLLOW_EXEC || e->kind == SP_FOLLOW_DL)
		stop_release__continue(f->stops, (pid_t)e->tgid);
	return 0;
}

int follow__open(struct follow *f, const struct stop_release *stops,
		 follow_event_fn fn, void *ctx)
{
	int err;

	memset(f, 0, sizeof(*f));
	f->fn = fn;
	f->ctx = ctx;
	f->stops = stops;
	f->skel = follow_bpf__open();
	if (!f->skel)
		err = -errno;
	else if (!(err = stop_release__use(stops, f->skel->maps.stop_held,
					   f->skel->maps.stop_released,
					   f->skel->maps.stop_ctl)))
		err = follow_bpf__load(f->skel);
	if (err) {
		privileges__explain_load_error(err, "the --follow BPF program");
		return err;
	}
	f->links[0] = bpf_program__attach(f->skel->progs.sp_follow_fork);
	f->links[1] = f->links[0] ?
		bpf_program__attach(f->skel->progs.sp_follow_exec) : NULL;
	f->links[2] = f->links[1] ?
		bpf_program__attach(f->skel->progs.sp_follow_exit) : NULL;
	if (!f->links[2]) {
		err = -errno;
		sp_err("--follow: cannot attach to the sched_process_fork/exec/exit tracepoints: %s (needs a kernel with BTF, see -v)",
		       strerror(-err));
		return err;
	}
	f->rb = ring_buffer__new(bpf_map__fd(f->skel->maps.follow_events),
				 on_event, f, NULL);
	if (!f->rb) {
		err = -errno;
		sp_err("--follow: cannot read its ring buffer: %s",
		       strerror(-err));
		return err;
	}
	return 0;
}

int follow__add(struct follow *f, pid_t pid)
{
	struct sp_followed v = { .parent = 0 };
	__u32 key = (__u32)pid;

	if (bpf_map_update_elem(bpf_map__fd(f->skel->maps.followed), &key, &v,
				BPF_NOEXIST))
		return -errno;	/* -EEXIST: followed already */
	__atomic_fetch_add(&f->skel->bss->live, 1, __ATOMIC_SEQ_CST);
	return 0;
}

bool follow__has(const struct follow *f, pid_t pid)
{
	struct sp_followed v;
	__u32 key = (__u32)pid;

	return !bpf_map_lookup_elem(bpf_map__fd(f->skel->maps.followed), &key,
				    &v);
}

int follow__followed_fd(const struct follow *f)
{
	return bpf_map__fd(f->skel->maps.followed);
}

int follow__events_fd(const struct follow *f)
{
	return bpf_map__fd(f->skel->maps.follow_events);
}

int follow__errors_fd(const struct follow *f)
{
	return bpf_map__fd(f->skel->maps.follow_errors);
}

int follow__poll_fd(const struct follow *f)
{
	return f->rb ? ring_buffer__epoll_fd(f->rb) : -1;
}

int follow__consume(struct follow *f)
{
	int n = f->rb ? ring_buffer__consume(f->rb) : 0;

	return n < 0 ? n : 0;
}

int64_t follow__live(const struct follow *f)
{
	return __atomic_load_n(&f->skel->bss->live, __ATOMIC_SEQ_CST);
}

static uint64_t error_count(const struct follow *f, __u32 slot)
{
	uint64_t v = 0;

	bpf_map_lookup_elem(bpf_map__fd(f->skel->maps.follow_errors), &slot,
			    &v);
	return v;
}

void follow__report(const struct follow *f)
{
	uint64_t n;

	if (!f->skel)
		return;
	n = error_count(f, SP_FOLLOW_ERR_FULL);
	if (n)
		sp_warn("--follow: %llu child processes were not followed (more than %d at once); their events are not counted",
			(unsigned long long)n, SP_FOLLOW_MAX);
	n = error_count(f, SP_FOLLOW_ERR_LOST);
	if (n)
		sp_warn("--follow: %llu exec or library loads of followed processes were not stopped for (ring buffer full); probes in what they mapped were attached late or not at all",
			(unsigned long long)n);
}

void follow__destroy(struct follow *f)
{
	int i;

	for (i = 0; i < 3; i++)
		bpf_link__destroy(f->links[i]);
	/* No new stops now: end those still waiting. */
	f->fn = NULL;
	if (f->rb)
		ring_buffer__consume(f->rb);
	ring_buffer__free(f->rb);
	follow_bpf__destroy(f->skel);
	memset(f, 0, sizeof(*f));
}
