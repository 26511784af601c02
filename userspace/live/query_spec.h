/* SPDX-License-Identifier: MIT */
/*
 * --query specs: pair any provider's USDT probes into query rows. The
 * grammar (docs/providers.md):
 *   PROV:BEGIN,PROV:END[@LABEL][|PROV:END2[@LABEL]...],OPTION...
 *   PROV:PROBE,kind=cache,OPTION...
 * OPTION: name=argN | name=PREFIX:argN | name=LITERAL, kind=, if=argN OP V,
 * hit=argN OP V, normalize=pg|sql|digits, max-rows=N, stack=NAME, outcomes,
 * serial, abandon=PROVIDER:PROBE.
 * Parsing only; the query provider attaches them.
 */
#ifndef SPTRACE_QUERY_SPEC_H
#define SPTRACE_QUERY_SPEC_H

#include <stdbool.h>
#include <sptrace/query_abi.h>

/* USDT probes have at most 12 arguments (libbpf's limit too). */
#define QUERY_SPEC_MAX_ARGS 12
/* Probes of a line: its BEGIN (or cache probe) and its ENDs. */
#define QUERY_SPEC_MAX_PROBES (1 + SP_SPEC_MAX_ENDS)
/* Default row cap of a line whose names come from an argument. */
#define QUERY_SPEC_DEFAULT_MAX_ROWS 1000

struct query_spec_cond {
	int arg;
	unsigned int op;	/* enum sp_spec_op; SP_OP_NONE: none */
	long long val;
};

struct query_spec {
	char *text;		/* as given, for messages */
	char *where;		/* "--query" or "FILE:LINE" */
	/* [0] BEGIN (or the cache probe), [1..nprobes-1] its ENDs */
	char *provider[QUERY_SPEC_MAX_PROBES];
	char *probe[QUERY_SPEC_MAX_PROBES];
	char *label[QUERY_SPEC_MAX_PROBES];	/* END@LABEL, or NULL */
	int nprobes;
	unsigned int name_type;	/* enum sp_spec_name_type */
	int arg;		/* the name argument, or -1 */
	char *literal;		/* name=LITERAL, or the PREFIX of name=PREFIX:argN */
	unsigned int kind;	/* enum sp_frame_kind; unused with cache */
	bool cache;
	bool outcomes;
	bool serial;		/* intervals never nest: see SP_SPEC_F_SERIAL */
	int abandon;		/* abandon=: its index in probe[], 0: none */
	unsigned int normalize;	/* enum sp_norm_mode */
	unsigned int max_rows;	/* 0: QUERY_SPEC_DEFAULT_MAX_ROWS */
	char *stack;		/* stack=NAME, or NULL: a track of its own */
	struct query_spec_cond cond;	/* if= */
	struct query_spec_cond hit;	/* hit= */
};

/* Parses one spec; `where` ("--query", "FILE:LINE") prefixes the one error
 * line it prints. 0 or -EINVAL / -ENOMEM. */
int query_spec__parse(const char *text, const char *where,
		      struct query_spec *out);
/* Appends the specs of FILE (one a line, '#' comments, blank lines) to
 * *v / *n. 0 or -errno (reported). */
int query_spec__read_file(const char *path, struct query_spec **v, int *n);
/* "FILE:LINE 'TEXT'" or "--query 'TEXT'": how messages name the line. */
const char *query_spec__where(const struct query_spec *q, char *buf,
			      size_t len);
/* The label of a line's own rows in messages and outcome rows: its fixed
 * name, its integer prefix, or its BEGIN probe. */
const char *query_spec__label(const struct query_spec *q);
/* The highest argument probe p of q reads at its sites (the name and if=
 * at the BEGIN or cache probe, hit= at an END or the cache probe), -1 if
 * none; *what names the option ("name=", "if=", "hit="). */
int query_spec__arg_need(const struct query_spec *q, int p,
			 const char **what);
/* A site of probe p in `path` with nargs arguments (usdt_args__parse()'s
 * count; < 0 is not judged here): -EINVAL, said in one line, when the
 * line reads an argument past them, else 0. Before tracing
 * (spec_precheck.c) and when a file is attached (query_provider.c). */
int query_spec__args_check(const struct query_spec *q, int p,
			   const char *path, int nargs);
/* A spec given twice (--query, --query-file) would count each event
 * twice: the first repeat is reported. 0 or -EINVAL. */
int query_spec__check_unique(const struct query_spec *v, int n);
void query_spec__free(struct query_spec *q);

#endif /* SPTRACE_QUERY_SPEC_H */
