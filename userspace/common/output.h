/* SPDX-License-Identifier: MIT */
/* Opening files sptrace writes: never through a symlink, never over an
 * existing file unless forced, created 0600. */
#ifndef SPTRACE_OUTPUT_H
#define SPTRACE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

/* How output__create() treats an existing file. */
enum output_mode {
	OUTPUT_NEW,		/* refuse it: -EEXIST */
	OUTPUT_REPLACE,		/* truncate it, and make it 0600 again */
	OUTPUT_KEEP,		/* keep its contents (a database) */
};

/* The one way sptrace creates a file: never through a symlink (-ELOOP),
 * created 0600; on OUTPUT_REPLACE a regular file of ours is made 0600
 * again (O_TRUNC alone keeps an old mode). A write-only fd, or -errno
 * (not reported: callers name the file their own way). */
int output__create(const char *path, enum output_mode mode);
/* "-" or NULL means stdout. 0 or -errno (reported, naming the file). */
int output__open(const char *path, bool force, FILE **out);
/* Before a long trace: refuses an existing file (unless force) or a symlink
 * now, not after the data is collected. 0 or -errno (reported). */
int output__precheck(const char *path, bool force);
/* One file a command will write. */
struct output_spec {
	const char *path;	/* NULL or "-": stdout */
	const char *what;	/* the option that names it: "-o", "--summary" */
	bool force;		/* an existing regular file may be replaced */
	bool may_exist;		/* an existing file is opened, not replaced (--db) */
};
#define OUTPUT_CHECK_MAX 8
/*
 * Every output of a command, before it does anything: each is a file name
 * (not "", not too long), not a directory, a symlink or an existing file
 * without force, in a directory that exists and is writable, and not on a
 * kernel interface (/proc, /sys, debugfs, ...); no two are the same file,
 * and none is one of the inputs (files the command reads). Character
 * devices and FIFOs (/dev/null) are fine if they take data: a device (and
 * stdout, when it is one and an output goes there) is opened and sent a
 * write of nothing, which /dev/full refuses. Every problem found is
 * reported, one line each. 0 or -EINVAL.
 */
int output__check(const struct output_spec *outs, size_t nouts,
		  const char *const *inputs, size_t ninputs);
/* stdout, when it is a device, takes data (as above). 0 or -errno
 * (reported). */
int output__check_stdout(void);
/*
 * A finished result that could not be written where asked is kept instead
 * in a new private file (output__create) named "sptrace-PID-NAME" (NAME:
 * the base name of `name`), in $TMPDIR, else /tmp, else the current
 * directory: the first where one can be created. Its path goes to `path`.
 * A write-only fd, or -errno.
 */
int output__keep(const char *name, char *path, size_t len);
/* Flushes and closes (not stdout); 0 or -errno (reported). */
int output__close(FILE *f, const char *path);

#endif /* SPTRACE_OUTPUT_H */
