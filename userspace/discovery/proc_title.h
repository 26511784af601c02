/* SPDX-License-Identifier: MIT */
/*
 * A process's title: what ps shows, from /proc/PID/cmdline. Servers that
 * fork workers rewrite their argv to say what each one is (PostgreSQL:
 * "postgres: bench bench [local] idle"), which is how a --per-pid row, a
 * serve series or a Chrome track tells its processes apart.
 */
#ifndef SPTRACE_PROC_TITLE_H
#define SPTRACE_PROC_TITLE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Longest title kept, in bytes with the NUL; longer ones end in "...". */
#define PROC_TITLE_MAX 128

/*
 * `raw` (n bytes of a cmdline: NUL-separated arguments, maybe NUL padding
 * after them) as one title in `buf` (PROC_TITLE_MAX bytes): arguments
 * joined by one space, trailing NULs and spaces trimmed, cut at
 * PROC_TITLE_MAX - 1 bytes (never inside a UTF-8 sequence) with "..." at
 * the end. Other bytes are kept as they are: writers escape them. Returns
 * the title's length (0: empty).
 */
size_t proc_title__from_cmdline(const char *raw, size_t n,
				char buf[PROC_TITLE_MAX]);
/* The title of process `pid` now. 0, or -errno: -ENOENT when it is gone
 * or has no cmdline (a zombie, a kernel thread). */
int proc_title__read(pid_t pid, char buf[PROC_TITLE_MAX]);
/*
 * Is `title` (read from `pid`) still its parent's? A forked worker shows
 * its parent's command line until it sets its own title (PostgreSQL does
 * right after the fork): such a title is read again later.
 */
bool proc_title__inherited(pid_t pid, const char *title);

#endif /* SPTRACE_PROC_TITLE_H */
