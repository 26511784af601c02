// SPDX-License-Identifier: MIT
/*
 * normalize=pg row names with libpg_query (see pg_text.h).
 *
 * What pg_stat_statements does, and what is done here in its place: it
 * splits a query string into statements (here pg_query_split_with_parser);
 * keys an optimizable statement by a jumble of its analyzed tree, which
 * leaves out constants' values, comments, case, spacing and aliases (here
 * the raw parse tree, as JSON, with those left out and each constant as
 * its type: jumble_tree()); shows the text of the first statement of a
 * key it saw with constants as $n (here pg_query_normalize, derived from
 * its code, and of a key's texts the smallest: sptrace does not know which
 * came first). A utility statement is keyed and shown by its text.
 * Not done: the analyzed tree resolves names (two tables of one name in
 * two schemas, or `t.a` and `x.a` through an alias, differ here only in
 * the second case) and types beyond the constants' own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "pg_text.h"

#ifdef SPTRACE_PG_QUERY
#include <jansson.h>
#include <pg_query.h>

/* key -> value strings, open addressing, never shrinks. */
struct str_map {
	char **keys, **vals;
	size_t cap, n;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static char **map_slot(struct str_map *m, const char *key)
{
	size_t i = str_hash(key) & (m->cap - 1);

	while (m->keys[i] && strcmp(m->keys[i], key))
		i = (i + 1) & (m->cap - 1);
	return &m->keys[i];
}

static const char *map_get(struct str_map *m, const char *key)
{
	char **k;

	if (!m->cap)
		return NULL;
	k = map_slot(m, key);
	return *k ? m->vals[k - m->keys] : NULL;
}

static int map_grow(struct str_map *m)
{
	struct str_map g = { .cap = m->cap ? 2 * m->cap : 64 };
	size_t i;
	char **k;

	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.vals = calloc(g.cap, sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++)
		if (m->keys[i]) {
			k = map_slot(&g, m->keys[i]);
			*k = m->keys[i];
			g.vals[k - g.keys] = m->vals[i];
		}
	g.n = m->n;
	free(m->keys);
	free(m->vals);
	*m = g;
	return 0;
}

/* Sets key's value (both copied); the old value is freed. */
static int map_put(struct str_map *m, const char *key, const char *val)
{
	char **k, *v;

	if (2 * (m->n + 1) > m->cap && map_grow(m))
		return -ENOMEM;
	v = strdup(val);
	if (!v)
		return -ENOMEM;
	k = map_slot(m, key);
	if (!*k) {
		*k = strdup(key);
		if (!*k) {
			free(v);
			return -ENOMEM;
		}
		m->n++;
	}
	free(m->vals[k - m->keys]);
	m->vals[k - m->keys] = v;
	return 0;
}

static void map_free(struct str_map *m)
{
	size_t i;

	for (i = 0; i < m->cap; i++) {
		free(m->keys[i]);
		free(m->vals[i]);
	}
	free(m->keys);
	free(m->vals);
}

struct pg_text {
	struct str_map shown;	/* statement key -> text shown */
	struct str_map learnt;	/* raw strings learnt -> "" */
	struct str_map named;	/* raw string -> its row name, until a
				 * text shown changes */
	/* libpg_query was called: its memory context (the calling
	 * thread's, made at the first call) is to be freed. pg_query_exit()
	 * without one dereferences NULL: a -b run that saw no statement
	 * crashed at its end. */
	bool used;
};

bool pg_text__available(void)
{
	return true;
}

struct pg_text *pg_text__new(void)
{
	return calloc(1, sizeof(struct pg_text));
}

void pg_text__free(struct pg_text *t)
{
	if (!t)
		return;
	map_free(&t->shown);
	map_free(&t->learnt);
	map_free(&t->named);
	if (t->used)
		pg_query_exit();
	free(t);
}

/* PostgreSQL's scanner_isspace(). */
static bool pg_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

/* Past whitespace and comments ( -- and nested block comments). */
static const char *skip_blank(const char *s)
{
	int depth;

	for (;;) {
		while (pg_space(*s))
			s++;
		if (s[0] == '-' && s[1] == '-') {
			while (*s && *s != '\n')
				s++;
		} else if (s[0] == '/' && s[1] == '*') {
			for (depth = 0, s += 2; *s; s++) {
				if (s[0] == '*' && s[1] == '/') {
					s++;
					if (depth-- == 0) {
						s++;
						break;
					}
				} else if (s[0] == '/' && s[1] == '*') {
					s++;
					depth++;
				}
			}
		} else {
			return s;
		}
	}
}

/* Does pg_stat_statements normalize this statement (a query, not a
 * utility statement)? Its first word tells. */
static bool pg_optimizable(const char *s)
{
	static const char *const words[] = { "select", "insert", "update",
		"delete", "with", "values", "table", "merge" };
	size_t i, n;

	s = skip_blank(s);
	while (*s == '(')
		s = skip_blank(s + 1);
	for (n = 0; (s[n] | 0x20) >= 'a' && (s[n] | 0x20) <= 'z'; n++)
		;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == n && !strncasecmp(s, words[i], n))
			return true;
	return false;
}

