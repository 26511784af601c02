// SPDX-License-Identifier: MIT
/*
 * The streaming JSON writer (json_writer.h): commas, colons, escaping and
 * exact u64 numbers in one place for every JSON output.
 */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include "json_writer.h"
#include "text.h"

void jsonw__init(struct json_writer *w, FILE *out)
{
	*w = (struct json_writer){ .out = out };
}

/* Before any value or name: the comma that separates it from the one
 * before, then a requested line break. */
static void sep(struct json_writer *w)
{
	if (w->after_name) {
		w->after_name = false;
		return;
	}
	if (w->depth && w->nonempty[w->depth])
		fputc(',', w->out);
	if (w->depth)
		w->nonempty[w->depth] = true;
	if (w->nl) {
		fputc('\n', w->out);
		w->nl = false;
	}
}

static void open_container(struct json_writer *w, char c)
{
	sep(w);
	fputc(c, w->out);
	if (w->depth == JSONW_MAX_DEPTH) {
		w->overflow = true;
		return;
	}
	w->nonempty[++w->depth] = false;
}

static void close_container(struct json_writer *w, char c)
{
	if (w->nl) {
		fputc('\n', w->out);
		w->nl = false;
	}
	fputc(c, w->out);
	if (w->depth > w->base)
		w->depth--;
	else
		w->overflow = true;
}

void jsonw__start_object(struct json_writer *w)
{
	open_container(w, '{');
}

void jsonw__end_object(struct json_writer *w)
{
	close_container(w, '}');
}

void jsonw__start_array(struct json_writer *w)
{
	open_container(w, '[');
}

void jsonw__end_array(struct json_writer *w)
{
	close_container(w, ']');
}

void jsonw__name(struct json_writer *w, const char *name)
{
	sep(w);
	text__json_string(w->out, name);
	fputc(':', w->out);
	w->after_name = true;
}

void jsonw__string(struct json_writer *w, const char *str)
{
	sep(w);
	text__json_string(w->out, str);
}

void jsonw__u64(struct json_writer *w, uint64_t v)
{
	sep(w);
	fprintf(w->out, "%" PRIu64, v);
}

void jsonw__i64(struct json_writer *w, int64_t v)
{
	sep(w);
	fprintf(w->out, "%" PRId64, v);
}

void jsonw__null(struct json_writer *w)
{
	sep(w);
	fputs("null", w->out);
}

void jsonw__bool(struct json_writer *w, bool v)
{
	sep(w);
	fputs(v ? "true" : "false", w->out);
}

void jsonw__number(struct json_writer *w, const char *num)
{
	sep(w);
	fputs(num, w->out);
}

void jsonw__break(struct json_writer *w)
{
	w->nl = true;
}

void jsonw__u64_field(struct json_writer *w, const char *name, uint64_t v)
{
	jsonw__name(w, name);
	jsonw__u64(w, v);
}

void jsonw__string_field(struct json_writer *w, const char *name,
			const char *str)
{
	jsonw__name(w, name);
	jsonw__string(w, str);
}

void jsonw__init_members(struct json_writer *w, FILE *out)
{
	*w = (struct json_writer){ .out = out, .depth = 1, .base = 1 };
}

FILE *jsonw__raw_members(struct json_writer *w)
{
	sep(w);
	return w->out;
}

int jsonw__finish(struct json_writer *w)
{
	int err = text__flush(w->out);

	if (err)
		return err;
	return w->depth != w->base || w->overflow || w->after_name ?
	       -EINVAL : 0;
}

void jsonw__double_field(struct json_writer *w, const char *name, double x)
{
	char num[40];

	if (name)
		jsonw__name(w, name);
	if (!isfinite(x)) {
		jsonw__null(w);
		return;
	}
	snprintf(num, sizeof(num), "%.10g", x);
	jsonw__number(w, num);
}
