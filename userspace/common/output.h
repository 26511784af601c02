/* SPDX-License-Identifier: MIT */
/* Opening files sptrace writes: never through a symlink, never over an
 * existing file unless forced, created 0600. */
#ifndef SPTRACE_OUTPUT_H
#define SPTRACE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

/* "-" or NULL means stdout. 0 or -errno (reported, naming the file). */
int output__open(const char *path, bool force, FILE **out);
/* Before a long trace: refuses an existing file (unless force) or a symlink
 * now, not after the data is collected. 0 or -errno (reported). */
int output__precheck(const char *path, bool force);
/* Flushes and closes (not stdout); 0 or -errno (reported). */
int output__close(FILE *f, const char *path);

#endif /* SPTRACE_OUTPUT_H */
