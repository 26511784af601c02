// SPDX-License-Identifier: MIT
/*
 * User-facing messages and the libbpf print callback.
 *
 * A message echoes what the user typed (paths, PIDs, specs) and what a
 * traced program named (queries, comms): either may hold an escape sequence
 * that would retitle or garble the terminal, or be 100 KB long. So every
 * line is formatted first and then written safe: control bytes (C0, DEL
 * and the C1 range as UTF-8) as \xHH, and any word (a run without spaces)
 * longer than LOG_WORD_MAX bytes, or a whole line longer than LOG_LINE_MAX,
 * shortened in the middle with an ellipsis.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "log.h"

#define LOG_WORD_MAX 256
#define LOG_LINE_MAX 2048
/* What is kept of a shortened word or line: its head and its tail. */
#define LOG_WORD_HEAD 120
#define LOG_WORD_TAIL 80

bool sp_verbose;
unsigned int sp_verbosity;

/* Is p[0..] the UTF-8 of a C1 control (U+0080..U+009F)? */
static bool c1_at(const unsigned char *p)
{
	return p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
}

/* s[0..n) with control bytes escaped. */
static void put_safe(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f) {
			fprintf(f, "\\x%02x", p[i]);
		} else if (i + 1 < n && c1_at(p + i)) {
			fprintf(f, "\\x%02x\\x%02x", p[i], p[i + 1]);
			i++;
		} else {
			fputc(p[i], f);
		}
	}
}

/* A cut that does not split a UTF-8 character: back to its lead byte. */
static size_t char_start(const char *s, size_t at)
{
	while (at > 0 && ((unsigned char)s[at] & 0xc0) == 0x80)
		at--;
	return at;
}

/* s[0..n) with words longer than LOG_WORD_MAX shortened. */
static void put_words(FILE *f, const char *s, size_t n)
{
	size_t i = 0, j, head, tail;

	while (i < n) {
		for (j = i; j < n && s[j] != ' '; j++)
			;
		if (j - i > LOG_WORD_MAX) {
			head = char_start(s + i, LOG_WORD_HEAD);
			tail = char_start(s + i, j - i - LOG_WORD_TAIL);
			put_safe(f, s + i, head);
			fputs("\xe2\x80\xa6", f);	/* U+2026 ... */
			put_safe(f, s + i + tail, j - i - tail);
		} else {
			put_safe(f, s + i, j - i);
		}
		for (i = j; i < n && s[i] == ' '; i++)
			fputc(' ', f);
	}
}

static void vsay(const char *prefix, const char *fmt, va_list ap)
{
	char *msg = NULL;
	size_t n, head, tail;

	if (vasprintf(&msg, fmt, ap) < 0) {
		fprintf(stderr, "%s(out of memory)\n", prefix);
		return;
	}
	fputs(prefix, stderr);
	n = strlen(msg);
	if (n > LOG_LINE_MAX) {
		head = char_start(msg, LOG_LINE_MAX / 2);
		tail = char_start(msg, n - LOG_LINE_MAX / 4);
		put_words(stderr, msg, head);
		fputs("\xe2\x80\xa6", stderr);
		put_words(stderr, msg + tail, n - tail);
	} else {
		put_words(stderr, msg, n);
	}
	fputc('\n', stderr);
	free(msg);
}

void sp_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("sptrace: ", fmt, ap);
	va_end(ap);
}

void sp_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("sptrace: warning: ", fmt, ap);
	va_end(ap);
}

void sp_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("sptrace: ", fmt, ap);
	va_end(ap);
}

void sp_info(const char *fmt, ...)
{
	va_list ap;

	if (!sp_verbose)
		return;
	va_start(ap, fmt);
	vsay("sptrace: ", fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	/* -v is sptrace's own account; libbpf's debug stream (about a
	 * thousand lines per load) only with -vv. So is the BTF load log that
	 * comes with the warning "BTF loading error" (libbpf then loads the
	 * programs without BTF): hundreds of lines of type dump, one call. */
	if (!sp_verbose || (level == LIBBPF_DEBUG && sp_verbosity < 2))
		return 0;
	if (sp_verbosity < 2 && strstr(fmt, "-- BEGIN BTF LOAD LOG"))
		return fprintf(stderr, "libbpf: (its BTF load log: -vv shows it)\n");
	return vfprintf(stderr, fmt, ap);
}

void sp_log_setup_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