/* A constant's type, as the jumble holds it: the parser tells int4
 * (ival) from a wider integer or a numeric (fval: a '.' or an exponent
 * makes a numeric, as PostgreSQL's make_const() decides), a string from
 * a bit string. SELECT 5, SELECT 5000000000, SELECT .5 and SELECT '5' are
 * four rows there. */
static const char *const_type(json_t *a)
{
	const char *f;
	json_t *v;

	if (json_object_get(a, "ival"))
		return "int4";
	if ((v = json_object_get(a, "fval"))) {
		f = json_string_value(json_object_get(v, "fval"));
		return f && strpbrk(f, ".eE") ? "numeric" : "int8";
	}
	if (json_object_get(a, "sval"))
		return "text";
	if (json_object_get(a, "bsval"))
		return "bit";
	if (json_object_get(a, "boolval"))
		return "bool";
	return "null";
}

/*
 * The parse tree (JSON) made into what the jumble of its analyzed tree
 * holds: no locations, constants as their types, no aliases (of tables,
 * subqueries, or of a SELECT's output columns: `SELECT 1 AS a` and
 * `SELECT 2 AS b` are one row there). `aliases`: j is a SelectStmt's
 * targetList, whose ResTarget names are aliases (an INSERT's or UPDATE's
 * name columns, and stay).
 */
static void jumble_tree(json_t *j, bool aliases)
{
	const char *k;
	json_t *v, *a;
	void *tmp;
	size_t i;

	if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			jumble_tree(v, aliases);
		return;
	}
	if (!json_is_object(j))
		return;
	json_object_foreach_safe(j, tmp, k, v) {
		if (!strcmp(k, "location") || !strcmp(k, "alias") ||
		    !strcmp(k, "stmt_location") || !strcmp(k, "stmt_len") ||
		    (aliases && !strcmp(k, "name"))) {
			json_object_del(j, k);
		} else if (!strcmp(k, "A_Const") && json_is_object(v)) {
			a = json_string(const_type(v));
			if (a)
				json_object_set_new(j, k, a);
		} else if (!strcmp(k, "ResTarget")) {
			jumble_tree(v, aliases);
		} else {
			/* a SelectStmt is the node with an "op" */
			jumble_tree(v, !strcmp(k, "targetList") &&
					       json_object_get(j, "op"));
		}
	}
}

/* The key of statement stmt (normalized: q): its tree as the jumble
 * holds it; q itself if it does not parse. */
static char *pg_key(const char *q, const char *stmt)
{
	PgQueryParseResult r = pg_query_parse(stmt);
	json_t *tree = NULL, *stmts;
	char *k = NULL;

	if (!r.error && r.parse_tree)
		tree = json_loads(r.parse_tree, 0, NULL);
	stmts = json_object_get(tree, "stmts");
	if (stmts) {
		jumble_tree(stmts, false);
		k = json_dumps(stmts, JSON_COMPACT | JSON_SORT_KEYS);
	}
	json_decref(tree);
	pg_query_free_parse_result(r);
	return k ? k : strdup(q);
}

static void put(char *buf, size_t len, size_t *at, const char *s, size_t n)
{
	if (*at + 1 >= len)
		return;
	if (n > len - 1 - *at)
		n = len - 1 - *at;
	memcpy(buf + *at, s, n);
	*at += n;
	buf[*at] = 0;
}

