/* SPDX-License-Identifier: MIT */
/*
 * The printed name of a normalized --query row: a raw string walked through
 * the state machine BPF hashed it with (include/sptrace/spec_norm.h).
 */
#ifndef SPTRACE_SPEC_NORM_TEXT_H
#define SPTRACE_SPEC_NORM_TEXT_H

#include <stddef.h>

/* Writes the normalized form of `raw` into buf (always NUL-terminated,
 * cut at len): placeholders print as $1, $2... with normalize=sql and as ?
 * with normalize=digits. `mode` is an enum sp_norm_mode. */
void spec_norm__text(unsigned int mode, const char *raw, char *buf,
		     size_t len);

#endif /* SPTRACE_SPEC_NORM_TEXT_H */
