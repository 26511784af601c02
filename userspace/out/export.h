/* SPDX-License-Identifier: MIT */
/*
 * `sptrace export`: a recorded run in other tools' formats (the `crox` and
 * stack-collapse tools of measureme): Chrome trace event JSON for Perfetto
 * and chrome://tracing, folded stacks for flame graphs, raw events as CSV.
 * The writers read events from an abstract source, so they run the same on
 * a trace file and on events built in memory (tests).
 */
#ifndef SPTRACE_EXPORT_H
#define SPTRACE_EXPORT_H

#include <stdint.h>
#include <stdio.h>
#include <sptrace/query_abi.h>
#include "trace_format.h"

/* Where events come from, in file order. */
struct export_source {
	/* The next event: 1 and *ev filled, 0 at the end, or -errno. */
	int (*next)(void *ctx, struct trace_event *ev);
	/* The string with this id, or NULL (unknown, TRACE_NO_STRING). */
	const char *(*string)(void *ctx, uint32_t id);
	void *ctx;
};

/* About the run, for the Chrome export's time base and "otherData". */
struct export_info {
	uint64_t base_ns;		/* CLOCK_MONOTONIC shown as ts 0 */
	uint64_t start_realtime_ns;	/* 0: left out */
	const char *source;		/* trace file name; NULL: left out */
	const char *cmdline;		/* NULL or "": left out */
	const char *version;		/* sptrace that recorded; NULL: left out */
};

/* What the export saw, for the caller's warnings. */
struct export_stats {
	uint64_t events;
	uint64_t errors[SP_ERR__MAX];	/* replay's unbalanced-event counts */
	uint64_t open_at_end;		/* frames never closed (not exported) */
};

enum export_format { EXPORT_CHROME = 0, EXPORT_FOLDED, EXPORT_CSV };

/*
 * Chrome trace event format, object form: {"traceEvents":[...],
 * "displayTimeUnit":"ns","otherData":{...}}. One track per thread (pid,
 * tid); SP_EV_THREAD_NAME gives "M" thread_name events; each closed
 * interval from replay (replay.h) is an "X" event, ts/dur in microseconds
 * with ns precision ("12.345"), cat "query", "blocked" or "incr_load",
 * args.self_ns; cache hits are "i" events (cat "cache_hit", s "t"), marks
 * "i" events (cat "mark") with args.key. Allocations are not exported.
 * Strings are valid JSON and UTF-8 whatever bytes the names hold.
 */
int export__chrome(FILE *out, const struct export_source *src,
		   const struct export_info *info, struct export_stats *stats);
/*
 * Folded stacks (flamegraph.pl, inferno, speedscope): one line
 * "outer;inner;leaf SELF_NS" per distinct stack, weighted by the self time
 * of the innermost frame, equal stacks summed (saturating), lines sorted by
 * bytes, stacks of all threads merged, zero weights left out. A blocked or
 * incremental-load frame is "name [blocked]" / "name [incr]". In names ';'
 * becomes ':', control bytes '?', invalid UTF-8 bytes U+FFFD, an empty
 * name "[empty]" and an unknown one "[unknown]".
 */
int export__folded(FILE *out, const struct export_source *src,
		   struct export_stats *stats);
/*
 * Raw events: header "ts_ns,pid,tid,kind,name,arg1,arg2", kind as a word
 * (export__kind_name()), name empty when the id has no string, RFC 4180
 * quoting, invalid UTF-8 bytes as U+FFFD. No replay.
 */
int export__csv(FILE *out, const struct export_source *src,
		struct export_stats *stats);
/* One of the three by format; info may be NULL. */
int export__write(FILE *out, enum export_format fmt,
		  const struct export_source *src,
		  const struct export_info *info, struct export_stats *stats);

/* "query_begin", "query_end", "cache_hit", ..., NULL for an unknown kind. */
const char *export__kind_name(uint32_t kind);

#endif /* SPTRACE_EXPORT_H */
