/* SPDX-License-Identifier: MIT */
/*
 * Normalization of --query name strings (normalize=sql, normalize=digits),
 * compiled by bpf/query.bpf.c, which hashes the normalized byte stream into
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
 */
#ifndef SPTRACE_SPEC_NORM_H
#define SPTRACE_SPEC_NORM_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

enum sp_norm_mode {
	SP_NORM_NONE = 0,
	SP_NORM_SQL = 1,
	SP_NORM_DIGITS = 2,
};

/* The byte standing for a placeholder in the normalized stream. */
#define SP_NORM_PH 1

enum { SP_NS_NORMAL, SP_NS_IDENT, SP_NS_NUM, SP_NS_QUOTE, SP_NS_QUOTE_END,
       SP_NS_DQUOTE };
/* What the last significant token was: the sign rule and list folding. */
enum { SP_NL_NONE, SP_NL_LIT, SP_NL_COMMA, SP_NL_OTHER, SP_NL_WORD };

struct sp_norm {
	__u8 mode;
	__u8 last;
	__u8 space;	/* whitespace seen since the last token */
	__u8 started;	/* something emitted: a space may follow */
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
