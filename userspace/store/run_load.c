// SPDX-License-Identifier: MIT
/*
 * Loading a run (run_load.h). A JSON summary's first non-blank byte is
 * '{', which no trace file starts with (its magic begins with 0x89);
 * anything else goes to the trace reader, whose error names the magic it
 * expected and found.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include "input.h"
#include "history_db.h"
#include "json_summary.h"
#include "log.h"
#include "run_load.h"
#include "summary.h"
#include "trace_summary.h"

/* The counters' own warnings need a summary writer; one line per run says
 * that its figures are affected and where to look. */
void run_load__warn(const char *name, const struct summary *s)
{
	if (summary__unbalanced(s) || summary__map_full(s) || s->lost)
		sp_warn("%s: %" PRIu64 " unbalanced, %" PRIu64 " map-full, %"
			PRIu64 " lost events: its figures undercount (its own "
			"report lists them)", name, summary__unbalanced(s),
			summary__map_full(s), s->lost);
}

/* 1 for a JSON summary, 0 for anything else; -errno (reported). */
static int is_json(const char *path)
{
	char buf[4096];
	ssize_t n, i;
	int fd, err;

	fd = input__open(path);
	if (fd < 0) {
		sp_err("%s: cannot open: %s", path, input__strerror(fd));
		return fd;
	}
	do {
		n = read(fd, buf, sizeof(buf));
	} while (n < 0 && errno == EINTR);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err) {
		sp_err("%s: read failed: %s", path, strerror(-err));
		return err;
	}
	for (i = 0; i < n; i++) {
		if (buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' &&
		    buf[i] != '\r')
			return buf[i] == '{';
	}
	return 0;
}

int run_load__file(const char *path, struct summary *s)
{
	char msg[512];
	int err;

	err = is_json(path);
	if (err < 0)
		return err;
	if (err) {
		err = json_summary__read(path, s, msg, sizeof(msg));
		if (err)
			sp_err("%s", msg);
	} else {
		err = trace_summary__read(path, s);
	}
	if (err)
		return err;
	summary__finish(s);
	run_load__warn(path, s);
	return 0;
}

int run_load__db(struct history_db *h, const char *ref, struct summary *s,
		 struct mem_report *mr, struct history_run *meta)
{
	int err;

	err = history_db__load(h, ref, s, mr, meta);
	if (!err)
		summary__finish(s);
	return err;
}
