// SPDX-License-Identifier: MIT
/*
 * Parsing of --query specs (see query_spec.h) and of spec files. Every
 * malformed spec gets one line naming where it came from (FILE:LINE or
 * --query), the spec, the part that is wrong and what was expected.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sptrace/query_abi.h>
#include <sptrace/spec_norm.h>
#include "input.h"
#include "log.h"
#include "pg_text.h"
#include "query_spec.h"

#define SYNTAX "PROVIDER:BEGIN,PROVIDER:END[|PROVIDER:END2...],name=... or PROVIDER:PROBE,name=...,kind=cache"

static bool is_ident(const char *s, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* "PROVIDER:PROBE[@LABEL]" into q's probe slot i. PostgreSQL documents its
 * probes with dashes (query-start); their ELF names have "__". */
static int parse_probe(struct query_spec *q, int i, const char *tok)
{
	const char *colon = strchr(tok, ':'), *at = strchr(tok, '@'), *s;
	size_t plen, len, j = 0;
	char *probe;

	if (!colon || (at && at < colon) ||
	    !is_ident(tok, (size_t)(colon - tok)))
		return -EINVAL;
	plen = at ? (size_t)(at - colon - 1) : strlen(colon + 1);
	if (at && !is_ident(at + 1, strlen(at + 1)))
		return -EINVAL;
	probe = malloc(2 * plen + 1);
	if (!probe)
		return -ENOMEM;
	for (s = colon + 1, len = 0; len < plen; len++, s++) {
		if (*s == '-') {
			probe[j++] = '_';
			probe[j++] = '_';
		} else {
			probe[j++] = *s;
		}
	}
	probe[j] = 0;
	if (!is_ident(probe, j)) {
		free(probe);
		return -EINVAL;
	}
	q->probe[i] = probe;
	q->provider[i] = strndup(tok, (size_t)(colon - tok));
	if (at)
		q->label[i] = strdup(at + 1);
	return q->provider[i] && (!at || q->label[i]) ? 0 : -ENOMEM;
}

/* "argN" -> N; -1 if not that form, -2 if N is out of range. */
static int parse_arg(const char *v, const char **rest)
{
	char *end;
	long n;

	if (strncmp(v, "arg", 3) || !isdigit((unsigned char)v[3]))
		return -1;
	errno = 0;
	n = strtol(v + 3, &end, 10);
	if (errno || n < 0 || n >= QUERY_SPEC_MAX_ARGS)
		return -2;
	if (rest)
		*rest = end;
	else if (*end)
		return -1;
	return (int)n;
}

/* name=argN, name=PREFIX:argN or name=LITERAL (optionally quoted). */
static int parse_name(struct query_spec *q, const char *v, const char *where)
{
	const char *colon = strrchr(v, ':');
	size_t len = strlen(v), i;
	int n;

	n = parse_arg(v, NULL);
	if (n == -1 && colon)
		n = parse_arg(colon + 1, NULL);
	if (n == -2) {
		sp_err("%s '%s': name=%s: no such argument (USDT probes have arg0..arg%d)",
		       where, q->text, v, QUERY_SPEC_MAX_ARGS - 1);
		return -EINVAL;
	}
	if (n >= 0) {
		q->arg = n;
		if (strncmp(v, "arg", 3) || !isdigit((unsigned char)v[3])) {
			q->name_type = SP_SPEC_NAME_INT;
			q->literal = strndup(v, (size_t)(colon - v) + 1);
			return q->literal ? 0 : -ENOMEM;
		}
		q->name_type = SP_SPEC_NAME_STR;
		return 0;
	}
	if (len >= 2 && (v[0] == '"' || v[0] == '\'') && v[len - 1] == v[0]) {
		v++;
		len -= 2;
	}
	for (i = 0; i < len; i++)
		if (!isprint((unsigned char)v[i]) || v[i] == '"' || v[i] == '\'')
			break;
	if (!len || i < len || len >= SP_NAME_LEN) {
		sp_err("%s '%s': name=%s: expected argN (a string argument), PREFIX:argN (an integer argument) or a fixed name of printable characters",
		       where, q->text, v);
		return -EINVAL;
	}
	q->arg = -1;
	q->name_type = SP_SPEC_NAME_FIXED;
	q->literal = strndup(v, len);
	return q->literal ? 0 : -ENOMEM;
}

