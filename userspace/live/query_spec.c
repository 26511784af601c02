// SPDX-License-Identifier: MIT
/*
 * Parsing of --query specs (see query_spec.h) and of spec files.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sptrace/query_abi.h>
#include "log.h"
#include "query_spec.h"

#define SYNTAX "PROVIDER:BEGIN,PROVIDER:END,name=argN[,kind=blocked|incr] or PROVIDER:PROBE,name=argN,kind=cache"

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

/* "PROVIDER:PROBE" into q's probe slot i. */
static int parse_probe(struct query_spec *q, int i, const char *tok)
{
	const char *colon = strchr(tok, ':');

	if (!colon || !is_ident(tok, (size_t)(colon - tok)) ||
	    !is_ident(colon + 1, strlen(colon + 1)))
		return -EINVAL;
	q->provider[i] = strndup(tok, (size_t)(colon - tok));
	q->probe[i] = strdup(colon + 1);
	return q->provider[i] && q->probe[i] ? 0 : -ENOMEM;
}

/* name=argN or name=LITERAL (optionally quoted). */
static int parse_name(struct query_spec *q, const char *v, const char *where)
{
	size_t len = strlen(v), i;
	char *end;
	long n;

	if (!strncmp(v, "arg", 3) && isdigit((unsigned char)v[3])) {
		errno = 0;
		n = strtol(v + 3, &end, 10);
		if (*end || errno || n < 0 || n >= QUERY_SPEC_MAX_ARGS) {
			sp_err("%s '%s': name=%s: no such argument (USDT probes have arg0..arg%d)",
			       where, q->text, v, QUERY_SPEC_MAX_ARGS - 1);
			return -EINVAL;
		}
		q->arg = (int)n;
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
		sp_err("%s '%s': name=%s: expected argN (a string argument) or a fixed name of printable characters",
		       where, q->text, v);
		return -EINVAL;
	}
	q->arg = -1;
	q->literal = strndup(v, len);
	return q->literal ? 0 : -ENOMEM;
}

int query_spec__parse(const char *text, const char *where,
		      struct query_spec *out)
{
	struct query_spec q = { .arg = -1 };
	char *copy = strdup(text), *tok, *save = NULL;
	bool have_name = false, have_kind = false;
	int err = 0;

	q.text = strdup(text);
	if (!copy || !q.text) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (tok = strtok_r(copy, ",", &save); tok && !err;
	     tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (!strncmp(tok, "name=", 5)) {
			if (have_name) {
				sp_err("%s '%s': name= given twice", where, text);
				err = -EINVAL;
				break;
			}
			have_name = true;
			err = parse_name(&q, tok + 5, where);
		} else if (!strncmp(tok, "kind=", 5)) {
			const char *k = tok + 5;

			have_kind = true;
			q.cache = !strcmp(k, "cache");
			if (!strcmp(k, "query") || q.cache)
				q.kind = SP_FRAME_QUERY;
			else if (!strcmp(k, "blocked"))
				q.kind = SP_FRAME_BLOCKED;
			else if (!strcmp(k, "incr"))
				q.kind = SP_FRAME_INCR_LOAD;
			else {
				sp_err("%s '%s': unknown kind '%s' (expected query, blocked, incr or cache)",
				       where, text, k);
				err = -EINVAL;
			}
		} else if (q.nprobes < 2 && !have_name && !have_kind &&
			   !strchr(tok, '=')) {
			err = parse_probe(&q, q.nprobes++, tok);
			if (err == -EINVAL)
				sp_err("%s '%s': '%s' is not PROVIDER:PROBE (expected %s)",
				       where, text, tok, SYNTAX);
		} else {
			sp_err("%s '%s': unexpected '%s' (expected %s)", where,
			       text, tok, SYNTAX);
			err = -EINVAL;
		}
	}
	if (err)
		goto cleanup;
	if (!q.nprobes || !have_name) {
		sp_err("%s '%s': %s (expected %s)", where, text,
		       !q.nprobes ? "no probe" : "no name= (argN or a fixed name)",
		       SYNTAX);
		err = -EINVAL;
	} else if (q.cache && q.nprobes != 1) {
		sp_err("%s '%s': kind=cache takes one probe, not a BEGIN,END pair",
		       where, text);
		err = -EINVAL;
	} else if (!q.cache && q.nprobes != 2) {
		sp_err("%s '%s': one probe is a cache-hit counter: add kind=cache, or give BEGIN and END probes",
		       where, text);
		err = -EINVAL;
	}
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
	int lineno = 0, err = 0;
	ssize_t len;
	FILE *f;

	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		sp_err("--query-file %s: %s", path, strerror(-err));
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

void query_spec__free(struct query_spec *q)
{
	free(q->text);
	free(q->provider[0]);
	free(q->provider[1]);
	free(q->probe[0]);
	free(q->probe[1]);
	free(q->literal);
	memset(q, 0, sizeof(*q));
}
