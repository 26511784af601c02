// SPDX-License-Identifier: MIT
/*
 * The export writers (export.h). Intervals come from replay.c, so a slice
 * in Perfetto or a frame in a flame graph has exactly the self and total
 * time `summarize` counts for it; frames replay could not pair (unbalanced
 * BEGIN/END) are left out as they are in the summary, and counted in the
 * stats for the caller's warning.
 *
 * Folded stacks need each enclosing frame's kind (a query inside an
 * incremental load shows under "name [incr]"), but replay only reports the
 * enclosing frames' names. A shadow stack of kinds per thread follows
 * replay: a BEGIN that replay kept (its stack_overflow count did not move)
 * pushes, a closed interval truncates to the depth replay reports, a thread
 * exit empties it. So the shadow always matches replay's frames.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "text.h"
#include "export.h"
#include "json_writer.h"
#include "replay.h"
#include "table.h"
#include "text.h"
#include "summary.h"

static const char *const kind_names[SP_EV__MAX] = {
	[SP_EV_QUERY_BEGIN] = "query_begin",
	[SP_EV_QUERY_END] = "query_end",
	[SP_EV_CACHE_HIT] = "cache_hit",
	[SP_EV_INCR_LOAD_BEGIN] = "incr_load_begin",
	[SP_EV_INCR_LOAD_END] = "incr_load_end",
	[SP_EV_BLOCKED_BEGIN] = "blocked_begin",
	[SP_EV_BLOCKED_END] = "blocked_end",
	[SP_EV_MARK] = "mark",
	[SP_EV_ALLOC] = "alloc",
	[SP_EV_FREE] = "free",
	[SP_EV_THREAD_NAME] = "thread_name",
	[SP_EV_THREAD_EXIT] = "thread_exit",
	[SP_EV_PROCESS_TITLE] = "process_title",
	[SP_EV_PAUSE] = "pause",
};

const char *export__kind_name(uint32_t kind)
{
	return kind < SP_EV__MAX ? kind_names[kind] : NULL;
}

static const char *name_of(const struct export_source *src, uint32_t id)
{
	return id == TRACE_NO_STRING ? NULL : src->string(src->ctx, id);
}

static void stats_from_replay(struct export_stats *st, const struct replay *r)
{
	unsigned int i;

	for (i = 0; i < SP_ERR__MAX; i++)
		st->errors[i] += r->errors[i];
	st->open_at_end += r->open_at_end;
}

/* ---- Chrome trace event JSON ---- */

struct chrome {
	struct json_writer w;
	const struct export_source *src;
	uint64_t base;
};

/* Microseconds since the base with ns precision: "12.345", "-0.001". */
static void chrome_us(struct json_writer *w, const char *key, uint64_t ns,
		      uint64_t base)
{
	uint64_t d = ns >= base ? ns - base : base - ns;
	char num[32];

	snprintf(num, sizeof(num), "%s%" PRIu64 ".%03u", ns >= base ? "" : "-",
		 d / 1000, (unsigned int)(d % 1000));
	jsonw__name(w, key);
	jsonw__number(w, num);
}

/* A u64 as a JSON string: Chrome shows otherData as text, and a u64 may
 * not fit a reader's double. */
static void u64_string_field(struct json_writer *w, const char *key,
			     uint64_t v)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	jsonw__string_field(w, key, num);
}

/* Starts an event (left open) with the fields every one has. */
static void chrome_begin(struct chrome *c, const char *ph, uint32_t name_id,
			 const char *name, const char *cat, uint64_t ts,
			 uint32_t pid, uint32_t tid)
{
	struct json_writer *w = &c->w;

	if (!name)
		name = name_of(c->src, name_id);
	jsonw__break(w);
	jsonw__start_object(w);
	jsonw__string_field(w, "name", name ? name : "[unknown]");
	if (cat)
		jsonw__string_field(w, "cat", cat);
	jsonw__string_field(w, "ph", ph);
	chrome_us(w, "ts", ts, c->base);
	jsonw__u64_field(w, "pid", pid);
	jsonw__u64_field(w, "tid", tid);
}

