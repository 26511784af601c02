/* SPDX-License-Identifier: MIT */
/*
 * One streaming JSON writer for every JSON output (bpftool's json_writer
 * is the model): it places the commas and colons, escapes every string
 * through text__json_string(), and writes unsigned 64-bit integers exactly.
 * Why not jansson, which reads the summaries back (store/json_summary.c):
 * its integers are json_int_t (long long) while sptrace's figures are u64,
 * written exactly for other consumers (readers of the summary take 0..2^63-1,
 * json_summary.h); and a streaming writer needs no tree of 100,000 query
 * objects in memory before the first byte goes out.
 *
 * Layout is the caller's: jsonw__break() puts a line break before the next
 * element (after its comma), so files keep one query per line.
 */
#ifndef SPTRACE_JSON_WRITER_H
#define SPTRACE_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSONW_MAX_DEPTH 16

struct json_writer {
	FILE *out;
	unsigned int depth;
	unsigned int base;			/* depth it started at */
	bool nonempty[JSONW_MAX_DEPTH + 1];	/* per open container */
	bool after_name;			/* a value completes "name": */
	bool nl;				/* a break before the next token */
	bool overflow;				/* nested too deep: a bug */
};

void jsonw__init(struct json_writer *w, FILE *out);
void jsonw__start_object(struct json_writer *w);
void jsonw__end_object(struct json_writer *w);
void jsonw__start_array(struct json_writer *w);
void jsonw__end_array(struct json_writer *w);
/* The name of the next member of the open object. */
void jsonw__name(struct json_writer *w, const char *name);
void jsonw__string(struct json_writer *w, const char *str);
void jsonw__u64(struct json_writer *w, uint64_t v);
void jsonw__i64(struct json_writer *w, int64_t v);
void jsonw__null(struct json_writer *w);
void jsonw__bool(struct json_writer *w, bool v);
/* A number already formatted by the caller (e.g. "%.3f"); must be one. */
void jsonw__number(struct json_writer *w, const char *num);
/* A line break before the next element or closing bracket. */
void jsonw__break(struct json_writer *w);

/* Shorthands for one member. */
void jsonw__u64_field(struct json_writer *w, const char *name, uint64_t v);
void jsonw__string_field(struct json_writer *w, const char *name,
			const char *str);
/* A double as "%.10g", null when not finite; `name` NULL: an element. */
void jsonw__double_field(struct json_writer *w, const char *name, double x);

/* Hands the stream to a caller that writes members itself: the pending
 * comma and break are written, and the object counts as non-empty. */
FILE *jsonw__raw_members(struct json_writer *w);
/* A writer of members of an object another writer opened and will close,
 * at the point jsonw__raw_members() handed over (json_out__write_with()'s
 * extra fields). jsonw__finish() then checks it closed what it opened. */
void jsonw__init_members(struct json_writer *w, FILE *out);

/* Flushes: 0, -EIO after a write error, -EINVAL if the brackets did not
 * balance or nested too deep. */
int jsonw__finish(struct json_writer *w);

#endif /* SPTRACE_JSON_WRITER_H */