/* if=argN OP VALUE, hit=argN OP VALUE; a bare argN means argN!=0. */
static int parse_cond(struct query_spec *q, const char *opt, const char *v,
		      struct query_spec_cond *c, const char *where)
{
	static const struct { const char *s; unsigned int op; } ops[] = {
		{ "==", SP_OP_EQ }, { "!=", SP_OP_NE }, { "<=", SP_OP_LE },
		{ ">=", SP_OP_GE }, { "<", SP_OP_LT }, { ">", SP_OP_GT },
		{ "=", SP_OP_EQ },
	};
	const char *rest = NULL;
	char *end;
	size_t i;
	int n;

	n = parse_arg(v, &rest);
	if (n < 0) {
		sp_err("%s '%s': %s=%s: expected argN OP NUMBER (OP: == != < <= > >=, N: 0..%d), e.g. %s=arg7!=0",
		       where, q->text, opt, v, QUERY_SPEC_MAX_ARGS - 1, opt);
		return -EINVAL;
	}
	c->arg = n;
	if (!*rest) {
		c->op = SP_OP_NE;
		c->val = 0;
		return 0;
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strncmp(rest, ops[i].s, strlen(ops[i].s)))
			break;
	if (i == sizeof(ops) / sizeof(ops[0])) {
		sp_err("%s '%s': %s=%s: unknown comparison '%s' (expected == != < <= > >=)",
		       where, q->text, opt, v, rest);
		return -EINVAL;
	}
	rest += strlen(ops[i].s);
	errno = 0;
	c->val = strtoll(rest, &end, 0);
	if (!*rest || *end || errno) {
		sp_err("%s '%s': %s=%s: '%s' is not an integer (decimal, 0x hex, may be negative)",
		       where, q->text, opt, v, rest);
		return -EINVAL;
	}
	c->op = ops[i].op;
	return 0;
}

/* The ENDs: "PROV:END1[@L]|PROV:END2[@L]...". */
static int parse_ends(struct query_spec *q, char *tok, const char *where)
{
	size_t len = strlen(tok);
	char *save = NULL, *e;
	int err;

	if (tok[0] == '|' || tok[len - 1] == '|' || strstr(tok, "||")) {
		sp_err("%s '%s': '%s': an empty END between '|' (expected PROVIDER:END1|PROVIDER:END2)",
		       where, q->text, tok);
		return -EINVAL;
	}
	for (e = strtok_r(tok, "|", &save); e; e = strtok_r(NULL, "|", &save)) {
		if (q->nprobes >= QUERY_SPEC_MAX_PROBES) {
			sp_err("%s '%s': more than %d alternative ENDs",
			       where, q->text, SP_SPEC_MAX_ENDS);
			return -EINVAL;
		}
		err = parse_probe(q, q->nprobes, e);
		if (err == -EINVAL)
			sp_err("%s '%s': '%s' is not PROVIDER:PROBE[@LABEL] (expected %s)",
			       where, q->text, e, SYNTAX);
		if (err)
			return err;
		q->nprobes++;
	}
	if (q->nprobes == 1) {
		sp_err("%s '%s': empty END list", where, q->text);
		return -EINVAL;
	}
	return 0;
}

/* abandon=PROVIDER:PROBE: one more END of the line, which drops its open
 * intervals instead of closing one. */
static int parse_abandon(struct query_spec *q, char *v, const char *where)
{
	int err;

	if (q->nprobes < 2 || q->nprobes >= QUERY_SPEC_MAX_PROBES) {
		sp_err("%s '%s': abandon= needs a BEGIN,END interval and at most %d ENDs",
		       where, q->text, SP_SPEC_MAX_ENDS - 1);
		return -EINVAL;
	}
	err = parse_probe(q, q->nprobes, v);
	if (!err && q->label[q->nprobes])
		err = -EINVAL;
	if (err == -EINVAL)
		sp_err("%s '%s': abandon=%s: expected PROVIDER:PROBE",
		       where, q->text, v);
	if (err)
		return err;
	q->abandon = q->nprobes++;
	return 0;
}