static int chrome_interval(void *ctx, const struct replay_interval *iv)
{
	static const char *const cats[SP_FRAME__MAX] = {
		[SP_FRAME_QUERY] = "query",
		[SP_FRAME_BLOCKED] = "blocked",
		[SP_FRAME_INCR_LOAD] = "incr_load",
	};
	struct chrome *c = ctx;
	struct json_writer *w = &c->w;

	if (iv->cache_hit) {
		chrome_begin(c, "i", iv->name_id, NULL, "cache_hit",
			     iv->start_ns, iv->pid, iv->tid);
		jsonw__string_field(w, "s", "t");
		jsonw__end_object(w);
		return 0;
	}
	chrome_begin(c, "X", iv->name_id, NULL,
		     iv->kind < SP_FRAME__MAX ? cats[iv->kind] : "query",
		     iv->start_ns, iv->pid, iv->tid);
	chrome_us(w, "dur", iv->total_ns, 0);
	jsonw__name(w, "args");
	jsonw__start_object(w);
	jsonw__u64_field(w, "self_ns", iv->self_ns);
	jsonw__end_object(w);
	jsonw__end_object(w);
	return 0;
}

static void chrome_other(struct json_writer *w, const struct export_info *info,
			 const struct export_stats *st)
{
	unsigned int i;

	jsonw__name(w, "otherData");
	jsonw__start_object(w);
	jsonw__string_field(w, "producer", "sptrace");
	if (info->source)
		jsonw__string_field(w, "source", info->source);
	if (info->version)
		jsonw__string_field(w, "version", info->version);
	if (info->cmdline && info->cmdline[0])
		jsonw__string_field(w, "cmdline", info->cmdline);
	if (info->start_realtime_ns)
		u64_string_field(w, "start_realtime_ns",
				 info->start_realtime_ns);
	u64_string_field(w, "base_monotonic_ns", info->base_ns);
	for (i = 0; i < SP_ERR__MAX; i++)
		if (st->errors[i])
			u64_string_field(w, summary__error_name(i),
					 st->errors[i]);
	if (st->open_at_end)
		u64_string_field(w, "open_at_end", st->open_at_end);
	jsonw__end_object(w);
}

/* The processes seen, in order of their first event, and the string id
 * of each one's title (TRACE_NO_STRING: none in the file). */
struct pids {
	uint32_t *v;
	uint32_t *title;
	size_t n, cap;
};

/* The index of `pid`, added if new; -ENOMEM. */
static int pids_add(struct pids *p, uint32_t pid)
{
	size_t i;

	for (i = p->n; i-- > 0; )
		if (p->v[i] == pid)
			return (int)i;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		uint32_t *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		v = realloc(p->title, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->title = v;
		p->cap = cap;
	}
	if (p->n >= INT_MAX)
		return -ENOMEM;
	p->title[p->n] = TRACE_NO_STRING;
	p->v[p->n++] = pid;
	return (int)(p->n - 1);
}

/*
 * A "process_name" metadata event per process, so Perfetto names a track
 * group instead of showing a bare PID: its title where the file has one
 * (SP_EV_PROCESS_TITLE, format 1.1). Else, from the launched command line:
 * the first process seen is that command, later ones (--follow) its
 * descendants. Without a command line (-p, -b) the process is named as
 * what it is to sptrace.
 */
static void chrome_process_names(struct chrome *c, const struct pids *p,
				 const struct export_info *info)
{
	const char *cmd = info->cmdline && info->cmdline[0] ? info->cmdline : NULL;
	const char *base = NULL, *sl;
	size_t i, len = 0;

	if (cmd) {
		len = strcspn(cmd, " ");
		base = cmd;
		for (sl = cmd; sl < cmd + len; sl++)
			if (*sl == '/')
				base = sl + 1;
		len -= (size_t)(base - cmd);
	}
	for (i = 0; i < p->n; i++) {
		const char *title = p->title[i] == TRACE_NO_STRING ? NULL :
				    name_of(c->src, p->title[i]);
		char *name = NULL;

		chrome_begin(c, "M", 0, "process_name", NULL, c->base, p->v[i],
			     p->v[i]);
		if (title) {
			jsonw__name(&c->w, "args");
			jsonw__start_object(&c->w);
			jsonw__string_field(&c->w, "name", title);
			jsonw__end_object(&c->w);
			jsonw__end_object(&c->w);
			continue;
		}
		if (cmd && i &&
		    asprintf(&name, "%.*s: descendant", (int)len, base) < 0)
			name = NULL;
		jsonw__name(&c->w, "args");
		jsonw__start_object(&c->w);
		jsonw__string_field(&c->w, "name", !cmd ? "traced process" :
				    !i ? cmd : name ? name : "descendant");
		jsonw__end_object(&c->w);
		jsonw__end_object(&c->w);
		free(name);
	}
}

