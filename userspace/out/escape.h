/* SPDX-License-Identifier: MIT */
/*
 * String escaping for the machine-readable outputs of diff and export:
 * the same rules as the summary's JSON and CSV writers (json_out.c,
 * csv_out.c), so every file sptrace writes is valid UTF-8 whatever bytes a
 * name holds.
 */
#ifndef SPTRACE_ESCAPE_H
#define SPTRACE_ESCAPE_H

#include <stdio.h>

/* A JSON string literal, quotes included: ", \ and controls escaped, DEL,
 * U+2028/U+2029 as \uXXXX, each byte of invalid UTF-8 as \ufffd. */
void escape__json(FILE *out, const char *str);
/* One RFC 4180 CSV field: quoted if it holds , " CR or LF, quotes doubled;
 * each byte of invalid UTF-8 becomes U+FFFD. */
void escape__csv(FILE *out, const char *str);

#endif /* SPTRACE_ESCAPE_H */