/* One statement (s, n bytes): its shown text, learnt or looked up. */
static int pg_stmt(struct pg_text *t, const char *s, size_t n, bool learn,
		   char *buf, size_t len, size_t *at)
{
	PgQueryNormalizeResult r;
	const char *shown;
	char *stmt, *key;
	int err = 0;

	while (n && pg_space(*s))
		s++, n--;
	while (n && (pg_space(s[n - 1]) || s[n - 1] == ';'))
		n--;
	if (!pg_optimizable(s)) {	/* keyed and shown as written */
		if (!learn)
			put(buf, len, at, s, n);
		return 0;
	}
	stmt = strndup(s, n);
	if (!stmt)
		return -ENOMEM;
	r = pg_query_normalize(stmt);
	if (r.error || !r.normalized_query) {
		/* Not a statement PostgreSQL ran: shown as written. */
		if (!learn)
			put(buf, len, at, stmt, n);
		goto out;
	}
	key = pg_key(r.normalized_query, stmt);
	if (!key) {
		err = -ENOMEM;
		goto out;
	}
	shown = map_get(&t->shown, key);
	if (learn && (!shown || strcmp(r.normalized_query, shown) < 0)) {
		err = map_put(&t->shown, key, r.normalized_query);
		if (shown) {	/* a name given may have changed */
			map_free(&t->named);
			memset(&t->named, 0, sizeof(t->named));
		}
	}
	else if (!learn)
		put(buf, len, at, shown ? shown : r.normalized_query,
		    strlen(shown ? shown : r.normalized_query));
	free(key);
out:
	pg_query_free_normalize_result(r);
	free(stmt);
	return err;
}

/* Each statement of raw, learnt or written. */
static int pg_each(struct pg_text *t, const char *raw, bool learn, char *buf,
		   size_t len)
{
	PgQuerySplitResult sp;
	size_t at = 0, rlen = strlen(raw), loc, n;
	char sep = PG_TEXT_SEP;
	int err = 0, i;

	t->used = true;
	sp = pg_query_split_with_parser(raw);
	if (len)
		buf[0] = 0;
	if (sp.error || sp.n_stmts <= 0) {
		err = pg_stmt(t, raw, rlen, learn, buf, len, &at);
		goto out;
	}
	for (i = 0; i < sp.n_stmts && !err; i++) {
		loc = (size_t)sp.stmts[i]->stmt_location;
		n = (size_t)sp.stmts[i]->stmt_len;
		if (loc > rlen)
			continue;
		if (!n || n > rlen - loc)
			n = rlen - loc;
		if (i && !learn)
			put(buf, len, &at, &sep, 1);
		err = pg_stmt(t, raw + loc, n, learn, buf, len, &at);
	}
out:
	pg_query_free_split_result(sp);
	return err;
}

int pg_text__learn(struct pg_text *t, const char *raw)
{
	int err;

	if (map_get(&t->learnt, raw))
		return 0;
	err = pg_each(t, raw, true, NULL, 0);
	return err ? err : map_put(&t->learnt, raw, "");
}

int pg_text__name(struct pg_text *t, const char *raw, bool truncated,
		  uint64_t hash, char *buf, size_t len)
{
	if (truncated) {
		snprintf(buf, len, "<truncated #%012llx> %s",
			 (unsigned long long)hash, raw);
		return 0;
	}
	const char *named = map_get(&t->named, raw);
	int err;

	if (named) {
		snprintf(buf, len, "%s", named);
		return 0;
	}
	err = pg_each(t, raw, false, buf, len);
	return err ? err : map_put(&t->named, raw, buf);
}

#else /* !SPTRACE_PG_QUERY */

bool pg_text__available(void)
{
	return false;
}

struct pg_text *pg_text__new(void)
{
	return NULL;
}

void pg_text__free(struct pg_text *t)
{
	(void)t;
}

int pg_text__learn(struct pg_text *t, const char *raw)
{
	(void)t;
	(void)raw;
	return -ENOTSUP;
}

int pg_text__name(struct pg_text *t, const char *raw, bool truncated,
		  uint64_t hash, char *buf, size_t len)
{
	(void)t;
	(void)truncated;
	(void)hash;
	snprintf(buf, len, "%s", raw);
	return -ENOTSUP;
}
#endif
