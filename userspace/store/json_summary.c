// SPDX-License-Identifier: MIT
/*
 * The JSON summary (json_out.c, docs/formats.md) read back into a summary,
 * for `sptrace diff`. A small strict recursive-descent parser (RFC 8259)
 * driven by the summary's schema, with no JSON library:
 *
 * - strict: UTF-8 only, no raw controls in strings, full escapes with
 *   \uXXXX surrogate pairs decoded to UTF-8 (lone surrogates and \u0000 in a
 *   name refused), no leading zeros, no trailing commas or data, no
 *   duplicate known keys;
 * - bounded: file size, decoded string length and nesting depth have limits
 *   (json_summary.h), recursion only follows nesting, every loop consumes
 *   input, and numbers are uint64 with an overflow check, so hostile input
 *   ends in an error, never a crash, a hang or an unbounded allocation;
 * - versioned: "version" is "MAJOR.MINOR"; another major is refused, a
 *   newer minor read (docs/formats.md#versioning); none means 1.0;
 * - forward compatible: unknown keys are skipped (docs/formats.md tells
 *   consumers to ignore fields they do not know), but known keys must have
 *   the type the writer gives them. p50/p90/p99_ns, total_self_ns,
 *   unbalanced and map_full are derived: checked, not used, since
 *   summary__finish() recomputes them from the same figures.
 *
 * Histogram bins are stored by lo_ns: each must be a bucket's lower bound
 * (and hi_ns, if given, its upper one), so bins map back to buckets exactly.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "json_summary.h"
#include "mem_report.h"
#include "text.h"

#define HINT_SYNTAX "not valid JSON"
#define HINT_SCHEMA "not an sptrace -f json summary"

struct bin {
	uint32_t bucket;
	uint64_t count;
};

struct jp {
	const char *buf, *p, *end;
	const char *name;		/* for messages */
	char *err;
	size_t errlen;
	bool failed;
	unsigned int depth;
	/* The last string read, decoded and NUL-terminated. */
	char *str;
	size_t slen, scap;
	bool str_nul;			/* it held \u0000 */
	/* Histogram of the query being read (its name may come later). */
	struct bin *bins;
	size_t nbins, bins_cap;
};

