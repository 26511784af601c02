/* SPDX-License-Identifier: MIT */
/*
 * The titles of a session's processes for a --per-pid report: taken while
 * the targets run (so one that exits before the report keeps the last
 * title it had) and again at report time from the processes still alive
 * (a server's worker says what it is doing at the end).
 */
#ifndef SPTRACE_TITLES_H
#define SPTRACE_TITLES_H

#include <stdint.h>
#include "exit_titles.h"
#include "summary.h"

struct session;

struct titles {
	struct summary *s;		/* the titles are kept in it */
	const struct session *ss;
	uint64_t next_scan_ns;
	uint64_t self_dev, self_ino;	/* a launched command not exec'd yet */
	struct exit_titles exits;	/* titles taken as processes exit */
};

void titles__init(struct titles *t, struct summary *s,
		  const struct session *ss);
/* Before the session starts: the titles of the targets' processes are also
 * taken as they exit (exit_titles.h): processes of the -b files and of the
 * -p pids' executables. 0, or -errno (said). */
int titles__watch_exits(struct titles *t);
/* Once the session has started its command: its executable's processes
 * too (a process of it that exits before is titled by the scans only).
 * 0, or -errno (said). */
int titles__watch_command(struct titles *t);
/* While tracing (rate-limited, 200 ms): titles the targets again (-p pids,
 * processes of -b files, the launched command, with --follow its followed
 * descendants); a gone one keeps its last title. 0 or -ENOMEM. */
int titles__poll(struct titles *t);
/* At report time: every row's process still alive is titled again; a gone
 * one keeps the title it had. 0 or -ENOMEM. */
int titles__refresh(struct titles *t);
void titles__free(struct titles *t);

#endif /* SPTRACE_TITLES_H */
