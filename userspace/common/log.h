/* SPDX-License-Identifier: MIT */
/*
 * common/ layer (bottom): logging, private files, numbers, clocks, the
 * growable array, text escaping; uses nothing of sptrace
 * (docs/architecture.md).
 *
 * One place for what sptrace says to the user: errors are one line
 * "sptrace: <what>: <why> (<hint>)"; libbpf's own messages only with -v.
 */
#ifndef SPTRACE_LOG_H
#define SPTRACE_LOG_H

#include <stdbool.h>

extern bool sp_verbose;

void sp_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sp_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Routes libbpf's messages to stderr when verbose, drops them otherwise. */
void sp_log_setup_libbpf(void);

#endif /* SPTRACE_LOG_H */