static void jp_vfail(struct jp *jp, const char *hint, const char *fmt,
		     va_list ap)
{
	unsigned long line = 1, col = 1;
	const char *q;
	char what[256];

	if (jp->failed)
		return;
	jp->failed = true;
	for (q = jp->buf; q < jp->p; q++) {
		if (*q == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	vsnprintf(what, sizeof(what), fmt, ap);
	if (jp->errlen)
		snprintf(jp->err, jp->errlen, "%s: line %lu, column %lu: %s (%s)",
			 jp->name, line, col, what, hint);
}

__attribute__((format(printf, 3, 4)))
static void jp_fail_msg(struct jp *jp, const char *hint, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	jp_vfail(jp, hint, fmt, ap);
	va_end(ap);
}

/* Malformed JSON. Returns -EINVAL. At the end of the input, the message
 * says so first: the usual cause is a file cut short. */
__attribute__((format(printf, 2, 3)))
static int jp_syntax(struct jp *jp, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (jp->p >= jp->end)
		jp_fail_msg(jp, HINT_SYNTAX, "unexpected end of file, %s", what);
	else
		jp_fail_msg(jp, HINT_SYNTAX, "%s", what);
	return -EINVAL;
}

/* Valid JSON, but not a summary. Returns -EINVAL. */
__attribute__((format(printf, 2, 3)))
static int jp_schema(struct jp *jp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	jp_vfail(jp, HINT_SCHEMA, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int jp_nomem(struct jp *jp)
{
	if (!jp->failed && jp->errlen)
		snprintf(jp->err, jp->errlen, "%s: out of memory", jp->name);
	jp->failed = true;
	return -ENOMEM;
}

static int jp_peek(const struct jp *jp)
{
	return jp->p < jp->end ? (unsigned char)*jp->p : -1;
}

static void jp_ws(struct jp *jp)
{
	while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' ||
				   *jp->p == '\n' || *jp->p == '\r'))
		jp->p++;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int jp_expect(struct jp *jp, char c)
{
	jp_ws(jp);
	if (jp_peek(jp) != (unsigned char)c)
		return jp_syntax(jp, "expected '%c'", c);
	jp->p++;
	return 0;
}

static int str_put(struct jp *jp, const char *bytes, size_t n)
{
	if (n > JSON_SUMMARY_MAX_STRING - jp->slen)
		return jp_schema(jp, "string longer than %u bytes",
				 JSON_SUMMARY_MAX_STRING);
	if (jp->slen + n + 1 > jp->scap) {
		size_t cap = jp->scap ? jp->scap : 64;
		char *v;

		while (cap < jp->slen + n + 1)
			cap *= 2;
		v = realloc(jp->str, cap);
		if (!v)
			return jp_nomem(jp);
		jp->str = v;
		jp->scap = cap;
	}
	memcpy(jp->str + jp->slen, bytes, n);
	jp->slen += n;
	jp->str[jp->slen] = '\0';
	return 0;
}

static int hex4(struct jp *jp, uint32_t *v)
{
	int i, c;

	*v = 0;
	for (i = 0; i < 4; i++) {
		c = jp_peek(jp);
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'a' && c <= 'f')
			c -= 'a' - 10;
		else if (c >= 'A' && c <= 'F')
			c -= 'A' - 10;
		else
			return jp_syntax(jp, "expected 4 hex digits after \\u");
		*v = *v << 4 | (uint32_t)c;
		jp->p++;
	}
	return 0;
}

/* After the backslash of a \u escape: one code point, pairs joined. */
static int jp_unicode(struct jp *jp)
{
	uint32_t cp, lo;
	char utf8[4];
	size_t n;
	int err;

	jp->p++;	/* 'u' */
	err = hex4(jp, &cp);
	if (err)
		return err;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return jp_syntax(jp, "lone low surrogate \\u%04" PRIx32, cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (jp->end - jp->p < 2 || jp->p[0] != '\\' || jp->p[1] != 'u')
			return jp_syntax(jp, "high surrogate \\u%04" PRIx32
					 " not followed by a low one", cp);
		jp->p += 2;
		err = hex4(jp, &lo);
		if (err)
			return err;
		if (lo < 0xdc00 || lo > 0xdfff)
			return jp_syntax(jp, "high surrogate \\u%04" PRIx32
					 " not followed by a low one", cp);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0) {
		/* Summary strings are C strings: a name cannot hold it. */
		jp->str_nul = true;
		return 0;
	}
	if (cp < 0x80) {
		utf8[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		utf8[0] = (char)(0xc0 | cp >> 6);
		utf8[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		utf8[0] = (char)(0xe0 | cp >> 12);
		utf8[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		utf8[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		utf8[0] = (char)(0xf0 | cp >> 18);
		utf8[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		utf8[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		utf8[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return str_put(jp, utf8, n);
}

/* Bytes of the UTF-8 sequence a lead byte starts; 0 if it starts none. */
static size_t utf8_lead_len(unsigned char c)
{
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

static int jp_string(struct jp *jp)
{
	uint32_t cp;
	size_t n;
	char c;
	int err;

	jp->slen = 0;
	jp->str_nul = false;
	err = str_put(jp, "", 0);	/* str is a valid C string from here */
	if (err)
		return err;
	if (jp_peek(jp) != '"')
		return jp_syntax(jp, "expected a string");
	jp->p++;
	for (;;) {
		if (jp->p >= jp->end)
			return jp_syntax(jp, "unterminated string");
		c = *jp->p;
		if (c == '"') {
			jp->p++;
			return 0;
		}
		if ((unsigned char)c < 0x20)
			return jp_syntax(jp, "raw control character in a string");
		if (c == '\\') {
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
			const char *e;

			jp->p++;
			if (jp->p >= jp->end)
				return jp_syntax(jp, "unterminated string");
			if (*jp->p == 'u') {
				err = jp_unicode(jp);
			} else if (*jp->p && (e = strchr(from, *jp->p))) {
				err = str_put(jp, &to[e - from], 1);
				jp->p++;
			} else {
				err = jp_syntax(jp, "invalid escape in a string");
			}
			if (err)
				return err;
			continue;
		}
		if ((unsigned char)c < 0x80) {
			err = str_put(jp, &c, 1);
			jp->p++;
			if (err)
				return err;
			continue;
		}
		/* text__utf8_next() reads at most the n bytes checked here. */
		n = utf8_lead_len((unsigned char)c);
		if (n && (size_t)(jp->end - jp->p) < n) {
			jp->p = jp->end;
			return jp_syntax(jp, "unterminated string");
		}
		if (!n || text__utf8_next(jp->p, &cp) != (int)n)
			return jp_syntax(jp, "invalid UTF-8 in a string");
		err = str_put(jp, jp->p, n);
		if (err)
			return err;
		jp->p += n;
	}
}

/* Any JSON number, checked against the grammar and skipped. */
static int jp_skip_number(struct jp *jp)
{
	if (jp_peek(jp) == '-')
		jp->p++;
	if (jp_peek(jp) == '0') {
		jp->p++;
	} else if (is_digit(jp_peek(jp))) {
		while (is_digit(jp_peek(jp)))
			jp->p++;
	} else {
		return jp_syntax(jp, "invalid number");
	}
	if (jp_peek(jp) == '.') {
		jp->p++;
		if (!is_digit(jp_peek(jp)))
			return jp_syntax(jp, "invalid number");
		while (is_digit(jp_peek(jp)))
			jp->p++;
	}
	if (jp_peek(jp) == 'e' || jp_peek(jp) == 'E') {
		jp->p++;
		if (jp_peek(jp) == '+' || jp_peek(jp) == '-')
			jp->p++;
		if (!is_digit(jp_peek(jp)))
			return jp_syntax(jp, "invalid number");
		while (is_digit(jp_peek(jp)))
			jp->p++;
	}
	if (is_digit(jp_peek(jp)))
		return jp_syntax(jp, "leading zero in a number");
	return 0;
}

/* A value of a known key that must be a uint64. */
static int jp_u64(struct jp *jp, const char *key, uint64_t *v)
{
	const char *start;
	int c;

	jp_ws(jp);
	start = jp->p;
	c = jp_peek(jp);
	if (!is_digit(c)) {
		if (c == '-' || c == '"' || c == '{' || c == '[' || c == 't' ||
		    c == 'f' || c == 'n')
			return jp_schema(jp, "\"%s\": expected an unsigned integer",
					 key);
		return jp_syntax(jp, "\"%s\": expected a value", key);
	}
	*v = 0;
	while (is_digit(c = jp_peek(jp))) {
		unsigned int d = (unsigned int)(c - '0');

		if (*v > (UINT64_MAX - d) / 10) {
			jp->p = start;
			return jp_schema(jp, "\"%s\": number above 2^64-1", key);
		}
		*v = *v * 10 + d;
		jp->p++;
	}
	if (*start == '0' && jp->p - start > 1) {
		jp->p = start;
		return jp_syntax(jp, "leading zero in a number");
	}
	if (c == '.' || c == 'e' || c == 'E') {
		jp->p = start;
		return jp_schema(jp, "\"%s\": expected an unsigned integer", key);
	}
	return 0;
}

static int jp_enter(struct jp *jp)
{
	if (++jp->depth > JSON_SUMMARY_MAX_DEPTH)
		return jp_schema(jp, "nested deeper than %u levels",
				 JSON_SUMMARY_MAX_DEPTH);
	return 0;
}

/* An object of a known key: '{' consumed, depth counted. */
static int jp_obj_begin(struct jp *jp, const char *key)
{
	jp_ws(jp);
	if (jp_peek(jp) < 0)
		return jp_syntax(jp, "%s: expected an object", key);
	if (jp_peek(jp) != '{')
		return jp_schema(jp, "%s: expected an object", key);
	jp->p++;
	return jp_enter(jp);
}

static int jp_arr_begin(struct jp *jp, const char *key)
{
	jp_ws(jp);
	if (jp_peek(jp) < 0)
		return jp_syntax(jp, "%s: expected an array", key);
	if (jp_peek(jp) != '[')
		return jp_schema(jp, "%s: expected an array", key);
	jp->p++;
	return jp_enter(jp);
}

/*
 * The next member of an object being read: 1 with its key in jp->str and
 * the parser at its value, 0 after the closing '}', or -EINVAL. *first is
 * true before the first member.
 */
static int jp_obj_next(struct jp *jp, bool *first)
{
	int err;

	jp_ws(jp);
	if (!*first) {
		if (jp_peek(jp) == '}')
			goto close;
		if (jp_peek(jp) != ',')
			return jp_syntax(jp, "expected ',' or '}'");
		jp->p++;
		jp_ws(jp);
	} else if (jp_peek(jp) == '}') {
		goto close;
	}
	*first = false;
	if (jp_peek(jp) != '"')
		return jp_syntax(jp, "expected a string key");
	err = jp_string(jp);
	if (!err)
		err = jp_expect(jp, ':');
	if (err)
		return err;
	jp_ws(jp);
	return 1;
close:
	jp->p++;
	jp->depth--;
	return 0;
}

/* The same for arrays: 1 with the parser at the next element. */
static int jp_arr_next(struct jp *jp, bool *first)
{
	jp_ws(jp);
	if (jp_peek(jp) == ']') {
		jp->p++;
		jp->depth--;
		return 0;
	}
	if (!*first) {
		if (jp_peek(jp) != ',')
			return jp_syntax(jp, "expected ',' or ']'");
		jp->p++;
		jp_ws(jp);
		if (jp_peek(jp) == ']')
			return jp_syntax(jp, "trailing comma");
	}
	*first = false;
	return 1;
}

/* Any value, checked and skipped (unknown keys). Recursion is bounded by
 * jp_enter(). */
static int jp_skip(struct jp *jp)
{
	static const char *const lits[] = { "true", "false", "null" };
	bool first = true;
	unsigned int i;
	int c, err;

	jp_ws(jp);
	c = jp_peek(jp);
	switch (c) {
	case '{':
		jp->p++;
		err = jp_enter(jp);
		while (!err && (err = jp_obj_next(jp, &first)) == 1)
			err = jp_skip(jp);
		return err;
	case '[':
		jp->p++;
		err = jp_enter(jp);
		while (!err && (err = jp_arr_next(jp, &first)) == 1)
			err = jp_skip(jp);
		return err;
	case '"':
		return jp_string(jp);
	case 't':
	case 'f':
	case 'n':
		for (i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
			size_t n = strlen(lits[i]);

			if ((size_t)(jp->end - jp->p) >= n &&
			    !memcmp(jp->p, lits[i], n)) {
				jp->p += n;
				return 0;
			}
		}
		return jp_syntax(jp, "invalid literal");
	default:
		if (c == '-' || is_digit(c))
			return jp_skip_number(jp);
		return jp_syntax(jp, "expected a value");
	}
}

static bool key_is(const struct jp *jp, const char *key)
{
	return !jp->str_nul && !strcmp(jp->str, key);
}

/* Index of the current key in keys[], or -1. */
static int key_index(const struct jp *jp, const char *const *keys,
		     unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (keys[i] && key_is(jp, keys[i]))
			return (int)i;
	return -1;
}

static int key_once(struct jp *jp, uint32_t *seen, int k, const char *key)
{
	if (*seen & (1u << k))
		return jp_schema(jp, "duplicate key \"%s\"", key);
	*seen |= 1u << k;
	return 0;
}

/*
 * "version": "MAJOR.MINOR" (docs/formats.md#versioning). A newer major
 * changed the meaning of something this reader knows: refuse rather than
 * misread. A newer minor only added fields, which are skipped.
 */
static int jp_version(struct jp *jp)
{
	unsigned long major, minor;
	char *end, *dot;
	int err;

	jp_ws(jp);
	if (jp_peek(jp) < 0)
		return jp_syntax(jp, "\"version\": expected a string");
	if (jp_peek(jp) != '"')
		return jp_schema(jp, "\"version\": expected a string");
	err = jp_string(jp);
	if (err)
		return err;
	dot = strchr(jp->str, '.');
	if (jp->str_nul || !dot || dot == jp->str || dot - jp->str > 9 ||
	    strspn(jp->str, "0123456789") != (size_t)(dot - jp->str) ||
	    !dot[1] || strlen(dot + 1) > 9 ||
	    strspn(dot + 1, "0123456789") != strlen(dot + 1))
		return jp_schema(jp, "\"version\": expected \"MAJOR.MINOR\"");
	major = strtoul(jp->str, &end, 10);
	minor = strtoul(dot + 1, &end, 10);
	if (major != JSON_SUMMARY_VERSION_MAJOR) {
		jp_fail_msg(jp, major > JSON_SUMMARY_VERSION_MAJOR ?
				"written by a newer sptrace: upgrade sptrace to read it" :
				HINT_SCHEMA,
			    "format version %lu.%lu, this sptrace reads %u.x",
			    major, minor, JSON_SUMMARY_VERSION_MAJOR);
		return -EINVAL;
	}
	return 0;
}

static int jp_hist_bin(struct jp *jp)
{
	enum { H_LO, H_HI, H_COUNT, H__N };
	static const char *const keys[H__N] = { "lo_ns", "hi_ns", "count" };
	uint64_t v[H__N] = { 0 };
	uint32_t seen = 0, b;
	bool first = true;
	int k, err;

	err = jp_obj_begin(jp, "hist[]");
	while (!err && (err = jp_obj_next(jp, &first)) == 1) {
		k = key_index(jp, keys, H__N);
		if (k < 0) {
			err = jp_skip(jp);
			continue;
		}
		err = key_once(jp, &seen, k, keys[k]);
		if (!err)
			err = jp_u64(jp, keys[k], &v[k]);
	}
	if (err)
		return err;
	if (!(seen & (1u << H_LO)) || !(seen & (1u << H_COUNT)))
		return jp_schema(jp, "histogram bin without \"%s\"",
				 seen & (1u << H_LO) ? "count" : "lo_ns");
	b = sp_hist_bucket(v[H_LO]);
	if (sp_hist_bucket_lo(b) != v[H_LO])
		return jp_schema(jp, "lo_ns %" PRIu64 " is not a histogram bucket bound",
				 v[H_LO]);
	if ((seen & (1u << H_HI)) && sp_hist_bucket_hi(b) != v[H_HI])
		return jp_schema(jp, "hi_ns %" PRIu64 " does not match lo_ns %" PRIu64,
				 v[H_HI], v[H_LO]);
	if (jp->nbins == jp->bins_cap) {
		size_t cap = jp->bins_cap ? jp->bins_cap * 2 : 32;
		struct bin *nb = realloc(jp->bins, cap * sizeof(*nb));

		if (!nb)
			return jp_nomem(jp);
		jp->bins = nb;
		jp->bins_cap = cap;
	}
	jp->bins[jp->nbins].bucket = b;
	jp->bins[jp->nbins].count = v[H_COUNT];
	jp->nbins++;
	return 0;
}

static int jp_hist(struct jp *jp)
{
	bool first = true;
	int err;

	err = jp_arr_begin(jp, "\"hist\"");
	while (!err && (err = jp_arr_next(jp, &first)) == 1)
		err = jp_hist_bin(jp);
	return err;
}

enum qkey {
	Q_NAME, Q_COUNT, Q_SELF, Q_TOTAL, Q_MIN, Q_MAX, Q_P50, Q_P90, Q_P99,
	Q_CACHE, Q_INCR_LOADS, Q_INCR_NS, Q_BLOCKED_COUNT, Q_BLOCKED_NS,
	Q_HIST, Q__N,
};

static const char *const query_keys[Q__N] = {
	[Q_NAME] = "name", [Q_COUNT] = "count", [Q_SELF] = "self_ns",
	[Q_TOTAL] = "total_ns", [Q_MIN] = "min_ns", [Q_MAX] = "max_ns",
	[Q_P50] = "p50_ns", [Q_P90] = "p90_ns", [Q_P99] = "p99_ns",
	[Q_CACHE] = "cache_hits", [Q_INCR_LOADS] = "incr_loads",
	[Q_INCR_NS] = "incr_load_ns", [Q_BLOCKED_COUNT] = "blocked_count",
	[Q_BLOCKED_NS] = "blocked_ns", [Q_HIST] = "hist",
};

/* Every field the writer writes, but the derived percentiles. */
#define QUERY_REQUIRED ((1u << Q__N) - 1 - (1u << Q_P50) - (1u << Q_P90) - \
			(1u << Q_P99))

static __u64 *query_field(struct sp_query_stats *st, enum qkey k)
{
	switch (k) {
	case Q_COUNT: return &st->count;
	case Q_SELF: return &st->self_ns;
	case Q_TOTAL: return &st->total_ns;
	case Q_MIN: return &st->min_ns;
	case Q_MAX: return &st->max_ns;
	case Q_CACHE: return &st->cache_hits;
	case Q_INCR_LOADS: return &st->incr_loads;
	case Q_INCR_NS: return &st->incr_load_ns;
	case Q_BLOCKED_COUNT: return &st->blocked_count;
	case Q_BLOCKED_NS: return &st->blocked_ns;
	default: return NULL;
	}
}

static int jp_query(struct jp *jp, struct summary *s)
{
	struct sp_query_stats st = { 0 };
	uint32_t seen = 0;
	bool first = true;
	char *name = NULL;
	__u64 *field;
	uint64_t v;
	size_t i;
	int k, err;

	jp->nbins = 0;
	err = jp_obj_begin(jp, "queries[]");
	while (!err && (err = jp_obj_next(jp, &first)) == 1) {
		k = key_index(jp, query_keys, Q__N);
		if (k < 0) {
			err = jp_skip(jp);
			continue;
		}
		err = key_once(jp, &seen, k, query_keys[k]);
		if (err)
			break;
		if (k == Q_NAME) {
			jp_ws(jp);
			if (jp_peek(jp) < 0) {
				err = jp_syntax(jp, "\"name\": expected a string");
				break;
			}
			if (jp_peek(jp) != '"') {
				err = jp_schema(jp, "\"name\": expected a string");
				break;
			}
			err = jp_string(jp);
			if (!err && jp->str_nul)
				err = jp_schema(jp, "\"name\": holds \\u0000");
			if (!err && !(name = strdup(jp->str)))
				err = jp_nomem(jp);
		} else if (k == Q_HIST) {
			err = jp_hist(jp);
		} else {
			err = jp_u64(jp, query_keys[k], &v);
			field = query_field(&st, (enum qkey)k);
			if (!err && field)
				*field = v;
		}
	}
	if (!err && (seen & QUERY_REQUIRED) != QUERY_REQUIRED) {
		for (k = 0; k < Q__N; k++)
			if ((QUERY_REQUIRED & (1u << k)) && !(seen & (1u << k)))
				break;
		err = jp_schema(jp, "query without \"%s\"", query_keys[k]);
	}
	if (!err)
		err = summary__add_stats(s, name, &st);
	for (i = 0; !err && i < jp->nbins; i++)
		err = summary__add_hist(s, name, jp->bins[i].bucket,
					jp->bins[i].count);
	if (err == -ENOMEM)
		jp_nomem(jp);
	free(name);
	return err;
}

static int jp_queries(struct jp *jp, struct summary *s)
{
	bool first = true;
	int err;

	err = jp_arr_begin(jp, "\"queries\"");
	while (!err && (err = jp_arr_next(jp, &first)) == 1)
		err = jp_query(jp, s);
	return err;
}

/* "errors": the counters by summary__error_name(), "lost", and the two
 * derived sums. */
static int jp_errors(struct jp *jp, struct summary *s)
{
	enum { E_LOST = SP_ERR__MAX, E_UNBALANCED, E_MAP_FULL, E__N };
	const char *keys[E__N];
	uint32_t seen = 0;
	bool first = true;
	unsigned int i;
	uint64_t v;
	int k, err;

	_Static_assert(E__N <= 32, "seen is a 32-bit mask");
	for (i = 0; i < SP_ERR__MAX; i++)
		keys[i] = summary__error_name(i);
	keys[E_LOST] = "lost";
	keys[E_UNBALANCED] = "unbalanced";
	keys[E_MAP_FULL] = "map_full";
	err = jp_obj_begin(jp, "\"errors\"");
	while (!err && (err = jp_obj_next(jp, &first)) == 1) {
		k = key_index(jp, keys, E__N);
		if (k < 0) {
			err = jp_skip(jp);
			continue;
		}
		err = key_once(jp, &seen, k, keys[k]);
		if (!err)
			err = jp_u64(jp, keys[k], &v);
		if (err)
			break;
		if (k < SP_ERR__MAX)
			s->errors[k] = v;
		else if (k == E_LOST)
			s->lost = v;
	}
	return err;
}

static int jp_summary(struct jp *jp, struct summary *s)
{
	enum { T_DURATION, T_TOTAL_SELF, T_QUERIES, T_ERRORS, T_VERSION, T__N };
	static const char *const keys[T__N] = {
		"duration_ns", "total_self_ns", "queries", "errors", "version",
	};
	uint32_t seen = 0;
	bool first = true;
	uint64_t v;
	int k, err;

	jp_ws(jp);
	if (jp_peek(jp) < 0)
		return jp_schema(jp, "empty file");
	err = jp_obj_begin(jp, "top level");
	while (!err && (err = jp_obj_next(jp, &first)) == 1) {
		k = key_index(jp, keys, T__N);
		if (k < 0) {
			err = jp_skip(jp);
			continue;
		}
		err = key_once(jp, &seen, k, keys[k]);
		if (err)
			break;
		switch (k) {
		case T_DURATION:
			err = jp_u64(jp, keys[k], &s->duration_ns);
			break;
		case T_TOTAL_SELF:
			err = jp_u64(jp, keys[k], &v);
			break;
		case T_QUERIES:
			err = jp_queries(jp, s);
			break;
		case T_VERSION:
			err = jp_version(jp);
			break;
		default:
			err = jp_errors(jp, s);
			break;
		}
	}
	if (err)
		return err;
	if (!(seen & (1u << T_DURATION)) || !(seen & (1u << T_QUERIES)))
		return jp_schema(jp, "no \"%s\"",
				 seen & (1u << T_QUERIES) ? "duration_ns" :
							    "queries");
	jp_ws(jp);
	if (jp->p < jp->end)
		return jp_syntax(jp, "data after the top-level object");
	return 0;
}

/* Adds src to dst, as summary sources add up. 0 or -ENOMEM. */
static int summary_merge(struct summary *dst, struct summary *src)
{
	unsigned int i, j;
	int err;

	if (!dst->nrows) {
		/* The common case: move rather than copy. */
		src->duration_ns += dst->duration_ns;
		src->lost += dst->lost;
		for (i = 0; i < SP_ERR__MAX; i++)
			src->errors[i] += dst->errors[i];
		summary__free(dst);
		*dst = *src;
		dst->finished = false;
		summary__init(src);
		return 0;
	}
	for (i = 0; i < src->nrows; i++) {
		const struct sp_query_row *r = &src->rows[i];

		err = summary__add_stats(dst, r->name, &r->st);
		for (j = 0; !err && j < r->nbins; j++)
			err = summary__add_hist(dst, r->name, r->bins[j].bucket,
						r->bins[j].count);
		if (err)
			return err;
	}
	dst->duration_ns += src->duration_ns;
	dst->lost += src->lost;
	for (i = 0; i < SP_ERR__MAX; i++)
		dst->errors[i] += src->errors[i];
	return 0;
}

int json_summary__parse(const char *buf, size_t len, const char *name,
			struct summary *s, char *err, size_t errlen)
{
	struct summary tmp;
	struct jp jp = {
		.buf = buf, .p = buf, .end = buf + len, .name = name,
		.err = err, .errlen = errlen,
	};
	int ret;

	summary__init(&tmp);
	if (errlen)
		err[0] = '\0';
	if (len > JSON_SUMMARY_MAX_FILE) {
		if (errlen)
			snprintf(err, errlen, "%s: larger than %u MiB (%s)",
				 name, JSON_SUMMARY_MAX_FILE >> 20, HINT_SCHEMA);
		return -EFBIG;
	}
	ret = jp_summary(&jp, &tmp);
	if (!ret) {
		ret = summary_merge(s, &tmp);
		if (ret)
			jp_nomem(&jp);
	}
	summary__free(&tmp);
	free(jp.str);
	free(jp.bins);
	return ret;
}

/* The whole file, up to the limit. */
static int read_all(const char *path, char **out, size_t *outlen, char *err,
		    size_t errlen)
{
	size_t cap = 1 << 16, len = 0;
	struct stat st;
	char *buf = NULL, *nb;
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		goto cleanup;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		snprintf(err, errlen, "%s: is a directory (expected a JSON summary)",
			 path);
		goto cleanup;
	}
	if (S_ISREG(st.st_mode) && st.st_size >= 0 &&
	    (uint64_t)st.st_size < JSON_SUMMARY_MAX_FILE)
		cap = (size_t)st.st_size + 1;
	for (;;) {
		if (len == cap || !buf) {
			if (buf)
				cap *= 2;
			if (cap > (size_t)JSON_SUMMARY_MAX_FILE + 1)
				cap = (size_t)JSON_SUMMARY_MAX_FILE + 1;
			nb = realloc(buf, cap);
			if (!nb) {
				ret = -ENOMEM;
				snprintf(err, errlen, "%s: out of memory", path);
				goto cleanup;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: read failed: %s", path,
				 strerror(-ret));
			goto cleanup;
		}
		if (!n)
			break;
		len += (size_t)n;
		if (len > JSON_SUMMARY_MAX_FILE) {
			ret = -EFBIG;
			snprintf(err, errlen, "%s: larger than %u MiB (%s)", path,
				 JSON_SUMMARY_MAX_FILE >> 20, HINT_SCHEMA);
			goto cleanup;
		}
	}
	*out = buf;
	*outlen = len;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return ret;
}

int json_summary__read(const char *path, struct summary *s, char *err,
		       size_t errlen)
{
	char *buf = NULL, dummy[1];
	size_t len = 0;
	int ret;

	if (!errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	ret = read_all(path, &buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = json_summary__parse(buf, len, path, s, err, errlen);
	free(buf);
	return ret;
}

/* ---- the memory timeline ------------------------------------------------ */

/* One point of "timeline": t_ns required, the byte counts optional (0). */
static int jp_point(struct jp *jp, struct mem_point *p)
{
	enum { P_T, P_RSS, P_ANON, P_FILE, P_HEAP, P_TYPED, P__N };
	static const char *const keys[P__N] = {
		"t_ns", "rss_bytes", "rss_anon_bytes", "rss_file_bytes",
		"heap_live_bytes", "typed_live_bytes",
	};
	uint64_t *const fields[P__N] = {
		&p->t_ns, &p->rss_bytes, &p->rss_anon_bytes, &p->rss_file_bytes,
		&p->heap_live_bytes, &p->typed_live_bytes,
	};
	uint32_t seen = 0;
	bool first = true;
	int k, err;

	memset(p, 0, sizeof(*p));
	err = jp_obj_begin(jp, "timeline[]");
	while (!err && (err = jp_obj_next(jp, &first)) == 1) {
		k = key_index(jp, keys, P__N);
		if (k < 0) {
			err = jp_skip(jp);
			continue;
		}
		err = key_once(jp, &seen, k, keys[k]);
		if (!err)
			err = jp_u64(jp, keys[k], fields[k]);
	}
	if (!err && !(seen & (1u << P_T)))
		err = jp_schema(jp, "timeline point without \"t_ns\"");
	return err;
}

static int jp_points(struct jp *jp, struct mem_timeline *tl)
{
	struct mem_point p, *v;
	bool first = true;
	int err;

	err = jp_arr_begin(jp, "\"timeline\"");
	while (!err && (err = jp_arr_next(jp, &first)) == 1) {
		err = jp_point(jp, &p);
		if (err)
			break;
		/* The writer keeps at most MEM_TIMELINE_MAX, in time order. */
		if (tl->n == MEM_TIMELINE_MAX)
			return jp_schema(jp, "more than %u timeline points",
					 MEM_TIMELINE_MAX);
		if (tl->n && p.t_ns < tl->v[tl->n - 1].t_ns)
			return jp_schema(jp, "timeline points not in time order");
		v = realloc(tl->v, (tl->n + 1) * sizeof(*v));
		if (!v)
			return jp_nomem(jp);
		tl->v = v;
		tl->v[tl->n++] = p;
	}
	return err;
}

/* "command": the traced command line, a string (absent from files written
 * before it was kept: then NULL, unknown). */
static int jp_command(struct jp *jp, char **command)
{
	int err;

	if (jp_peek(jp) != '"')
		return jp_schema(jp, "\"command\": expected a string");
	err = jp_string(jp);
	if (!err && jp->str_nul)
		err = jp_schema(jp, "\"command\": holds \\u0000");
	if (err)
		return err;
	*command = strndup(jp->str, jp->slen);
	return *command ? 0 : jp_nomem(jp);
}

static int jp_timeline_doc(struct jp *jp, struct mem_timeline *tl)
{
	enum { T_POINTS, T_STEP, T_VERSION, T_COMMAND, T__N };
	static const char *const keys[T__N] = {
		"timeline", "timeline_step_ns", "version", "command",
	};
	uint32_t seen = 0;
	bool first = true;
	int k, err;

	jp_ws(jp);
	if (jp_peek(jp) < 0)
		return jp_schema(jp, "empty file");
	err = jp_obj_begin(jp, "top level");
	while (!err && (err = jp_obj_next(jp, &first)) == 1) {
		k = key_index(jp, keys, T__N);
		if (k < 0) {
			err = jp_skip(jp);
			continue;
		}
		err = key_once(jp, &seen, k, keys[k]);
		if (err)
			break;
		if (k == T_POINTS)
			err = jp_points(jp, tl);
		else if (k == T_VERSION)
			err = jp_version(jp);
		else if (k == T_COMMAND)
			err = jp_command(jp, &tl->command);
		else
			err = jp_u64(jp, keys[k], &tl->interval_ns);
	}
	if (err)
		return err;
	jp_ws(jp);
	if (jp->p < jp->end)
		return jp_syntax(jp, "data after the top-level object");
	return 0;
}

int json_summary__parse_timeline(const char *buf, size_t len,
				 const char *name, struct mem_timeline *tl,
				 char *err, size_t errlen)
{
	struct mem_timeline tmp = { .step = 1 };
	struct jp jp = {
		.buf = buf, .p = buf, .end = buf + len, .name = name,
		.err = err, .errlen = errlen,
	};
	int ret;

	if (errlen)
		err[0] = '\0';
	if (len > JSON_SUMMARY_MAX_FILE) {
		if (errlen)
			snprintf(err, errlen, "%s: larger than %u MiB (%s)",
				 name, JSON_SUMMARY_MAX_FILE >> 20, HINT_SCHEMA);
		return -EFBIG;
	}
	ret = jp_timeline_doc(&jp, &tmp);
	free(jp.str);
	free(jp.bins);
	if (ret) {
		free(tmp.v);
		free(tmp.command);
		return ret;
	}
	free(tl->v);
	free(tl->command);
	*tl = tmp;
	return 0;
}

int json_summary__read_timeline(const char *path, struct mem_timeline *tl,
				char *err, size_t errlen)
{
	char *buf = NULL, dummy[1];
	size_t len = 0;
	int ret;

	if (!errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	ret = read_all(path, &buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = json_summary__parse_timeline(buf, len, path, tl, err, errlen);
	free(buf);
	return ret;
}
