// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for userspace/store/json_summary.c, the limits and schema
 * checks sptrace puts over jansson's parser. Beyond "no crash, no hang, no
 * leak": errors are one line, and whatever the reader accepts must survive a
 * round trip, i.e. json_out__write() of it parses again and writes the very
 * same bytes. One exception, the documented integer limit: rows of one name
 * add up, and a sum above 2^63-1 is written but not read back ("number
 * above 2^63-1"). The same input also goes through the memory-timeline
 * reader.
 *
 * jansson itself comes from Debian, not instrumented: coverage guides the
 * fuzzer through sptrace's code, jansson is exercised as a black box.
 *
 * Build with meson (-Dfuzz=true, CC=clang; tests/meson.build) and run from
 * the top of the tree (seeds in corpus_json/, new finds go to the first
 * directory):
 *   mkdir -p /tmp/jcorpus && build-fuzz/tests/fuzz_json_summary \
 *     -max_len=65536 -timeout=5 -dict=tests/fuzz/json.dict /tmp/jcorpus \
 *     tests/fuzz/corpus_json
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_summary.h"
#include "mem_report.h"
#include "json_out.h"

static char *write_json(struct summary *s, size_t *len)
{
	char *buf = NULL;
	FILE *f;

	summary__finish(s);
	f = open_memstream(&buf, len);
	if (!f)
		abort();
	if (json_out__write(f, s))
		abort();
	fclose(f);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct summary s, again;
	struct mem_timeline tl = { 0 };
	char err[512], *out1, *out2;
	size_t len1, len2;
	unsigned int i;

	if (json_summary__parse_timeline((const char *)data, size, "fuzz", &tl,
					 err, sizeof(err))) {
		if (!err[0] || strchr(err, '\n') || tl.v)
			abort();
	} else {
		/* Bounded and in time order, as promised. */
		if (tl.n > MEM_TIMELINE_MAX)
			abort();
		for (i = 1; i < tl.n; i++)
			if (tl.v[i].t_ns < tl.v[i - 1].t_ns)
				abort();
		free(tl.v);
	}
	summary__init(&s);
	if (json_summary__parse((const char *)data, size, "fuzz", &s, err,
				sizeof(err))) {
		/* Errors are one line. */
		if (!err[0] || strchr(err, '\n'))
			abort();
		summary__free(&s);
		return 0;
	}
	out1 = write_json(&s, &len1);
	summary__init(&again);
	if (json_summary__parse(out1, len1, "fuzz-out", &again, err,
				sizeof(err))) {
		if (strstr(err, ": number above 2^63-1 (")) {
			summary__free(&again);
			goto out;
		}
		fprintf(stderr, "own output rejected: %s\n", err);
		abort();
	}
	out2 = write_json(&again, &len2);
	if (len1 != len2 || memcmp(out1, out2, len1)) {
		fprintf(stderr, "round trip changed the summary\n");
		abort();
	}
	free(out2);
	summary__free(&again);
out:
	free(out1);
	summary__free(&s);
	return 0;
}