static int parse_option(struct query_spec *q, char *tok, unsigned int *seen,
			const char *where)
{
	static const char *const names[] = {
		"name", "kind", "if", "hit", "normalize", "max-rows",
		"stack", "outcomes", "serial", "abandon",
	};
	char *eq = strchr(tok, '='), *v, *end;
	unsigned int i;
	long n;

	if (eq)
		*eq = 0;
	v = eq ? eq + 1 : NULL;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(tok, names[i]))
			break;
	if (i == sizeof(names) / sizeof(names[0]) || (!v) != (i == 7 || i == 8)) {
		if (eq)
			*eq = '=';
		sp_err("%s '%s': unexpected '%s' (options: name=, kind=, if=, hit=, normalize=, max-rows=, stack=, outcomes, serial, abandon=)",
		       where, q->text, tok);
		return -EINVAL;
	}
	if (*seen & (1u << i)) {
		sp_err("%s '%s': %s given twice", where, q->text, names[i]);
		return -EINVAL;
	}
	*seen |= 1u << i;
	switch (i) {
	case 0:
		return parse_name(q, v, where);
	case 1:
		q->cache = !strcmp(v, "cache");
		if (!strcmp(v, "query") || q->cache)
			q->kind = SP_FRAME_QUERY;
		else if (!strcmp(v, "blocked"))
			q->kind = SP_FRAME_BLOCKED;
		else if (!strcmp(v, "incr"))
			q->kind = SP_FRAME_INCR_LOAD;
		else {
			sp_err("%s '%s': unknown kind '%s' (expected query, blocked, incr or cache)",
			       where, q->text, v);
			return -EINVAL;
		}
		return 0;
	case 2:
		return parse_cond(q, "if", v, &q->cond, where);
	case 3:
		return parse_cond(q, "hit", v, &q->hit, where);
	case 4:
		if (!strcmp(v, "sql"))
			q->normalize = SP_NORM_SQL;
		else if (!strcmp(v, "digits"))
			q->normalize = SP_NORM_DIGITS;
		else if (!strcmp(v, "none"))
			q->normalize = SP_NORM_NONE;
		else if (!strcmp(v, "pg") && !pg_text__available()) {
			sp_err("%s '%s': normalize=pg: this sptrace was built without libpg_query (install libpg-query-dev and rebuild, or use normalize=sql)",
			       where, q->text);
			return -ENOTSUP;
		} else if (!strcmp(v, "pg"))
			q->normalize = SP_NORM_PG;
		else {
			sp_err("%s '%s': unknown normalize '%s' (expected pg, sql, digits or none)",
			       where, q->text, v);
			return -EINVAL;
		}
		return 0;
	case 5:
		errno = 0;
		n = strtol(v, &end, 10);
		if (!*v || *end || errno || n < 1 || n > 16777216) {
			sp_err("%s '%s': max-rows=%s: expected a number of rows, 1 to 16777216",
			       where, q->text, v);
			return -EINVAL;
		}
		q->max_rows = (unsigned int)n;
		return 0;
	case 6:
		if (!is_ident(v, strlen(v))) {
			sp_err("%s '%s': stack=%s: expected a name of letters, digits and _",
			       where, q->text, v);
			return -EINVAL;
		}
		q->stack = strdup(v);
		return q->stack ? 0 : -ENOMEM;
	case 7:
		q->outcomes = true;
		return 0;
	case 8:
		q->serial = true;
		return 0;
	default:
		return parse_abandon(q, v, where);
	}
}