int export__chrome(FILE *out, const struct export_source *src,
		   const struct export_info *info, struct export_stats *stats)
{
	struct pids pids = { 0 };
	static const struct export_info no_info;
	struct export_stats local;
	struct trace_event ev;
	const char *name;
	struct chrome c;
	struct json_writer *w = &c.w;
	struct replay r;
	int ret, idx;

	if (!info)
		info = &no_info;
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	c = (struct chrome){ .src = src, .base = info->base_ns };
	jsonw__init(w, out);
	replay__init(&r, chrome_interval, &c);
	jsonw__start_object(w);
	jsonw__name(w, "traceEvents");
	jsonw__start_array(w);
	while ((ret = src->next(src->ctx, &ev)) == 1) {
		stats->events++;
		idx = pids_add(&pids, ev.pid);
		if (idx >= 0 && ev.kind == SP_EV_PROCESS_TITLE)
			pids.title[idx] = ev.name_id;	/* the last one wins */
		ret = idx < 0 ? idx : replay__event(&r, &ev);
		if (ret)
			break;
		if (ev.kind == SP_EV_THREAD_NAME) {
			chrome_begin(&c, "M", 0, "thread_name", NULL, ev.ts_ns,
				     ev.pid, ev.tid);
			name = name_of(src, ev.name_id);
			jsonw__name(w, "args");
			jsonw__start_object(w);
			jsonw__string_field(w, "name", name ? name : "");
			jsonw__end_object(w);
			jsonw__end_object(w);
		} else if (ev.kind == SP_EV_MARK) {
			chrome_begin(&c, "i", ev.name_id, NULL, "mark", ev.ts_ns,
				     ev.pid, ev.tid);
			jsonw__string_field(w, "s", "t");
			jsonw__name(w, "args");
			jsonw__start_object(w);
			jsonw__u64_field(w, "key", ev.arg1);
			jsonw__end_object(w);
			jsonw__end_object(w);
		}
	}
	replay__finish(&r);
	stats_from_replay(stats, &r);
	replay__free(&r);
	if (!ret)
		chrome_process_names(&c, &pids, info);
	free(pids.v);
	free(pids.title);
	if (ret < 0)
		return ret;
	jsonw__break(w);
	jsonw__end_array(w);
	jsonw__break(w);
	jsonw__string_field(w, "displayTimeUnit", "ns");
	jsonw__break(w);
	chrome_other(w, info, stats);
	jsonw__end_object(w);
	fputc('\n', out);
	return jsonw__finish(w);
}

/* ---- Folded stacks ---- */

struct shadow {
	uint32_t pid, tid;
	bool used;
	uint32_t depth;
	uint8_t kinds[SP_MAX_DEPTH];
};

struct stack_ent {
	char *key;		/* owned; NULL: empty slot */
	uint64_t weight;
};

struct folded {
	const struct export_source *src;
	struct shadow *threads;		/* open addressing by (pid, tid) */
	uint32_t nthreads, tcap;
	struct stack_ent *stacks;	/* open addressing by key */
	size_t nstacks, scap;
	char *buf;			/* the stack being built */
	size_t len, cap;
};

static uint32_t tid_hash(uint32_t pid, uint32_t tid)
{
	return (pid * 2654435761u) ^ (tid * 40503u);
}

static int shadow_grow(struct folded *f)
{
	uint32_t cap = f->tcap ? f->tcap * 2 : 64, i, j;
	struct shadow *v;

	if (cap <= f->tcap)
		return -ENOMEM;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < f->tcap; i++) {
		if (!f->threads[i].used)
			continue;
		for (j = tid_hash(f->threads[i].pid, f->threads[i].tid) &
			 (cap - 1); v[j].used; j = (j + 1) & (cap - 1))
			;
		v[j] = f->threads[i];
	}
	free(f->threads);
	f->threads = v;
	f->tcap = cap;
	return 0;
}

