// SPDX-License-Identifier: MIT
/*
 * The recorder (recorder.h): every probe event of a session streams from
 * the query program's ring buffer into a trace file. The kernel still
 * aggregates, with the very same timestamps, so the live summary of the
 * same run can be read at the end and `sptrace summarize` of the trace
 * must agree with it.
 *
 * Names arrive as addresses in the target; each (pid, address) is resolved
 * to a string once (address-space snapshots, see addr_space.c) and interned
 * in the trace's string table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <sptrace/query_abi.h>	/* the skeleton's types */
#include <sptrace/record_abi.h>
#include "clock.h"
#include "log.h"
#include "proc_title.h"
#include <sptrace/tsc_map.h>	/* the .bss of query.skel.h */
#include "query.skel.h"
#include "query_maps.h"
#include "recorder.h"

#define FILTERED UINT32_MAX

static char **split_names(char *arg)
{
	char **v, *tok, *save = NULL;
	size_t n = 0;

	v = calloc(strlen(arg) / 2 + 2, sizeof(*v));
	if (!v)
		return NULL;
	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		v[n++] = tok;
	return v;
}

static bool kept(const struct recorder *rec, const char *name)
{
	char *const *p;

	if (!rec->only)
		return true;
	for (p = rec->only; *p; p++)
		if (!strcmp(*p, name))
			return true;
	return false;
}

static uint32_t name_hash(uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 47)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32);
}

static int grow_names(struct recorder *rec)
{
	uint32_t cap = rec->cap ? rec->cap * 2 : 1024, i, j;
	struct name_key *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < rec->cap; i++) {
		if (!rec->names[i].used)
			continue;
		for (j = name_hash(rec->names[i].pid, rec->names[i].addr) &
			 (cap - 1);
		     v[j].used; j = (j + 1) & (cap - 1))
			;
		v[j] = rec->names[i];
	}
	free(rec->names);
	rec->names = v;
	rec->cap = cap;
	return 0;
}

/* The string id of the name at `addr` in `pid`, resolved once. */
static int name_id(struct recorder *rec, uint32_t pid, uint64_t addr,
		   uint32_t *id)
{
	char buf[SP_NAME_LEN];
	struct name_key *k;
	uint32_t j;
	int err;

	if (rec->cap) {
		for (j = name_hash(pid, addr) & (rec->cap - 1);
		     rec->names[j].used; j = (j + 1) & (rec->cap - 1)) {
			k = &rec->names[j];
			if (k->pid == pid && k->addr == addr) {
				*id = k->id;
				return 0;
			}
		}
	}
	if ((rec->nnames + 1) * 2 > rec->cap && (err = grow_names(rec)))
		return err;
	/* --func and --query rows are tagged: their names are in tables. */
	err = addr ? query_provider__tag_name(&rec->qp, addr, buf, sizeof(buf))
		   : 0;
	if (!addr)
		buf[0] = 0;
	else if (err == -ENOENT)
		snprintf(buf, sizeof(buf), "<unknown name 0x%llx>",
			 (unsigned long long)addr);
	else if (err && addr_spaces__read_str(&rec->ss.spaces, (pid_t)pid,
					      addr, buf, sizeof(buf)) &&
		 /* A child whose fork event came after the session last
		  * read them, gone before this drain: its parent's files
		  * have the name once the fork is taken in. */
		 (session__follow_catch_up(&rec->ss) ||
		  addr_spaces__read_str(&rec->ss.spaces, (pid_t)pid, addr, buf,
					sizeof(buf))))
		snprintf(buf, sizeof(buf), "<unreadable name 0x%llx in pid %u>",
			 (unsigned long long)addr, pid);
	if (!kept(rec, buf)) {
		*id = FILTERED;
	} else {
		err = trace_writer__string(rec->w, buf, id);
		if (err)
			return err;
	}
	for (j = name_hash(pid, addr) & (rec->cap - 1); rec->names[j].used;
	     j = (j + 1) & (rec->cap - 1))
		;
	rec->names[j] = (struct name_key){ .addr = addr, .pid = pid,
					   .id = *id, .used = true };
	rec->nnames++;
	return 0;
}

/*
 * Before a process's first event, its title (proc_title.h) as an
 * SP_EV_PROCESS_TITLE event: read while it is known to run, so export can
 * name its track. Readers of format 1.0 ignore the kind. 0 or -errno.
 */