/* Checks across options, once the whole line is read. */
static int check_spec(const struct query_spec *q, unsigned int seen,
		      const char *where)
{
	const char *why = NULL;
	int i;

	if (!q->nprobes)
		why = "no probe";
	else if (!(seen & 1))
		why = "no name= (argN, PREFIX:argN or a fixed name)";
	if (why) {
		sp_err("%s '%s': %s (expected %s)", where, q->text, why, SYNTAX);
		return -EINVAL;
	}
	if (q->cache && q->nprobes != 1)
		why = "kind=cache takes one probe, not a BEGIN,END pair";
	else if (!q->cache && q->nprobes == 1)
		why = "one probe is a counter: add kind=cache, or give BEGIN and END probes";
	else if (q->cache && (q->outcomes || q->stack || q->serial))
		why = "outcomes, stack= and serial need a BEGIN,END interval, not kind=cache";
	else if (q->normalize && q->name_type != SP_SPEC_NAME_STR)
		why = "normalize= needs name=argN (a string argument)";
	else if (q->max_rows && q->name_type == SP_SPEC_NAME_FIXED)
		why = "max-rows= needs a name from an argument (a fixed name is one row)";
	else if (q->label[0])
		why = "@LABEL names an END, not the BEGIN";
	else if (q->outcomes && q->nprobes - 1 > SP_SPEC_MAX_ENDS)
		why = "too many ENDs for outcomes";
	if (why) {
		sp_err("%s '%s': %s", where, q->text, why);
		return -EINVAL;
	}
	for (i = 1; i < q->nprobes; i++)
		if (!strcmp(q->provider[i], q->provider[0]) &&
		    !strcmp(q->probe[i], q->probe[0])) {
			sp_err("%s '%s': %s:%s is both BEGIN and END",
			       where, q->text, q->provider[0], q->probe[0]);
			return -EINVAL;
		}
	for (i = 1; q->abandon && i < q->abandon; i++)
		if (!strcmp(q->provider[i], q->provider[q->abandon]) &&
		    !strcmp(q->probe[i], q->probe[q->abandon])) {
			sp_err("%s '%s': abandon=%s:%s is also an END",
			       where, q->text, q->provider[i], q->probe[i]);
			return -EINVAL;
		}
	return 0;
}

int query_spec__parse(const char *text, const char *where,
		      struct query_spec *out)
{
	struct query_spec q = { .arg = -1 };
	char *copy = strdup(text), *tok, *save = NULL;
	unsigned int seen = 0;
	int err = 0, field = 0;

	q.text = strdup(text);
	q.where = strdup(where);
	if (!copy || !q.text || !q.where) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (tok = strtok_r(copy, ",", &save); tok && !err;
	     tok = strtok_r(NULL, ",", &save), field++) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (field == 0 && !strchr(tok, '=')) {
			err = parse_probe(&q, 0, tok);
			if (err == -EINVAL)
				sp_err("%s '%s': '%s' is not PROVIDER:PROBE (expected %s)",
				       where, text, tok, SYNTAX);
			q.nprobes = err ? 0 : 1;
		} else if (field == 1 && strchr(tok, ':') && !strchr(tok, '=')) {
			err = parse_ends(&q, tok, where);
		} else if (field > 0 && (strchr(tok, '=') ||
					 !strcmp(tok, "outcomes") ||
					 !strcmp(tok, "serial"))) {
			err = parse_option(&q, tok, &seen, where);
		} else {
			sp_err("%s '%s': unexpected '%s' (expected %s)", where,
			       text, tok, SYNTAX);
			err = -EINVAL;
		}
	}
	if (!err)
		err = check_spec(&q, seen, where);
cleanup:
	free(copy);
	if (err)
		query_spec__free(&q);
	else
		*out = q;
	return err;
}

