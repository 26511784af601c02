// SPDX-License-Identifier: MIT
/*
 * Unit tests of userspace/out/json_writer.c: commas and colons in the right
 * places, breaks where asked, u64 at both ends, strings escaped, and an
 * unbalanced or too deep document refused at finish.
 */
#include <errno.h>
#include <stdlib.h>
#include "json_writer.h"
#include "check.h"

static FILE *mem_open(char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);

	if (!f) {
		perror("open_memstream");
		exit(2);
	}
	return f;
}

static void test_layout(void)
{
	struct json_writer w;
	char *buf = NULL;
	size_t len;
	FILE *f = mem_open(&buf, &len);

	jsonw__init(&w, f);
	jsonw__start_object(&w);
	jsonw__u64_field(&w, "a", 0);
	jsonw__u64_field(&w, "max", UINT64_MAX);
	jsonw__name(&w, "neg");
	jsonw__i64(&w, INT64_MIN);
	jsonw__break(&w);
	jsonw__name(&w, "list");
	jsonw__start_array(&w);
	jsonw__break(&w);
	jsonw__string(&w, "q\"\n\xff");
	jsonw__break(&w);
	jsonw__null(&w);
	jsonw__bool(&w, true);
	jsonw__start_object(&w);
	jsonw__end_object(&w);
	jsonw__start_array(&w);
	jsonw__end_array(&w);
	jsonw__break(&w);
	jsonw__end_array(&w);
	fputs(jsonw__raw_members(&w) ? "\"raw\":1" : "", f);
	jsonw__end_object(&w);
	CHECK(jsonw__finish(&w) == 0);
	fclose(f);
	CHECK_STR(buf, "{\"a\":0,\"max\":18446744073709551615,"
		  "\"neg\":-9223372036854775808,\n\"list\":[\n"
		  "\"q\\\"\\n\\ufffd\",\nnull,true,{},[]\n],\"raw\":1}");
	free(buf);
}

static void test_members(void)
{
	struct json_writer w;
	char *buf = NULL;
	size_t len;
	FILE *f = mem_open(&buf, &len);

	jsonw__init_members(&w, f);
	jsonw__u64_field(&w, "x", 1);
	jsonw__string_field(&w, "y", "z");
	CHECK(jsonw__finish(&w) == 0);
	fclose(f);
	CHECK_STR(buf, "\"x\":1,\"y\":\"z\"");
	free(buf);
}

static void test_unbalanced(void)
{
	struct json_writer w;
	char *buf = NULL;
	size_t len;
	unsigned int i;
	FILE *f = mem_open(&buf, &len);

	jsonw__init(&w, f);
	jsonw__start_object(&w);
	CHECK(jsonw__finish(&w) == -EINVAL);		/* left open */
	jsonw__init(&w, f);
	jsonw__end_array(&w);
	CHECK(jsonw__finish(&w) == -EINVAL);		/* closed too often */
	jsonw__init(&w, f);
	jsonw__start_object(&w);
	jsonw__name(&w, "dangling");
	jsonw__end_object(&w);
	CHECK(jsonw__finish(&w) == -EINVAL);		/* name without value */
	jsonw__init(&w, f);
	for (i = 0; i <= JSONW_MAX_DEPTH; i++)
		jsonw__start_array(&w);
	for (i = 0; i <= JSONW_MAX_DEPTH; i++)
		jsonw__end_array(&w);
	CHECK(jsonw__finish(&w) == -EINVAL);		/* too deep */
	jsonw__init_members(&w, f);
	jsonw__end_object(&w);
	CHECK(jsonw__finish(&w) == -EINVAL);		/* closed the caller's */
	fclose(f);
	free(buf);
}

int main(void)
{
	RUN(test_layout);
	RUN(test_members);
	RUN(test_unbalanced);
	return check_status();
}
