/* SPDX-License-Identifier: MIT */
/*
 * Reading back the JSON summary json_out.c writes (`sptrace -f json`), so a
 * saved run can be a side of `sptrace diff`, `report` or `import`, and the
 * memory timeline of `sptrace mem -f json`. jansson parses (strict: no
 * duplicate keys, no \u0000, no lone surrogates); the reader bounds size,
 * depth and strings and checks the schema: the file may come from anywhere.
 */
#ifndef SPTRACE_JSON_SUMMARY_H
#define SPTRACE_JSON_SUMMARY_H

#include <stddef.h>
#include <stdint.h>
#include "summary.h"

/*
 * The JSON summary's format version, its "version" field: "MAJOR.MINOR".
 * MINOR grows when fields are added, MAJOR when a field's meaning or type
 * changes; a reader refuses another MAJOR and reads any MINOR.
 */
#define JSON_SUMMARY_VERSION_MAJOR 1
/* 1.1: "events", errors.batch_lost, "title" with --per-pid;
 * 1.2: "batch_fallback"; 1.3: errors.async_map_full; 1.4: errors.abandoned;
 * 1.5: "overhead" (live sessions), "sampling", queries' "estimate" and
 * "error" (--max-overhead) */
#define JSON_SUMMARY_VERSION_MINOR 5

/* Limits on what the reader accepts. */
#define JSON_SUMMARY_MAX_FILE (256u << 20)	/* bytes */
#define JSON_SUMMARY_MAX_STRING (64u << 10)	/* bytes of a decoded string or key */
#define JSON_SUMMARY_MAX_DEPTH 32		/* nested arrays/objects */
/* Integers are 0..2^63-1 (jansson's json_int_t): a larger one is refused,
 * located by line and column. Real data stays far below (2^63 ns is 292
 * years); json_out.c leaves out the hi_ns it cannot hold. */
#define JSON_SUMMARY_MAX_INT INT64_MAX

/*
 * Reads the JSON summary at path and adds it to s, as every source does
 * (rows, histogram bins, duration, error counters, lost events). s is not
 * finished. On error s is unchanged (but for -ENOMEM while adding to a
 * non-empty s) and err holds one line naming the file and where: the line
 * and column of bad JSON ("run.json: line 3, column 16: '}' expected near
 * '"x"' (not valid JSON)"), the path of a value that breaks the schema
 * ("run.json: queries[3].hist[0].hi_ns: 70 does not match lo_ns 64 (not an
 * sptrace -f json summary)"). Returns 0 or -errno: -EINVAL for content
 * that is not a JSON summary, -EFBIG above JSON_SUMMARY_MAX_FILE or when
 * its tree would take more than 32 times its size (plus 64 MiB) in memory
 * (a summary sptrace wrote takes 10 to 18 times), -ENOMEM, or the
 * open()/read() error.
 */
int json_summary__read(const char *path, struct summary *s, char *err,
		       size_t errlen);
/* The same on a buffer of len bytes (any bytes; no NUL needed); name is
 * what err calls it. */
int json_summary__parse(const char *buf, size_t len, const char *name,
			struct summary *s, char *err, size_t errlen);

struct mem_timeline;
/*
 * The memory timeline of a JSON file written by `sptrace mem --interval MS
 * -f json` (its "timeline" points and "timeline_step_ns"; every other key
 * is skipped), for the HTML report. Same strictness, limits and errors as
 * json_summary__read(); at most MEM_TIMELINE_MAX points, in time order.
 * On success tl's points are replaced (none if the file has no timeline);
 * on error tl is unchanged.
 */
int json_summary__read_timeline(const char *path, struct mem_timeline *tl,
				char *err, size_t errlen);
int json_summary__parse_timeline(const char *buf, size_t len,
				 const char *name, struct mem_timeline *tl,
				 char *err, size_t errlen);

#endif /* SPTRACE_JSON_SUMMARY_H */
