/* SPDX-License-Identifier: MIT */
/*
 * The memory provider of a session: bpf/mem.bpf.c attached to the typed
 * sp probes (SP_ALLOC, SP_FREE, SP_THREAD_NAME) and, unless told not to,
 * to the libc allocator every target maps (malloc & co, found through
 * /proc/PID/maps and the library's symbols).
 */
#ifndef SPTRACE_MEM_PROVIDER_H
#define SPTRACE_MEM_PROVIDER_H

#include <stdbool.h>
#include <stdint.h>
#include "attach.h"
#include "mem_report.h"
#include "session.h"
#include "symbolize.h"

struct mem_bpf;
struct bpf_link;

struct mem_opts {
	uint32_t sample;	/* count every Nth allocation; 0 or 1: all */
	bool per_thread;
	bool no_stacks;
	bool no_libc;		/* typed probes only */
	unsigned int max_live;	/* 0: defaults */
	unsigned int max_stacks;
};

/* A file whose allocator is attached for one process. */
struct mem_heap_obj {
	pid_t pid;
	uint64_t dev, ino;
};

struct mem_provider {
	struct mem_opts mo;
	const struct session_opts *o;
	struct mem_bpf *skel;
	struct attacher att;		/* typed sp probes */
	struct probe_binding bindings[4];
	bool multi;
	struct bpf_link *exit_link;
	struct bpf_link **links;	/* libc uprobes */
	size_t nlinks, links_cap;
	struct mem_heap_obj *objs;
	size_t nobjs;
	bool heap_traced;		/* some allocator attached */
	bool told_cut;			/* stacks cut at no code: said */
	struct symbolizer sym;
};

/* Fills `p` with the hooks of the memory provider backed by `mp`. */
void mem_provider__init(struct mem_provider *mp, const struct mem_opts *mo,
			struct session_provider *p);
/* After the session ran: every figure, scaled when sampled, names read
 * through the session's snapshots. 0 or -errno (reported). */
int mem_provider__read(struct mem_provider *mp, const struct session *ss,
		       struct mem_report *r);
/* A timeline sample now: RSS of the live targets and live bytes from the
 * maps. 0 or -errno. */
int mem_provider__sample(struct mem_provider *mp, const struct session *ss,
			 struct mem_report *r, uint64_t now_ns);

/* session__run() with a timeline sample every interval_ms (0: none):
 * a timer fd the session polls. 0 or -errno (reported). */
int mem_provider__run(struct mem_provider *mp, struct session *ss,
		      struct mem_report *r, unsigned int interval_ms);

#endif /* SPTRACE_MEM_PROVIDER_H */
