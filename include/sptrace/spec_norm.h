/* SPDX-License-Identifier: MIT */
/*
 * Normalization of --query name strings (normalize=sql, normalize=digits),
 * compiled by bpf/query_spec.bpf.c, which hashes the normalized byte stream into
 * the row's name, and by userspace, which prints the row's name from the one
 * raw string kept per row: both walk the same state machine, so every raw
 * string that BPF counted in a row prints as that row's name.
 *
 * Why in BPF: normalizing while hashing is one pass over bytes BPF reads
 * anyway, and it keeps the kernel maps at one row per normalized statement;
 * keying by the raw text would need a row per literal value (a pgbench
 * select-only run makes hundreds of thousands) and a userspace drain racing
 * the counters.
 *
 * sql: like pg_stat_statements: numbers (with a sign where it cannot be an
 * operator), quoted strings ('' escapes included) become placeholders; a
 * list of literals separated by commas becomes one placeholder; runs of
 * whitespace become one space, leading and trailing ones go; identifiers
 * (with their digits), "quoted identifiers" and $n parameters stay.
 * digits: each run of decimal digits becomes one placeholder.
 * pg: the key half of normalize=pg, a fold that never merges two strings
 * PostgreSQL keeps apart (userspace names and merges the rows with
 * PostgreSQL's own parser, libpg_query): only in a string whose first word
 * is select/insert/update/delete/with/values/table/merge (pg_stat_statements
 * keys every other statement by its text), and only up to its first ';',
 * each digit of a run shorter than 10 that follows no identifier byte and
 * is not inside "quotes" becomes a placeholder (sp_norm_pg()). Quotes, comments and whitespace are not
 * lexed: a quote or ';' inside them only stops folding early, which keeps
 * apart rows that userspace then merges.
 */
#ifndef SPTRACE_SPEC_NORM_H
#define SPTRACE_SPEC_NORM_H

#include <linux/types.h>
#include <sptrace/query_abi.h>	/* SP_SPEC_NAME_LEN */

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

enum sp_norm_mode {
	SP_NORM_NONE = 0,
	SP_NORM_SQL = 1,
	SP_NORM_DIGITS = 2,
	SP_NORM_PG = 3,
};

/* The byte standing for a placeholder in the normalized stream. */
#define SP_NORM_PH 1

enum { SP_NS_NORMAL, SP_NS_IDENT, SP_NS_NUM, SP_NS_QUOTE, SP_NS_QUOTE_END,
       SP_NS_DQUOTE };
/* normalize=pg's states (in sp_norm.mode). */
enum { SP_NP_START, SP_NP_WORD, SP_NP_FOLD, SP_NP_NUM, SP_NP_DQUOTE,
       SP_NP_RAW };
/* What the last significant token was: the sign rule and list folding. */
enum { SP_NL_NONE, SP_NL_LIT, SP_NL_COMMA, SP_NL_OTHER, SP_NL_WORD };

struct sp_norm {
	__u8 mode;
	__u8 last;
	__u8 space;	/* whitespace seen since the last token */
	__u8 started;	/* something emitted: a space may follow */
	__u8 pad[4];
	__u64 word;	/* pg: the first word, lower case, up to 8 bytes */
};

static __always_inline int sp_norm_digit(__u8 c)
{
	return c >= '0' && c <= '9';
}

static __always_inline int sp_norm_ident(__u8 c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       sp_norm_digit(c) || c == '_' || c == '$' || c >= 0x80;
}

static __always_inline int sp_norm_space(__u8 c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* What goes before a token: a comma held back after a literal (the list
 * did not continue) and one space for a run of whitespace. */
static __always_inline __u32 sp_norm_pre(struct sp_norm *s, int *n)
{
	__u32 out = 0;

	*n = 0;
	if (s->last == SP_NL_COMMA) {
		out = ',';
		*n = 1;
	}
	if (s->space && (s->started || *n)) {
		out |= (__u32)' ' << (8 * *n);
		*n += 1;
	}
	s->space = 0;
	return out;
}

/* Is the first word (lower case, n letters) one of a statement that
 * pg_stat_statements normalizes? */
static __always_inline int sp_norm_pg_dml(__u64 w, __u32 n)
{
#define SP_W6(a, b, c, d, e, f)                                                \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 |  \
	 (__u64)(e) << 32 | (__u64)(f) << 40)
	if (n == 6)
		return w == SP_W6('s', 'e', 'l', 'e', 'c', 't') ||
		       w == SP_W6('i', 'n', 's', 'e', 'r', 't') ||
		       w == SP_W6('u', 'p', 'd', 'a', 't', 'e') ||
		       w == SP_W6('d', 'e', 'l', 'e', 't', 'e') ||
		       w == SP_W6('v', 'a', 'l', 'u', 'e', 's');
	if (n == 5)
		return w == SP_W6('t', 'a', 'b', 'l', 'e', 0) ||
		       w == SP_W6('m', 'e', 'r', 'g', 'e', 0);
	return n == 4 && w == SP_W6('w', 'i', 't', 'h', 0, 0);
#undef SP_W6
}

/* A run of this many digits or more may be a bigint (int4 ends at
 * 2147483647): pg keeps it as written. */
#define SP_NORM_PG_LONG 10

/* Does str[i] start a run of SP_NORM_PG_LONG digits or more? len: the
 * string's length with its NUL; str holds SP_SPEC_NAME_LEN bytes. */
