/* SPDX-License-Identifier: MIT */
/*
 * The site self-test's verdict, kept for the rest of the boot (see
 * guard_cache.c): a second sptrace on the same kernel skips the test.
 */
#ifndef SPTRACE_GUARD_CACHE_H
#define SPTRACE_GUARD_CACHE_H

#include <stddef.h>

/* Where the verdict is kept: SPTRACE_GUARD_CACHE if set, else
 * /run/sptrace/site-guard. */
const char *guard_cache__path(void);

/*
 * This boot's verdict into mode[0..n) (a mode name, as
 * SPTRACE_SITE_GUARD spells it). -ENOENT: none kept; -ESTALE: kept for
 * another boot or kernel; -EPERM: the file or its folder could be
 * written by another user than this one, so it is not believed; other
 * -errno from reading it.
 */
int guard_cache__read(char *mode, size_t n);

/* Keeps `mode` as this boot's verdict (folder made 0700, file replaced
 * atomically). 0 or -errno; a failure only costs the next run a test. */
int guard_cache__write(const char *mode);

#endif /* SPTRACE_GUARD_CACHE_H */
