/* SPDX-License-Identifier: MIT */
/*
 * The JSON summary: the contract other tools read (docs/formats.md).
 */
#ifndef SPTRACE_JSON_OUT_H
#define SPTRACE_JSON_OUT_H

#include <stdio.h>
#include "summary.h"

/* The finished summary (-EINVAL otherwise) as one JSON document.
 * 0 or -errno (-EIO on a write error). */
int json_out__write(FILE *out, const struct summary *s);
/* json_out__write() with more top-level fields: `extra` writes them (no
 * leading comma, no braces) before the final '}'. 0 or -errno. */
int json_out__write_with(FILE *out, const struct summary *s,
			 int (*extra)(FILE *, void *), void *ctx);

#endif /* SPTRACE_JSON_OUT_H */