static __always_inline int sp_norm_pg_long(const char *str, __u32 i,
					   long len)
{
	int run = sp_norm_digit((__u8)str[i & (SP_SPEC_NAME_LEN - 1)]);
	__u32 k;

	for (k = 1; k < SP_NORM_PG_LONG && run; k++)
		run = i + k + 1 < len &&
		      sp_norm_digit((__u8)str[(i + k) & (SP_SPEC_NAME_LEN - 1)]);
	return run;
}

/*
 * One byte of normalize=pg. Each digit of a run of fewer than
 * SP_NORM_PG_LONG becomes a placeholder, so only runs of one length
 * merge: int4 constants all (pg_stat_statements' jumble holds a
 * constant's type, not its value). long_run: c starts a run of
 * SP_NORM_PG_LONG digits or more. s->last: the byte before was part of an
 * identifier; s->space: the first word's length.
 */
static __always_inline __u32 sp_norm_pg(struct sp_norm *s, __u8 c,
					int long_run)
{
	__u8 l = c | 0x20;

	if (s->mode == SP_NP_START) {
		if (sp_norm_space(c))
			return c;
		s->mode = SP_NP_WORD;
	}
	if (s->mode == SP_NP_WORD) {
		if (l >= 'a' && l <= 'z') {
			if (s->space < 8)
				s->word |= (__u64)l << (8 * s->space);
			s->space++;
			return c;
		}
		s->mode = sp_norm_pg_dml(s->word, s->space) ? SP_NP_FOLD
							     : SP_NP_RAW;
		s->last = 1;
	}
	switch (s->mode) {
	case SP_NP_RAW:
		return c;
	case SP_NP_DQUOTE:
		if (c == '"')
			s->mode = SP_NP_FOLD;
		return c;
	case SP_NP_NUM:		/* a long run, as written */
		if (sp_norm_digit(c))
			return c;
		s->mode = SP_NP_FOLD;
		break;
	}
	if (sp_norm_digit(c) && !s->last) {
		if (!long_run)
			return SP_NORM_PH;
		s->mode = SP_NP_NUM;
		return c;
	}
	if (c == '"')
		s->mode = SP_NP_DQUOTE;
	else if (c == ';')
		s->mode = SP_NP_RAW;
	s->last = c == '"' || sp_norm_ident(c);
	return c;
}

/*
 * Feeds byte c (next: the byte after it, or 0) to the state machine.
 * Returns the bytes to emit, lowest first, up to 3 (0: none); SP_NORM_PH
 * is a placeholder. With SP_NORM_NONE every byte is emitted as is.
 */
static __always_inline __u32 sp_norm_step(struct sp_norm *s, __u32 mode,
					  __u8 c, __u8 next)
{
	__u32 out;
	int n;

	if (mode == SP_NORM_DIGITS) {
		if (sp_norm_digit(c)) {
			if (s->mode == SP_NS_NUM)
				return 0;
			s->mode = SP_NS_NUM;
			return SP_NORM_PH;
		}
		s->mode = SP_NS_NORMAL;
		return c;
	}
	if (mode != SP_NORM_SQL)
		return c;
	switch (s->mode) {
	case SP_NS_QUOTE:
		if (c == '\'')
			s->mode = SP_NS_QUOTE_END;
		return 0;
	case SP_NS_QUOTE_END:
		if (c == '\'') {	/* '' inside a string */
			s->mode = SP_NS_QUOTE;
			return 0;
		}
		break;
	case SP_NS_NUM:
		if (sp_norm_ident(c) || c == '.')	/* 1.5e3, 0x1f */
			return 0;
		break;
	case SP_NS_IDENT:
		if (sp_norm_ident(c))
			return c;
		break;
	case SP_NS_DQUOTE:
		if (c == '"')
			s->mode = SP_NS_NORMAL;
		return c;
	}
	s->mode = SP_NS_NORMAL;
	if (sp_norm_space(c)) {
		s->space = 1;
		return 0;
	}
	if (c == '\'' || sp_norm_digit(c) ||
	    (c == '-' && sp_norm_digit(next) && s->last != SP_NL_WORD &&
	     s->last != SP_NL_LIT)) {
		s->mode = c == '\'' ? SP_NS_QUOTE : SP_NS_NUM;
		if (s->last == SP_NL_COMMA) {	/* the list goes on */
			s->last = SP_NL_LIT;
			s->space = 0;
			return 0;
		}
		out = sp_norm_pre(s, &n);
		s->last = SP_NL_LIT;
		s->started = 1;
		return out | ((__u32)SP_NORM_PH << (8 * n));
	}
	if (c == ',' && s->last == SP_NL_LIT) {
		s->last = SP_NL_COMMA;
		s->space = 0;
		return 0;
	}
	out = sp_norm_pre(s, &n);
	if (sp_norm_ident(c)) {
		s->mode = SP_NS_IDENT;
		s->last = SP_NL_WORD;
	} else if (c == '"') {
		s->mode = SP_NS_DQUOTE;
		s->last = SP_NL_WORD;
	} else {
		s->last = c == ')' ? SP_NL_WORD : SP_NL_OTHER;
	}
	s->started = 1;
	return out | ((__u32)c << (8 * n));
}

/* At the end of the string: a comma held back is emitted (the list ended
 * the string); trailing whitespace is not. */
static __always_inline __u32 sp_norm_finish(struct sp_norm *s)
{
	return s->last == SP_NL_COMMA ? ',' : 0;
}

#endif /* SPTRACE_SPEC_NORM_H */