int query_spec__read_file(const char *path, struct query_spec **v, int *n)
{
	char *line = NULL, where[512];
	size_t cap = 0;
	int lineno = 0, err = 0, fd;
	ssize_t len;
	FILE *f;

	fd = input__open(path);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		err = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		sp_err("--query-file %s: %s", path, input__strerror(err));
		return err;
	}
	while (!err && (len = getline(&line, &cap, f)) >= 0) {
		char *s = line, *e;
		struct query_spec *nv;

		lineno++;
		if ((e = strchr(s, '#')))
			*e = 0;
		while (isspace((unsigned char)*s))
			s++;
		for (e = s + strlen(s); e > s && isspace((unsigned char)e[-1]);)
			*--e = 0;
		if (!*s)
			continue;
		nv = realloc(*v, (size_t)(*n + 1) * sizeof(*nv));
		if (!nv) {
			err = -ENOMEM;
			break;
		}
		*v = nv;
		snprintf(where, sizeof(where), "%s:%d:", path, lineno);
		err = query_spec__parse(s, where, &nv[*n]);
		if (!err)
			(*n)++;
	}
	if (!err && ferror(f)) {
		err = -EIO;
		sp_err("--query-file %s: read error", path);
	}
	free(line);
	fclose(f);
	return err;
}

const char *query_spec__where(const struct query_spec *q, char *buf,
			      size_t len)
{
	snprintf(buf, len, "%s '%s'", q->where ? q->where : "--query",
		 q->text);
	return buf;
}

int query_spec__arg_need(const struct query_spec *q, int p,
			 const char **what)
{
	int need = -1;

	*what = NULL;
	/* BEGIN (or the cache probe) reads the name and if=; an END hit=,
	 * as does a cache probe. */
	if (p == 0 && q->arg >= 0) {
		need = q->arg;
		*what = "name=";
	}
	if (p == 0 && q->cond.op && q->cond.arg > need) {
		need = q->cond.arg;
		*what = "if=";
	}
	/* The abandon= probe reads nothing. */
	if ((p > 0 || q->cache) && (!q->abandon || p != q->abandon) &&
	    q->hit.op && q->hit.arg > need) {
		need = q->hit.arg;
		*what = "hit=";
	}
	return need;
}

int query_spec__args_check(const struct query_spec *q, int p,
			   const char *path, int nargs)
{
	const char *what;
	char wbuf[640], has[64];
	int need = query_spec__arg_need(q, p, &what);

	/* nargs < 0: a spec usdt_args__parse() cannot read, said when
	 * attaching. */
	if (need < 0 || nargs < 0 || need < nargs)
		return 0;
	if (!nargs)
		snprintf(has, sizeof(has), "it has none");
	else if (nargs == 1)
		snprintf(has, sizeof(has), "arg0 is its only one");
	else
		snprintf(has, sizeof(has), "it has arg0..arg%d", nargs - 1);
	sp_err("%s: %s: probe %s:%s has %d argument%s: %sarg%d names none (%s; sptrace list %s shows each probe's arguments)",
	       query_spec__where(q, wbuf, sizeof(wbuf)), path, q->provider[p],
	       q->probe[p], nargs, nargs == 1 ? "" : "s", what, need, has,
	       path);
	return -EINVAL;
}

const char *query_spec__label(const struct query_spec *q)
{
	if (q->name_type == SP_SPEC_NAME_FIXED && q->literal)
		return q->literal;
	if (q->name_type == SP_SPEC_NAME_INT && q->literal && q->literal[1])
		return q->literal;	/* "PREFIX:" */
	return q->probe[0];
}

void query_spec__free(struct query_spec *q)
{
	int i;

	free(q->text);
	free(q->where);
	for (i = 0; i < QUERY_SPEC_MAX_PROBES; i++) {
		free(q->provider[i]);
		free(q->probe[i]);
		free(q->label[i]);
	}
	free(q->literal);
	free(q->stack);
	memset(q, 0, sizeof(*q));
}

/* The same spec twice (its text, as given: --query S --query S, or a line
 * of --query-file given again with --query) would count every event twice. */
static bool same_spec(const struct query_spec *a, const struct query_spec *b)
{
	return !strcmp(a->text, b->text);
}

int query_spec__check_unique(const struct query_spec *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++) {
		for (j = 0; j < i; j++) {
			if (!same_spec(&v[i], &v[j]))
				continue;
			sp_err("%s '%s': the same spec as %s (its rows would "
			       "count every event twice; give it once)",
			       v[i].where, v[i].text, v[j].where);
			return -EINVAL;
		}
	}
	return 0;
}