/* The thread's shadow stack; NULL if absent (and !create) or on ENOMEM. */
static struct shadow *shadow_get(struct folded *f, uint32_t pid, uint32_t tid,
				 bool create)
{
	uint32_t j;

	if (f->tcap) {
		for (j = tid_hash(pid, tid) & (f->tcap - 1); f->threads[j].used;
		     j = (j + 1) & (f->tcap - 1))
			if (f->threads[j].pid == pid && f->threads[j].tid == tid)
				return &f->threads[j];
	}
	if (!create)
		return NULL;
	if ((f->nthreads + 1) * 2 > f->tcap && shadow_grow(f))
		return NULL;
	for (j = tid_hash(pid, tid) & (f->tcap - 1); f->threads[j].used;
	     j = (j + 1) & (f->tcap - 1))
		;
	f->threads[j].used = true;
	f->threads[j].pid = pid;
	f->threads[j].tid = tid;
	f->nthreads++;
	return &f->threads[j];
}

static int buf_put(struct folded *f, const char *s, size_t n)
{
	if (n > SIZE_MAX / 2 - f->len)
		return -ENOMEM;
	if (f->len + n + 1 > f->cap) {
		size_t cap = f->cap ? f->cap : 256;
		char *v;

		while (cap < f->len + n + 1)
			cap *= 2;
		v = realloc(f->buf, cap);
		if (!v)
			return -ENOMEM;
		f->buf = v;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, s, n);
	f->len += n;
	f->buf[f->len] = '\0';
	return 0;
}

