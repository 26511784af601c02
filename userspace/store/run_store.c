// SPDX-License-Identifier: MIT
/* Storing a run in the history database (run_store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "history_db.h"
#include "log.h"
#include "run_load.h"
#include "run_store.h"
#include "summary.h"
#include "trace_format.h"

int run_store(struct history_db *h, const char *label, const char *source,
	      const struct run_origin *o, int64_t started_at,
	      const struct summary *s, const struct mem_report *mr,
	      int64_t *id)
{
	struct history_run meta = { .started_at = started_at };
	int err;

	meta.duration_ns = s->duration_ns;
	err = history_run__describe(&meta, o->cmd, o->pids, o->npids,
				    o->binaries, o->nbinaries);
	if (!err)
		err = history_run__fill(&meta, label, source);
	if (!err)
		err = history_db__store(h, &meta, s, mr, id);
	history_run__free(&meta);
	return err;
}

/* What the file says of its run: a trace file's header has the start
 * time, command, pids and version; a JSON summary has none of them, so its
 * run is dated by the file's modification time. */
int run_store__describe(const char *path, struct history_run *r)
{
	const struct trace_header *th;
	struct trace_reader *tr;
	struct stat sb;
	char msg[512];
	int i, err = 0;

	if (!trace_reader__open(path, &tr, msg, sizeof(msg))) {
		int pids[TRACE_MAX_PIDS];
		char *argv[2] = { NULL, NULL };

		th = trace_reader__header(tr);
		r->started_at = (int64_t)(th->start_realtime_ns / 1000000000ull);
		for (i = 0; i < (int)th->npids && i < TRACE_MAX_PIDS; i++)
			pids[i] = (int)th->pids[i];
		argv[0] = th->cmdline && th->cmdline[0] ? th->cmdline : NULL;
		err = history_run__describe(r, argv, pids, i, NULL, 0);
		if (!err && th->version && th->version[0] &&
		    !(r->version = strdup(th->version)))
			err = -ENOMEM;
		trace_reader__close(tr);
	} else if (!stat(path, &sb)) {
		r->started_at = (int64_t)sb.st_mtime;
	}
	return err;
}

int run_store__import(const char *db, const char *label, const char *path,
		      int64_t *id)
{
	struct history_run meta = { 0 };
	struct summary s;
	char *source;
	int err;

	summary__init(&s);
	err = run_load__file(path, &s);
	if (!err && asprintf(&source, "import:%s", path) < 0)
		err = -ENOMEM;
	if (!err) {
		err = run_store__describe(path, &meta);
		if (!err)
			err = history_run__fill(&meta, label, source);
		free(source);
		if (err == -ENOMEM)
			sp_err("out of memory");
	}
	if (!err) {
		meta.duration_ns = s.duration_ns;
		err = history_db__store_file(db, &meta, &s, NULL, id);
	}
	history_run__free(&meta);
	summary__free(&s);
	return err;
}
