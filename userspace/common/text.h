/* SPDX-License-Identifier: MIT */
/*
 * Text helpers below every writer: UTF-8 decoding, the JSON and CSV string
 * escaping every machine-readable output uses, the display form of names
 * (terminal and HTML alike), the human duration format
 * and the stream check that ends each write. Pure functions, no state; in
 * common/ because model/ (diff, memory report) uses them as well as out/.
 */
#ifndef SPTRACE_TEXT_H
#define SPTRACE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Length (1-4) of the valid UTF-8 sequence starting at str, with its code
 * point in *cp; 0 if the bytes there are not one (stray continuation,
 * overlong, surrogate, above U+10FFFF, cut short). */
int text__utf8_next(const char *str, uint32_t *cp);

/* A JSON string literal, quotes included: ", \ and controls escaped, DEL,
 * U+2028/U+2029 as \uXXXX, each byte of invalid UTF-8 as \ufffd. */
void text__json_string(FILE *out, const char *str);
/* One RFC 4180 CSV field: quoted if it holds , " CR or LF, quotes doubled;
 * each byte of invalid UTF-8 becomes U+FFFD. */
void text__csv_field(FILE *out, const char *str);
/* str as HTML text or attribute value: & < > " ' as entities, invalid
 * UTF-8 as U+FFFD. */
void text__html(FILE *out, const char *str);

/*
 * The display form of an untrusted string (a query name, a file name) for
 * people, the same in the terminal and in the HTML report: a terminal-safe
 * copy of str, where C0/C1 controls, DEL, bidi and line-separator controls
 * and each byte of invalid UTF-8 are written \xHH (and '\' as \\), at most
 * maxw cells wide (cut with "..."; UINT_MAX: no limit; cells by a fixed
 * table, not the locale), its width in *width. malloc'd; NULL on ENOMEM.
 */
char *text__display(const char *str, unsigned int maxw, unsigned int *width);
/* text__display(str, maxw) written as HTML text (text__html()). */
void text__html_display(FILE *out, const char *str, unsigned int maxw);

/* Human-scaled duration into buf: "0ns", "999ns", "1.50us", "12.3ms",
 * "2.01s" (3 significant digits, rounded half up). */
void text__fmt_ns(char *buf, size_t len, uint64_t ns);
/* Room for any text__fmt_ns() result ("18400000000s"). */
#define TEXT_NS_BUF 24

/* Flushes out: 0, or -EIO if this or any earlier write to it failed. */
int text__flush(FILE *out);

#endif /* SPTRACE_TEXT_H */