/* One frame, made safe for the line format (see export.h). */
static int put_frame(struct folded *f, uint32_t name_id, uint32_t kind)
{
	const char *name = name_of(f->src, name_id), *p;
	uint32_t cp;
	int n, err = 0;

	if (!name)
		name = "[unknown]";
	else if (!*name)
		name = "[empty]";
	for (p = name; !err && *p; p += n) {
		n = text__utf8_next(p, &cp);
		if (!n) {
			err = buf_put(f, "\xef\xbf\xbd", 3);
			n = 1;
		} else if (cp == ';') {
			err = buf_put(f, ":", 1);
		} else if (cp < 0x20 || cp == 0x7f) {
			err = buf_put(f, "?", 1);
		} else {
			err = buf_put(f, p, (size_t)n);
		}
	}
	if (!err && kind == SP_FRAME_BLOCKED)
		err = buf_put(f, " [blocked]", 10);
	else if (!err && kind == SP_FRAME_INCR_LOAD)
		err = buf_put(f, " [incr]", 7);
	return err;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int stacks_grow(struct folded *f)
{
	size_t cap = f->scap ? f->scap * 2 : 256, i, j;
	struct stack_ent *v;

	if (cap <= f->scap || cap > SIZE_MAX / sizeof(*v))
		return -ENOMEM;
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < f->scap; i++) {
		if (!f->stacks[i].key)
			continue;
		for (j = str_hash(f->stacks[i].key) & (cap - 1); v[j].key;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = f->stacks[i];
	}
	free(f->stacks);
	f->stacks = v;
	f->scap = cap;
	return 0;
}

/* Adds w to the stack in f->buf. */
static int stacks_add(struct folded *f, uint64_t w)
{
	struct stack_ent *e;
	size_t j;

	if ((f->nstacks + 1) * 2 > f->scap && stacks_grow(f))
		return -ENOMEM;
	for (j = str_hash(f->buf) & (f->scap - 1); f->stacks[j].key;
	     j = (j + 1) & (f->scap - 1)) {
		e = &f->stacks[j];
		if (!strcmp(e->key, f->buf)) {
			e->weight = e->weight > UINT64_MAX - w ? UINT64_MAX :
								 e->weight + w;
			return 0;
		}
	}
	e = &f->stacks[j];
	e->key = strdup(f->buf);
	if (!e->key)
		return -ENOMEM;
	e->weight = w;
	f->nstacks++;
	return 0;
}

static int folded_interval(void *ctx, const struct replay_interval *iv)
{
	struct folded *f = ctx;
	struct shadow *sh;
	uint32_t i;
	int err = 0;

	if (iv->cache_hit)
		return 0;
	sh = shadow_get(f, iv->pid, iv->tid, false);
	f->len = 0;
	for (i = 0; !err && i < iv->depth; i++) {
		uint32_t kind = sh && i < sh->depth ? sh->kinds[i] :
						      SP_FRAME_QUERY;

		err = put_frame(f, iv->stack[i], kind);
		if (!err)
			err = buf_put(f, ";", 1);
	}
	if (!err)
		err = put_frame(f, iv->name_id, iv->kind);
	if (sh && iv->depth < sh->depth)
		sh->depth = iv->depth;
	if (!err && iv->self_ns)
		err = stacks_add(f, iv->self_ns);
	return err;
}

static int frame_begin_kind(uint32_t ev_kind)
{
	switch (ev_kind) {
	case SP_EV_QUERY_BEGIN: return SP_FRAME_QUERY;
	case SP_EV_BLOCKED_BEGIN: return SP_FRAME_BLOCKED;
	case SP_EV_INCR_LOAD_BEGIN: return SP_FRAME_INCR_LOAD;
	default: return -1;
	}
}

static int cmp_stack(const void *a, const void *b)
{
	const struct stack_ent *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static int folded_print(FILE *out, struct folded *f)
{
	size_t i, n = 0;

	/* Compact the table in place, then sort it. */
	for (i = 0; i < f->scap; i++)
		if (f->stacks[i].key)
			f->stacks[n++] = f->stacks[i];
	for (i = n; i < f->scap; i++)
		f->stacks[i].key = NULL;
	if (n > 1)
		qsort(f->stacks, n, sizeof(*f->stacks), cmp_stack);
	for (i = 0; i < n; i++)
		fprintf(out, "%s %" PRIu64 "\n", f->stacks[i].key,
			f->stacks[i].weight);
	return text__flush(out);
}

static void folded_free(struct folded *f)
{
	size_t i;

	for (i = 0; i < f->scap; i++)
		free(f->stacks[i].key);
	free(f->stacks);
	free(f->threads);
	free(f->buf);
}

int export__folded(FILE *out, const struct export_source *src,
		   struct export_stats *stats)
{
	struct folded f = { .src = src };
	struct export_stats local;
	struct trace_event ev;
	struct replay r;
	int ret, kind;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	replay__init(&r, folded_interval, &f);
	while ((ret = src->next(src->ctx, &ev)) == 1) {
		uint64_t overflows = r.errors[SP_ERR_STACK_OVERFLOW];
		struct shadow *sh;

		stats->events++;
		kind = frame_begin_kind(ev.kind);
		ret = replay__event(&r, &ev);
		if (ret)
			break;
		if (kind >= 0 && r.errors[SP_ERR_STACK_OVERFLOW] == overflows) {
			sh = shadow_get(&f, ev.pid, ev.tid, true);
			if (!sh) {
				ret = -ENOMEM;
				break;
			}
			if (sh->depth < SP_MAX_DEPTH)
				sh->kinds[sh->depth++] = (uint8_t)kind;
		} else if (ev.kind == SP_EV_THREAD_EXIT) {
			sh = shadow_get(&f, ev.pid, ev.tid, false);
			if (sh)
				sh->depth = 0;
		}
	}
	replay__finish(&r);
	stats_from_replay(stats, &r);
	replay__free(&r);
	if (!ret)
		ret = folded_print(out, &f);
	folded_free(&f);
	return ret < 0 ? ret : 0;
}

/* ---- Raw events as CSV ---- */

int export__csv(FILE *out, const struct export_source *src,
		struct export_stats *stats)
{
	struct export_stats local;
	struct trace_event ev;
	const char *kind, *name;
	int ret;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	fputs("ts_ns,pid,tid,kind,name,arg1,arg2\n", out);
	while ((ret = src->next(src->ctx, &ev)) == 1) {
		stats->events++;
		fprintf(out, "%" PRIu64 ",%" PRIu32 ",%" PRIu32 ",", ev.ts_ns,
			ev.pid, ev.tid);
		kind = export__kind_name(ev.kind);
		if (kind)
			fputs(kind, out);
		else
			fprintf(out, "unknown_%u", (unsigned int)ev.kind);
		fputc(',', out);
		name = name_of(src, ev.name_id);
		text__csv_field(out, name ? name : "");
		fprintf(out, ",%" PRIu64 ",%" PRIu64 "\n", ev.arg1, ev.arg2);
	}
	if (ret < 0)
		return ret;
	return text__flush(out);
}

int export__write(FILE *out, enum export_format fmt,
		  const struct export_source *src,
		  const struct export_info *info, struct export_stats *stats)
{
	switch (fmt) {
	case EXPORT_CHROME:
		return export__chrome(out, src, info, stats);
	case EXPORT_FOLDED:
		return export__folded(out, src, stats);
	case EXPORT_CSV:
		return export__csv(out, src, stats);
	default:
		return -EINVAL;
	}
}
