// SPDX-License-Identifier: MIT
/*
 * The JSON summary (json_out.c, docs/formats.md) read back into a summary,
 * for `sptrace diff`, `report` and `import`, and the memory timeline of
 * `sptrace mem -f json`, for the HTML report. jansson parses; this file
 * bounds what it accepts and reads the schema from the tree.
 *
 * - Strict: jansson takes RFC 8259 JSON only (UTF-8, no lone surrogates, no
 *   leading zeros, no trailing commas or data) and, with
 *   JSON_REJECT_DUPLICATES, no key twice in an object. Without
 *   JSON_ALLOW_NUL it refuses \u0000 in every string: summary strings are
 *   C strings.
 * - Integers: jansson's json_int_t is long long, so an integer above
 *   2^63-1 is refused where it stands (line and column), whichever key it
 *   belongs to. The writer emits none for real data (json_out.c).
 * - Bounded: the file size is checked before parsing, jansson's memory has
 *   a budget (the arena below); jansson stops at JSON_PARSER_MAX_DEPTH
 *   (2048) levels, and check_limits() refuses more than
 *   JSON_SUMMARY_MAX_DEPTH, and strings (keys too) longer than
 *   JSON_SUMMARY_MAX_STRING, before the schema is read.
 * - Located errors: jansson's errors carry a line and column ("run.json:
 *   line 3, column 17: ..."); schema errors carry the path of the value in
 *   the document instead ("run.json: queries[3].hist[0].hi_ns: 70 does not
 *   match lo_ns 64 (...)"), since tree values have no position.
 * - Versioned: "version" is "MAJOR.MINOR"; another major is refused, a
 *   newer minor read (docs/formats.md#versioning); none means 1.0.
 * - Forward compatible: unknown keys are ignored (docs/formats.md tells
 *   consumers to ignore fields they do not know), but known keys must have
 *   the type the writer gives them. p50/p90/p99_ns, total_self_ns,
 *   unbalanced and map_full are derived: checked, not used, since
 *   summary__finish() recomputes them from the same figures.
 *
 * The document is fed to jansson through json_load_callback() rather than
 * json_loadb() for one reason: the callback sees jansson ask for a byte past
 * the end, so a file cut short says "unexpected end of file" whatever token
 * it was cut in (json_loadb() reports a cut escape or UTF-8 sequence as a
 * bad one).
 *
 * Histogram bins are stored by lo_ns: each must be a bucket's lower bound
 * (and hi_ns, if given, its upper one), so bins map back to buckets exactly.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "input.h"
#include "json_summary.h"
#include "mem_report.h"

#define HINT_SYNTAX "not valid JSON"
#define HINT_SCHEMA "not an sptrace -f json summary"

/* A reader of one document: where errors go, and the path of the value
 * being read (keys and array indices from the top), for messages. */
struct jr {
	const char *name;
	char *err;
	size_t errlen;
	unsigned int depth;
	struct {
		const char *key;	/* NULL: an array element */
		size_t index;
	} path[JSON_SUMMARY_MAX_DEPTH + 1];
};

static void jr_push_key(struct jr *r, const char *key)
{
	/* Schema readers go 4 deep at most, check_limits() stops at
	 * JSON_SUMMARY_MAX_DEPTH + 1 containers: never full. */
	r->path[r->depth].key = key;
	r->depth++;
}

static void jr_push_index(struct jr *r, size_t i)
{
	r->path[r->depth].key = NULL;
	r->path[r->depth].index = i;
	r->depth++;
}

static void jr_pop(struct jr *r)
{
	r->depth--;
}

/* A key as the path shows it: bare if it is a word, else in ["..."] with
 * what could break the line replaced and the length cut. */
