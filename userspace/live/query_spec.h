/* SPDX-License-Identifier: MIT */
/*
 * --query specs: pair any provider's USDT probes into query rows.
 *   PROVIDER:BEGIN,PROVIDER:END,name=argN|LITERAL[,kind=query|blocked|incr]
 *   PROVIDER:PROBE,name=argN|LITERAL,kind=cache
 * Parsing only; the query provider attaches them.
 */
#ifndef SPTRACE_QUERY_SPEC_H
#define SPTRACE_QUERY_SPEC_H

#include <stdbool.h>

/* USDT probes have at most 12 arguments (libbpf's limit too). */
#define QUERY_SPEC_MAX_ARGS 12

struct query_spec {
	char *text;		/* as given, for messages */
	char *provider[2];	/* [0] BEGIN (or the cache probe), [1] END */
	char *probe[2];
	int nprobes;		/* 1: kind=cache, 2: an interval */
	int arg;		/* the name argument, or -1 for `literal` */
	char *literal;		/* name=LITERAL: a fixed name */
	unsigned int kind;	/* enum sp_frame_kind; unused with cache */
	bool cache;
};

/* Parses one spec; `where` ("--query", "FILE:LINE") prefixes the one error
 * line it prints. 0 or -EINVAL / -ENOMEM. */
int query_spec__parse(const char *text, const char *where,
		      struct query_spec *out);
/* Appends the specs of FILE (one a line, '#' comments, blank lines) to
 * *v / *n. 0 or -errno (reported). */
int query_spec__read_file(const char *path, struct query_spec **v, int *n);
void query_spec__free(struct query_spec *q);

#endif /* SPTRACE_QUERY_SPEC_H */
