/* SPDX-License-Identifier: MIT */
/*
 * What a session is asked to trace (the command line's targets and
 * options), apart from the session itself: the checks made before
 * anything is loaded (spec_precheck.h) read it without the session.
 */
#ifndef SPTRACE_SESSION_OPTS_H
#define SPTRACE_SESSION_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct query_spec;

#define SESSION_MAX_PIDS 256
#define SESSION_MAX_FUNCS 32

struct session_opts {
	pid_t pids[SESSION_MAX_PIDS];
	int npids;
	char **cmd;			/* launch mode */
	bool follow;			/* --follow: CMD's descendants too */
	const char *binaries[SESSION_MAX_PIDS];	/* -b: every process of */
	int nbinaries;
	const char *funcs[SESSION_MAX_FUNCS];	/* --func [LIB:]GLOB */
	int nfuncs;
	bool func_unsafe;		/* --func-unsafe: also where C++ throws */
	struct query_spec *qspecs;	/* --query, --query-file (owned) */
	int nqspecs;
	double duration_s;		/* 0: until stopped */
	/* --max-overhead PCT: the probes' estimated share of each traced
	 * process's CPU time kept under PCT percent by sampling
	 * (sampler.h); 0: none. */
	double max_overhead;
	unsigned int max_queries;	/* 0: default */
	unsigned int max_threads;
	/* --query-keys: a row per (query, key) of the keyed sp probes, at
	 * most max_queries of them, the rest in "<other>". */
	bool query_keys;
	/* record: events to the ring buffer, only these probe classes
	 * (1 << enum sp_event_class) attached. */
	bool record;
	uint32_t classes;
	uint32_t ringbuf_bytes;		/* 0: default */
	/* serve: latencies counted by ladder slot (sptrace/ladder.h), not
	 * by fine bucket; no percentile can be read from them. */
	bool hist_ladder;
	/* The command's rows come from sp probes only (the query provider
	 * alone): see session_opts__sp_only(). */
	bool need_sp;
};

/* The run counts sp probes and nothing else (need_sp, no --query, no
 * --func): a target without any can count nothing and is refused before
 * anything is loaded (spec_precheck__sp()). */
static inline bool session_opts__sp_only(const struct session_opts *o)
{
	return o->need_sp && !o->nqspecs && !o->nfuncs;
}

#endif /* SPTRACE_SESSION_OPTS_H */
