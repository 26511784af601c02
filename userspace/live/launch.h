/* SPDX-License-Identifier: MIT */
/*
 * Launching `sptrace -- CMD`: the child waits before exec until the probes
 * are attached (its dynamic loader then stops it whenever libraries are
 * mapped, see dl_watch.h), so nothing it runs goes unseen.
 */
#ifndef SPTRACE_LAUNCH_H
#define SPTRACE_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

struct launch {
	pid_t pid;
	char *path;		/* the executable, resolved like execvp */
	int go_fd;		/* write end: the child execs on a byte */
	int err_fd;		/* read end: the child's exec errno, or EOF */
};

/* Resolves argv[0] and forks the child, which waits. 0 or -errno (the
 * error is already reported). */
int launch__fork(struct launch *l, char *const argv[]);
/* The file CMD names, looked up as execvp() does (PATH, or the default path
 * when unset): 0 and *out (malloc'd), or -errno (not reported). */
int launch__resolve(const char *cmd, char **out);
/* The "#!" line of the file at path (up to its newline) in *line (malloc'd),
 * or *line NULL when the file is not a script. 0 or -errno. */
int launch__shebang(const char *path, char **line);
/* The program a "#!" line runs: its interpreter, or for "#!/usr/bin/env
 * [-S] NAME" NAME looked up as launch__resolve() does (env's own lookup).
 * 0 and *out (malloc'd), or -errno. The kernel runs the interpreter with the
 * script's path as argument, so what is traced from exec on is *out. */
int launch__interpreter(const char *line, char **out);
/* Lets the child exec. 0, or -errno when exec failed (reported). */
int launch__go(struct launch *l, const char *cmd);
void launch__destroy(struct launch *l);

#endif /* SPTRACE_LAUNCH_H */