static int title_event(struct recorder *rec, const struct sp_rec_event *e)
{
	size_t lo = 0, hi = rec->ntitled;
	char title[PROC_TITLE_MAX];
	struct trace_event ev;
	int err;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rec->titled[mid] == e->pid)
			return 0;
		if (rec->titled[mid] < e->pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (rec->ntitled == rec->titled_cap) {
		size_t cap = rec->titled_cap ? 2 * rec->titled_cap : 64;
		uint32_t *v = realloc(rec->titled, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rec->titled = v;
		rec->titled_cap = cap;
	}
	memmove(&rec->titled[lo + 1], &rec->titled[lo],
		(rec->ntitled - lo) * sizeof(*rec->titled));
	rec->titled[lo] = e->pid;
	rec->ntitled++;
	if (proc_title__read((pid_t)e->pid, title))
		return 0;	/* gone already: no title */
	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = e->ts_ns;
	ev.pid = e->pid;
	ev.tid = e->tid;
	ev.kind = SP_EV_PROCESS_TITLE;
	err = trace_writer__string(rec->w, title, &ev.name_id);
	return err ? err : trace_writer__event(rec->w, &ev);
}

/* One event, into the file: its name resolved, --only applied, its
 * process's title before its first event. */
static int record_event(struct recorder *rec, const struct sp_rec_event *e)
{
	struct trace_event ev;
	int err = 0;

	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = e->ts_ns;
	ev.pid = e->pid;
	ev.tid = e->tid;
	ev.kind = (uint16_t)e->kind;
	ev.arg1 = e->arg1;
	ev.arg2 = e->arg2;
	if (e->kind == SP_EV_PAUSE)
		ev.name_id = TRACE_NO_STRING;	/* names nothing */
	else
		err = name_id(rec, e->pid, e->name, &ev.name_id);
	if (!err && ev.name_id == FILTERED && e->kind != SP_EV_THREAD_EXIT &&
	    e->kind != SP_EV_PAUSE) {
		rec->filtered++;
		return 0;
	}
	if (!err)
		err = title_event(rec, e);
	if (!err)
		err = trace_writer__event(rec->w, &ev);
	return err;
}

/* A ring-buffer record: one event, or a batch of one thread's batched
 * events (record_abi.h: struct sp_rec_batch), each written as the
 * per-event path writes it. */
static int on_event(void *ctx, void *data, size_t size)
{
	const struct sp_rec_event *e = data;
	const struct sp_rec_item *it;
	struct recorder *rec = ctx;
	struct sp_rec_event one;
	uint64_t i, n;
	int err = 0;

	if (size < sizeof(*e) || rec->err)
		return 0;
	rec->records++;
	if (e->kind != SP_REC_BATCH) {
		rec->events++;
		err = record_event(rec, e);
		if (err)
			rec->err = err;
		return 0;
	}
	n = e->arg1;
	if (n > (size - sizeof(*e)) / sizeof(*it))
		n = (size - sizeof(*e)) / sizeof(*it);	/* never: BPF sized it */
	it = (const struct sp_rec_item *)(e + 1);
	one = *e;
	rec->batches++;
	for (i = 0; i < n && !err; i++) {
		one.ts_ns = it[i].ts_ns;
		one.name = it[i].name;
		one.arg1 = it[i].arg1;
		one.kind = it[i].kind;
		rec->events++;
		err = record_event(rec, &one);
	}
	if (err)
		rec->err = err;
	return 0;
}

/* From the wait loop: drain the ring buffer; end a chunk every second so
 * a crash loses at most about a second of events. */
static int drain(void *ctx)
{
	struct recorder *rec = ctx;
	int n = ring_buffer__consume(rec->rb);

	if (n < 0 && !rec->err)
		rec->err = n;
	if (!rec->err && now_ns() - rec->last_flush_ns >= 1000000000ull) {
		rec->err = trace_writer__flush(rec->w);
		rec->last_flush_ns = now_ns();
	}
	if (rec->err)
		sp_err("cannot record events: %s", strerror(-rec->err));
	return rec->err;
}

int recorder__init(struct recorder *rec, const struct session_opts *so,
		   struct trace_writer *w, const char *only)
{
	struct session_provider p;

	int err;

	memset(rec, 0, sizeof(*rec));
	rec->w = w;
	session__init(&rec->ss, so);
	query_provider__init(&rec->qp, &p);
	err = session__add(&rec->ss, &p);
	if (!err && only && (!(rec->only_buf = strdup(only)) ||
			     !(rec->only = split_names(rec->only_buf))))
		err = -ENOMEM;
	return err;
}

int recorder__run(struct recorder *rec)
{
	int err;

	err = session__start(&rec->ss);
	if (err)
		return err;
	rec->started = true;
	/* The trace starts when counting did (its header is not written
	 * yet: nothing was drained). */
	err = trace_writer__set_start(rec->w, rec->ss.start_realtime_ns,
				      rec->ss.start_ns);
	if (err) {
		sp_err("cannot set the trace's start: %s", strerror(-err));
		return err;
	}
	rec->rb = ring_buffer__new(bpf_map__fd(rec->qp.skel->maps.events),
				   on_event, rec, NULL);
	if (!rec->rb) {
		err = -errno;
		sp_err("cannot open the ring buffer: %s", strerror(-err));
		return err;
	}
	rec->last_flush_ns = now_ns();
	return session__run(&rec->ss, ring_buffer__epoll_fd(rec->rb), drain,
			    rec);
}

uint64_t recorder__lost(const struct recorder *rec)
{
	uint64_t lost = 0;

	if (rec->qp.skel && query_maps__lost(rec->qp.skel, &lost))
		lost = 0;
	return lost;
}

void recorder__destroy(struct recorder *rec)
{
	ring_buffer__free(rec->rb);
	rec->rb = NULL;
	session__destroy(&rec->ss);
	free(rec->names);
	free(rec->only);
	free(rec->only_buf);
	rec->only_buf = NULL;
	free(rec->titled);
	rec->names = NULL;
	rec->only = NULL;
	rec->titled = NULL;
	rec->ntitled = rec->titled_cap = 0;
}
