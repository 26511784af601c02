/* SPDX-License-Identifier: MIT */
/*
 * common/ layer (bottom): logging, private files, numbers, clocks, the
 * growable array, text escaping; uses nothing of sptrace
 * (docs/architecture.md).
 *
 * One place for what sptrace says to the user: errors are one line
 * "sptrace: <what>: <why> (<hint>)", control bytes escaped and overlong
 * words shortened; libbpf's warnings with -v, its debug stream with -vv.
 */
#ifndef SPTRACE_LOG_H
#define SPTRACE_LOG_H

#include <stdbool.h>

extern bool sp_verbose;		/* -v or more */
extern unsigned int sp_verbosity;	/* how many -v */

void sp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sp_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Progress the user asked for (`sptrace bench`'s runs): always shown, as
 * "sptrace: <what>", escaped like every other line. */
void sp_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Routes libbpf's messages to stderr when verbose, drops them otherwise. */
void sp_log_setup_libbpf(void);

#endif /* SPTRACE_LOG_H */