static int path_key(char *out, size_t n, const char *key)
{
	size_t len = strlen(key), i, cut;
	char shown[36];

	if (len && len <= 32 && strspn(key, "abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len)
		return snprintf(out, n, ".%s", key);
	cut = len <= 32 ? len : 32;
	while (cut < len && cut && ((unsigned char)key[cut] & 0xc0) == 0x80)
		cut--;		/* not inside a UTF-8 sequence */
	for (i = 0; i < cut; i++) {
		unsigned char c = (unsigned char)key[i];

		shown[i] = c < 0x20 || c == 0x7f || c == '"' || c == '\\' ?
			   '?' : (char)c;
	}
	shown[cut] = '\0';
	return snprintf(out, n, "[\"%s%s\"]", shown, cut < len ? "..." : "");
}

static void jr_path(const struct jr *r, char *out, size_t n)
{
	size_t at = 0;
	unsigned int i;
	int k;

	if (!r->depth) {
		snprintf(out, n, "top level");
		return;
	}
	out[0] = '\0';
	for (i = 0; i < r->depth && at < n; i++) {
		if (r->path[i].key)
			k = path_key(out + at, n - at, r->path[i].key);
		else
			k = snprintf(out + at, n - at, "[%zu]", r->path[i].index);
		if (k < 0)
			break;
		at += (size_t)k;
	}
	if (out[0] == '.')
		memmove(out, out + 1, strlen(out));
}

/* Valid JSON, but not a summary: the message names the value's path.
 * Returns -EINVAL. */
__attribute__((format(printf, 3, 4)))
static int jr_fail(struct jr *r, const char *hint, const char *fmt, ...)
{
	char what[256], path[256];
	va_list ap;

	if (!r->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	jr_path(r, path, sizeof(path));
	snprintf(r->err, r->errlen, "%s: %s: %s (%s)", r->name, path, what,
		 hint);
	return -EINVAL;
}

static int jr_nomem(struct jr *r)
{
	if (r->errlen)
		snprintf(r->err, r->errlen, "%s: out of memory", r->name);
	return -ENOMEM;
}

/* ---- jansson's memory ---------------------------------------------------- */

/*
 * While a document is read, jansson allocates from an arena of the reader's
 * own (json_set_alloc_funcs(), set once; outside a reader, and nothing else
 * in sptrace uses jansson, plain malloc). The arena is dropped whole at the
 * end, tree and all, and has a budget:
 * - speed: the tree of a 100,000-query summary is millions of small blocks,
 *   and freeing them one by one took as long as parsing;
 * - bounds: a tree takes many times the bytes of its text (an empty array,
 *   3 bytes with its comma, is over 100 bytes of tree), so the budget keeps
 *   a hostile file from taking the machine's memory. A summary sptrace
 *   wrote takes 10 (8 bins a query) to 18 (all bins 1 ns) times its size;
 *   a file of empty objects, 75.
 */
/* Under ASan the arena poisons what it has not handed out and leaves a
 * redzone after each block, so that an overrun still shows. */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define ARENA_REDZONE 32
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ARENA_REDZONE 0
#endif

#define ARENA_CHUNK (1u << 20)		/* chunks grow from 4 KiB to this */
#define ARENA_PER_BYTE 32		/* budget: 32 times the document */
#define ARENA_BASE (64u << 20)		/* plus 64 MiB */

struct arena_chunk {
	struct arena_chunk *prev;
	size_t cap, used;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *top;
	size_t total, budget;		/* bytes of chunks, and their limit */
	bool over;			/* an allocation went past the budget */
};

static _Thread_local struct arena *jr_arena;

static void *arena_malloc(size_t n)
{
	const size_t align = _Alignof(max_align_t);
	struct arena *a = jr_arena;
	struct arena_chunk *c;
	size_t cap, want;
	void *p;

	if (!a)
		return malloc(n);
	if (n > a->budget)
		goto over;
	want = n;
	n = (n + ARENA_REDZONE + align - 1) & ~(align - 1);
	c = a->top;
	if (!c || c->cap - c->used < n) {
		/* Small documents (most, and the fuzzer's) take little. */
		cap = a->total < 4096 ? 4096 :
		      a->total < ARENA_CHUNK ? a->total : ARENA_CHUNK;
		if (cap < n)
			cap = n;
		if (cap > a->budget - a->total)
			goto over;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->prev = a->top;
		c->cap = cap;
		c->used = 0;
		ASAN_POISON_MEMORY_REGION(c->data, cap);
		a->top = c;
		a->total += cap;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	ASAN_UNPOISON_MEMORY_REGION(p, want);
	return p;
over:
	a->over = true;
	return NULL;
}

static void arena_free(void *p)
{
	if (!jr_arena)
		free(p);
	/* else it goes with the arena */
}

static void arena_hooks(void)
{
	json_set_alloc_funcs(arena_malloc, arena_free);
}

static void arena_begin(struct arena *a, size_t len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, arena_hooks);
	memset(a, 0, sizeof(*a));
	a->budget = len < (SIZE_MAX - ARENA_BASE) / ARENA_PER_BYTE ?
		    len * ARENA_PER_BYTE + ARENA_BASE : SIZE_MAX;
	jr_arena = a;
}

/* Frees every block jansson took since arena_begin(), the tree too: no
 * json_decref() needed (nor wanted: it would walk millions of nodes). */
static void arena_end(struct arena *a)
{
	struct arena_chunk *c;

	jr_arena = NULL;
	while ((c = a->top)) {
		a->top = c->prev;
		ASAN_UNPOISON_MEMORY_REGION(c->data, c->cap);
		free(c);
	}
}

/* ---- parsing ------------------------------------------------------------- */

/* The document, handed to jansson in the pieces it asks for. */
struct feed {
	const char *p;
	size_t left;
	bool eof;		/* jansson asked for more than there is */
};

static size_t feed_next(void *buf, size_t cap, void *arg)
{
	struct feed *f = arg;
	size_t n = f->left < cap ? f->left : cap;

	if (!n) {
		f->eof = true;
		return 0;
	}
	memcpy(buf, f->p, n);
	f->p += n;
	f->left -= n;
	return n;
}

static void jr_located(struct jr *r, unsigned long line, unsigned long col,
		       const char *what, const char *hint)
{
	if (r->errlen)
		snprintf(r->err, r->errlen, "%s: line %lu, column %lu: %s (%s)",
			 r->name, line, col, what, hint);
}

/*
 * jansson's error as one line. Its own wording, with what the user can
 * act on said first: a cut file, a number sptrace cannot hold, a key given
 * twice. Input bytes it quotes ("near '...'") are shown as printable ASCII.
 */
static int jr_parse_error(struct jr *r, const json_error_t *je, bool eof)
{
	static const char near_eof[] = " near end of file";
	const char *hint = HINT_SCHEMA, *near;
	char text[sizeof(je->text)], what[sizeof(je->text) + 64];
	size_t i, n;

	for (i = 0; je->text[i] && i < sizeof(text) - 1; i++) {
		unsigned char c = (unsigned char)je->text[i];

		text[i] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	text[i] = '\0';
	near = strstr(text, " near '");
	switch (json_error_code(je)) {
	case json_error_out_of_memory:
		return jr_nomem(r);
	case json_error_stack_overflow:
		snprintf(what, sizeof(what), "nested deeper than %u levels",
			 JSON_SUMMARY_MAX_DEPTH);
		break;
	case json_error_numeric_overflow:
		snprintf(what, sizeof(what), "%s",
			 strstr(text, "real") ? "number out of range" :
			 strstr(text, "negative") ? "number below -2^63" :
						    "number above 2^63-1");
		break;
	case json_error_duplicate_key:
		/* near '"count"': the key as written */
		n = near ? strlen(near) : 0;
		snprintf(what, sizeof(what), "duplicate key%s%.*s",
			 n ? " " : "", n > 8 ? (int)(n - 8) : 0,
			 n > 8 ? near + 7 : "");
		break;
	case json_error_null_character:
		snprintf(what, sizeof(what), "string holds \\u0000");
		break;
	case json_error_null_byte_in_key:
		snprintf(what, sizeof(what), "key holds \\u0000");
		break;
	case json_error_end_of_input_expected:
		hint = HINT_SYNTAX;
		snprintf(what, sizeof(what), "data after the top-level object");
		break;
	default:
		hint = HINT_SYNTAX;
		n = strlen(text);
		if (n >= sizeof(near_eof) - 1 &&
		    !strcmp(text + n - (sizeof(near_eof) - 1), near_eof))
			text[n - (sizeof(near_eof) - 1)] = '\0';
		if (eof && !strncmp(text, "premature end of input", 22))
			snprintf(what, sizeof(what), "unexpected end of file, "
				 "unterminated string");
		else
			snprintf(what, sizeof(what), "%s%s",
				 eof ? "unexpected end of file, " : "", text);
		break;
	}
	jr_located(r, (unsigned long)(je->line > 0 ? je->line : 1),
		   (unsigned long)(je->column > 0 ? je->column : 1), what, hint);
	return -EINVAL;
}

static int check_limits(struct jr *r, json_t *v, unsigned int depth);

/*
 * The document as a tree, within the limits of json_summary.h: 0 with *doc
 * set, or -EINVAL, -EFBIG, -ENOMEM with the message in r->err. The caller
 * has begun an arena; the tree lives until its end.
 */
static int jr_parse(struct jr *r, const char *buf, size_t len, json_t **doc)
{
	struct feed f = { .p = buf, .left = len };
	unsigned long line = 1, col = 1;
	json_error_t je;
	size_t i;

	if (len > JSON_SUMMARY_MAX_FILE) {
		if (r->errlen)
			snprintf(r->err, r->errlen, "%s: larger than %u MiB (%s)",
				 r->name, JSON_SUMMARY_MAX_FILE >> 20,
				 HINT_SCHEMA);
		return -EFBIG;
	}
	/* jansson would say "'[' or '{' expected": say what it is. */
	for (i = 0; i < len && strchr(" \t\r\n", buf[i]) && buf[i]; i++) {
		col++;
		if (buf[i] == '\n') {
			line++;
			col = 1;
		}
	}
	if (i == len) {
		jr_located(r, line, col, "empty file", HINT_SCHEMA);
		return -EINVAL;
	}
	*doc = json_load_callback(feed_next, &f, JSON_REJECT_DUPLICATES, &je);
	if (!*doc && jr_arena && jr_arena->over) {
		if (r->errlen)
			snprintf(r->err, r->errlen, "%s: needs more than %zu MiB "
				 "of memory to read, %u times its size (%s)",
				 r->name, jr_arena->budget >> 20, ARENA_PER_BYTE,
				 HINT_SCHEMA);
		return -EFBIG;
	}
	if (!*doc)
		return jr_parse_error(r, &je, f.eof);
	return check_limits(r, *doc, 1);
}

/* Nesting and string lengths of every value, known or not. depth counts
 * the containers v is in, itself included. */
static int check_limits(struct jr *r, json_t *v, unsigned int depth)
{
	const char *key;
	json_t *e;
	size_t i;
	int err = 0;

	if (json_is_string(v)) {
		if (json_string_length(v) > JSON_SUMMARY_MAX_STRING)
			return jr_fail(r, HINT_SCHEMA, "string longer than %u bytes",
				       JSON_SUMMARY_MAX_STRING);
		return 0;
	}
	if (!json_is_object(v) && !json_is_array(v))
		return 0;
	if (depth > JSON_SUMMARY_MAX_DEPTH)
		return jr_fail(r, HINT_SCHEMA, "nested deeper than %u levels",
			       JSON_SUMMARY_MAX_DEPTH);
	if (json_is_array(v)) {
		json_array_foreach(v, i, e) {
			jr_push_index(r, i);
			err = check_limits(r, e, depth + 1);
			jr_pop(r);
			if (err)
				return err;
		}
		return 0;
	}
	json_object_foreach(v, key, e) {
		if (strlen(key) > JSON_SUMMARY_MAX_STRING)
			return jr_fail(r, HINT_SCHEMA, "key longer than %u bytes",
				       JSON_SUMMARY_MAX_STRING);
		jr_push_key(r, key);
		err = check_limits(r, e, depth + 1);
		jr_pop(r);
		if (err)
			return err;
	}
	return 0;
}

/* ---- the helpers every schema reader uses -------------------------------- */

/*
 * Member key of object o: 1 with *v set, 0 if absent and optional (noun
 * NULL), or -EINVAL: absent though required ("<noun> without \"key\"") or
 * not of type t (the message names its path).
 */
static int member(struct jr *r, json_t *o, const char *noun, const char *key,
		  json_type t, json_t **v)
{
	static const char *const types[] = {
		[JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array",
		[JSON_STRING] = "a string", [JSON_INTEGER] = "an unsigned integer",
	};
	int err = 0;

	*v = json_object_get(o, key);
	if (!*v) {
		if (noun)
			return jr_fail(r, HINT_SCHEMA, "%s without \"%s\"", noun,
				       key);
		return 0;
	}
	jr_push_key(r, key);
	if (json_typeof(*v) != t || (t == JSON_INTEGER &&
				     json_integer_value(*v) < 0))
		err = jr_fail(r, HINT_SCHEMA, "expected %s", types[t]);
	jr_pop(r);
	return err ? err : 1;
}

/* An unsigned integer member; *out is untouched when it is absent. */
static int member_u64(struct jr *r, json_t *o, const char *noun,
		      const char *key, uint64_t *out)
{
	json_t *v;
	int ret = member(r, o, noun, key, JSON_INTEGER, &v);

	if (ret == 1)
		*out = (uint64_t)json_integer_value(v);
	return ret;
}

static int member_string(struct jr *r, json_t *o, const char *noun,
			 const char *key, const char **out)
{
	json_t *v;
	int ret = member(r, o, noun, key, JSON_STRING, &v);

	if (ret == 1)
		*out = json_string_value(v);
	return ret;
}

/* Calls fn on each element of array a (must be one), its index on the
 * path; stops at the first error. */
static int each(struct jr *r, json_t *a,
		int (*fn)(struct jr *r, json_t *e, size_t i, void *ctx),
		void *ctx)
{
	json_t *e;
	size_t i;
	int err = 0;

	json_array_foreach(a, i, e) {
		jr_push_index(r, i);
		err = fn(r, e, i, ctx);
		jr_pop(r);
		if (err)
			break;
	}
	return err;
}

/* An array element that must be an object. */
static int expect_object(struct jr *r, json_t *e)
{
	return json_is_object(e) ? 0 :
	       jr_fail(r, HINT_SCHEMA, "expected an object");
}

/*
 * "version": "MAJOR.MINOR" (docs/formats.md#versioning). A newer major
 * changed the meaning of something this reader knows: refuse rather than
 * misread. A newer minor only added fields, which are ignored.
 */
static int read_version(struct jr *r, json_t *doc)
{
	unsigned long major, minor;
	const char *str = NULL, *dot;
	int err;

	err = member_string(r, doc, NULL, "version", &str);
	if (err <= 0)
		return err;
	err = 0;
	jr_push_key(r, "version");
	dot = strchr(str, '.');
	if (!dot || dot == str || dot - str > 9 ||
	    strspn(str, "0123456789") != (size_t)(dot - str) || !dot[1] ||
	    strlen(dot + 1) > 9 ||
	    strspn(dot + 1, "0123456789") != strlen(dot + 1)) {
		err = jr_fail(r, HINT_SCHEMA, "expected \"MAJOR.MINOR\"");
	} else {
		major = strtoul(str, NULL, 10);
		minor = strtoul(dot + 1, NULL, 10);
		if (major != JSON_SUMMARY_VERSION_MAJOR)
			err = jr_fail(r, major > JSON_SUMMARY_VERSION_MAJOR ?
					 "written by a newer sptrace: upgrade sptrace to read it" :
					 HINT_SCHEMA,
				      "format version %lu.%lu, this sptrace reads %u.x",
				      major, minor, JSON_SUMMARY_VERSION_MAJOR);
	}
	jr_pop(r);
	return err;
}

/* ---- the summary ----------------------------------------------------------- */

#define NOT_KEPT SIZE_MAX	/* derived: checked, not used */

/* Every figure of a query but its name and histogram. */
static const struct {
	const char *key;
	size_t off;		/* in struct sp_query_stats, or NOT_KEPT */
} query_fields[] = {
	{ "count", offsetof(struct sp_query_stats, count) },
	{ "self_ns", offsetof(struct sp_query_stats, self_ns) },
	{ "total_ns", offsetof(struct sp_query_stats, total_ns) },
	{ "min_ns", offsetof(struct sp_query_stats, min_ns) },
	{ "max_ns", offsetof(struct sp_query_stats, max_ns) },
	{ "p50_ns", NOT_KEPT }, { "p90_ns", NOT_KEPT }, { "p99_ns", NOT_KEPT },
	{ "cache_hits", offsetof(struct sp_query_stats, cache_hits) },
	{ "incr_loads", offsetof(struct sp_query_stats, incr_loads) },
	{ "incr_load_ns", offsetof(struct sp_query_stats, incr_load_ns) },
	{ "blocked_count", offsetof(struct sp_query_stats, blocked_count) },
	{ "blocked_ns", offsetof(struct sp_query_stats, blocked_ns) },
};

struct query_ctx {
	struct summary *s;
	const char *name;
};

static int read_bin(struct jr *r, json_t *e, size_t i, void *arg)
{
	struct query_ctx *q = arg;
	uint64_t lo = 0, hi = 0, count = 0;
	uint32_t b;
	int err, has_hi;

	(void)i;
	err = expect_object(r, e);
	if (!err)
		err = member_u64(r, e, "histogram bin", "lo_ns", &lo);
	if (err >= 0)
		err = member_u64(r, e, "histogram bin", "count", &count);
	if (err < 0)
		return err;
	has_hi = member_u64(r, e, NULL, "hi_ns", &hi);
	if (has_hi < 0)
		return has_hi;
	b = sp_hist_bucket(lo);
	if (sp_hist_bucket_lo(b) != lo) {
		jr_push_key(r, "lo_ns");
		err = jr_fail(r, HINT_SCHEMA, "%" PRIu64 " is not a histogram "
			      "bucket bound", lo);
		jr_pop(r);
		return err;
	}
	if (has_hi && sp_hist_bucket_hi(b) != hi) {
		jr_push_key(r, "hi_ns");
		err = jr_fail(r, HINT_SCHEMA, "%" PRIu64 " does not match lo_ns %"
			      PRIu64, hi, lo);
		jr_pop(r);
		return err;
	}
	err = summary__add_hist(q->s, q->name, b, count);
	return err == -ENOMEM ? jr_nomem(r) : err;
}

static int read_query(struct jr *r, json_t *e, size_t i, void *arg)
{
	struct query_ctx q = { .s = arg };
	struct sp_query_stats st = { 0 };
	json_t *hist;
	uint64_t v;
	size_t k;
	int err;

	(void)i;
	err = expect_object(r, e);
	if (!err)
		err = member_string(r, e, "query", "name", &q.name);
	for (k = 0; err >= 0 && k < sizeof(query_fields) / sizeof(query_fields[0]); k++) {
		bool kept = query_fields[k].off != NOT_KEPT;

		err = member_u64(r, e, kept ? "query" : NULL,
				 query_fields[k].key, &v);
		if (err == 1 && kept)
			*(__u64 *)((char *)&st + query_fields[k].off) = v;
	}
	if (err >= 0)
		err = member(r, e, "query", "hist", JSON_ARRAY, &hist);
	if (err < 0)
		return err;
	err = summary__add_stats(q.s, q.name, &st);
	if (err)
		return err == -ENOMEM ? jr_nomem(r) : err;
	jr_push_key(r, "hist");
	err = each(r, hist, read_bin, &q);
	jr_pop(r);
	return err;
}

/* "errors": the counters by summary__error_name(), "lost", and the two
 * derived sums. */
static int read_errors(struct jr *r, json_t *doc, struct summary *s)
{
	json_t *errors;
	uint64_t v;
	unsigned int i;
	int err;

	err = member(r, doc, NULL, "errors", JSON_OBJECT, &errors);
	if (err <= 0)
		return err;
	jr_push_key(r, "errors");
	for (i = 0; err >= 0 && i < SP_ERR__MAX; i++)
		err = member_u64(r, errors, NULL, summary__error_name(i),
				 &s->errors[i]);
	if (err >= 0)
		err = member_u64(r, errors, NULL, "lost", &s->lost);
	if (err >= 0)
		err = member_u64(r, errors, NULL, "unbalanced", &v);
	if (err >= 0)
		err = member_u64(r, errors, NULL, "map_full", &v);
	jr_pop(r);
	return err < 0 ? err : 0;
}

static int read_summary(struct jr *r, json_t *doc, struct summary *s)
{
	json_t *queries;
	uint64_t v;
	int err;

	if (!json_is_object(doc))
		return jr_fail(r, HINT_SCHEMA, "expected an object");
	err = read_version(r, doc);
	if (err >= 0)
		err = member_u64(r, doc, "summary", "duration_ns",
				 &s->duration_ns);
	if (err >= 0)
		err = member_u64(r, doc, NULL, "total_self_ns", &v);
	if (err >= 0)
		err = member(r, doc, "summary", "queries", JSON_ARRAY, &queries);
	if (err >= 0)
		err = read_errors(r, doc, s);
	if (err < 0)
		return err;
	jr_push_key(r, "queries");
	err = each(r, queries, read_query, s);
	jr_pop(r);
	return err;
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
		const struct sp_query_row *row = &src->rows[i];

		err = summary__add_stats(dst, row->name, &row->st);
		for (j = 0; !err && j < row->nbins; j++)
			err = summary__add_hist(dst, row->name,
						row->bins[j].bucket,
						row->bins[j].count);
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
	struct jr r = { .name = name, .err = err, .errlen = errlen };
	struct summary tmp;
	struct arena arena;
	json_t *doc = NULL;
	int ret;

	summary__init(&tmp);
	if (errlen)
		err[0] = '\0';
	arena_begin(&arena, len);
	ret = jr_parse(&r, buf, len, &doc);
	if (!ret)
		ret = read_summary(&r, doc, &tmp);
	arena_end(&arena);
	if (!ret && summary_merge(s, &tmp))
		ret = jr_nomem(&r);
	summary__free(&tmp);
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

	fd = input__open(path);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path,
			 input__strerror(fd));
		return fd;
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
static int read_point(struct jr *r, json_t *e, size_t i, void *arg)
{
	static const struct {
		const char *key;
		size_t off;
	} fields[] = {
		{ "rss_bytes", offsetof(struct mem_point, rss_bytes) },
		{ "rss_anon_bytes", offsetof(struct mem_point, rss_anon_bytes) },
		{ "rss_file_bytes", offsetof(struct mem_point, rss_file_bytes) },
		{ "heap_live_bytes", offsetof(struct mem_point, heap_live_bytes) },
		{ "typed_live_bytes", offsetof(struct mem_point, typed_live_bytes) },
	};
	struct mem_timeline *tl = arg;
	struct mem_point *p = &tl->v[i];
	size_t k;
	int err;

	memset(p, 0, sizeof(*p));
	err = expect_object(r, e);
	if (!err)
		err = member_u64(r, e, "timeline point", "t_ns", &p->t_ns);
	for (k = 0; err >= 0 && k < sizeof(fields) / sizeof(fields[0]); k++)
		err = member_u64(r, e, NULL, fields[k].key,
				 (uint64_t *)((char *)p + fields[k].off));
	if (err < 0)
		return err;
	/* The writer keeps them in time order. */
	if (i && p->t_ns < tl->v[i - 1].t_ns)
		return jr_fail(r, HINT_SCHEMA, "timeline points not in time order");
	tl->n = (unsigned int)i + 1;
	return 0;
}

static int read_timeline_doc(struct jr *r, json_t *doc,
			     struct mem_timeline *tl)
{
	const char *command = NULL;
	json_t *points;
	size_t n;
	int err;

	if (!json_is_object(doc))
		return jr_fail(r, HINT_SCHEMA, "expected an object");
	err = read_version(r, doc);
	if (err >= 0)
		err = member_u64(r, doc, NULL, "timeline_step_ns",
				 &tl->interval_ns);
	/* "command": the traced command line (absent from files written
	 * before it was kept: then NULL, unknown). */
	if (err >= 0)
		err = member_string(r, doc, NULL, "command", &command);
	if (err == 1 && !(tl->command = strdup(command)))
		return jr_nomem(r);
	if (err >= 0)
		err = member(r, doc, NULL, "timeline", JSON_ARRAY, &points);
	if (err <= 0)
		return err;
	jr_push_key(r, "timeline");
	n = json_array_size(points);
	/* The writer keeps at most MEM_TIMELINE_MAX. */
	if (n > MEM_TIMELINE_MAX) {
		err = jr_fail(r, HINT_SCHEMA, "more than %u timeline points",
			      MEM_TIMELINE_MAX);
	} else if (n && !(tl->v = calloc(n, sizeof(*tl->v)))) {
		err = jr_nomem(r);
	} else {
		err = each(r, points, read_point, tl);
	}
	jr_pop(r);
	return err;
}

int json_summary__parse_timeline(const char *buf, size_t len,
				 const char *name, struct mem_timeline *tl,
				 char *err, size_t errlen)
{
	struct jr r = { .name = name, .err = err, .errlen = errlen };
	struct mem_timeline tmp = { .step = 1 };
	struct arena arena;
	json_t *doc = NULL;
	int ret;

	if (errlen)
		err[0] = '\0';
	arena_begin(&arena, len);
	ret = jr_parse(&r, buf, len, &doc);
	if (!ret)
		ret = read_timeline_doc(&r, doc, &tmp);
	arena_end(&arena);
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
