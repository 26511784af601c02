/* SPDX-License-Identifier: MIT */
/*
 * normalize=pg: --query rows named and merged as pg_stat_statements names
 * and merges PostgreSQL statements, with PostgreSQL's own parser
 * (libpg_query). BPF keys rows by a fold that never merges what PostgreSQL
 * keeps apart (include/sptrace/spec_norm.h); this names each row's raw
 * string, so rows PostgreSQL merges print as one name and the summary
 * merges them.
 */
#ifndef SPTRACE_PG_TEXT_H
#define SPTRACE_PG_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Between the statements of a multi-statement string in a row's name:
 * the row counts once in each (query_maps.c splits it). */
#define PG_TEXT_SEP '\x1e'

struct pg_text;

/* Was sptrace built with libpg_query? */
bool pg_text__available(void);

struct pg_text *pg_text__new(void);
void pg_text__free(struct pg_text *t);

/* Learns the statements of `raw`, before naming: of statements that
 * pg_stat_statements counts as one, the name printed is the smallest of
 * their normalized texts learnt. */
int pg_text__learn(struct pg_text *t, const char *raw);

/*
 * Writes the name of the row whose raw string is `raw` into buf: its
 * statements separated by PG_TEXT_SEP, each as pg_stat_statements shows
 * it (constants as $1, $2..., whitespace and the ';' around it trimmed;
 * utility statements as written). A `truncated` string (longer than the
 * kernel's copy) is not parsed: it prints as "<truncated #HASH> PREFIX".
 * Returns 0 or -ENOTSUP (built without libpg_query), -ENOMEM.
 */
int pg_text__name(struct pg_text *t, const char *raw, bool truncated,
		  uint64_t hash, char *buf, size_t len);

#endif /* SPTRACE_PG_TEXT_H */
