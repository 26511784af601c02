// SPDX-License-Identifier: MIT
/*
 * UTF-8, JSON and CSV string escaping, durations for people, stream checks:
 * the text rules every output shares (docs/formats.md gives the escaping).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "text.h"

int text__utf8_next(const char *str, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)str;
	uint32_t c, min;
	int n, i;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] < 0xc2)	/* continuation byte, or overlong C0/C1 lead */
		return 0;
	if (p[0] < 0xe0) {
		n = 2;
		c = p[0] & 0x1f;
		min = 0x80;
	} else if (p[0] < 0xf0) {
		n = 3;
		c = p[0] & 0x0f;
		min = 0x800;
	} else if (p[0] < 0xf5) {
		n = 4;
		c = p[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	/* A NUL is no continuation byte, so this never reads past it. */
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

void text__json_string(FILE *out, const char *str)
{
	const char *p = str;
	uint32_t cp;
	int n;

	fputc('"', out);
	while (*p) {
		n = text__utf8_next(p, &cp);
		if (!n) {
			fputs("\\ufffd", out);
			p++;
			continue;
		}
		switch (cp) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\b':
			fputs("\\b", out);
			break;
		case '\f':
			fputs("\\f", out);
			break;
		default:
			/* JavaScript string literals cannot hold U+2028/9. */
			if (cp < 0x20 || cp == 0x7f || cp == 0x2028 ||
			    cp == 0x2029)
				fprintf(out, "\\u%04x", (unsigned int)cp);
			else
				fwrite(p, 1, n, out);
			break;
		}
		p += n;
	}
	fputc('"', out);
}

void text__csv_field(FILE *out, const char *str)
{
	bool quote = strpbrk(str, ",\"\r\n") != NULL;
	const char *p = str;
	uint32_t cp;
	int n;

	if (quote)
		fputc('"', out);
	while (*p) {
		if (*p == '"') {
			fputs("\"\"", out);
			p++;
			continue;
		}
		n = text__utf8_next(p, &cp);
		if (!n) {
			fputs("\xef\xbf\xbd", out);
			p++;
			continue;
		}
		fwrite(p, 1, n, out);
		p += n;
	}
	if (quote)
		fputc('"', out);
}

void text__fmt_ns(char *buf, size_t len, uint64_t ns)
{
	static const char *const units[] = { "us", "ms", "s" };
	uint64_t m, scale = 1;
	unsigned int e = 0, u, i;
	int ip;

	if (ns < 1000) {
		snprintf(buf, len, "%" PRIu64 "ns", ns);
		return;
	}
	/* Integer rounding to 3 significant digits: m in [100, 999] times
	 * 10^(e-2); doubles would print 9.995us as "10.00us". */
	for (m = ns; m >= 10; m /= 10)
		e++;
	for (i = 0; i < e - 2; i++)
		scale *= 10;
	m = ns / scale;
	if (ns % scale >= scale / 2)
		m++;
	if (m == 1000) {
		m = 100;
		e++;
	}
	u = e < 6 ? 0 : e < 9 ? 1 : 2;
	ip = (int)e - 3 * (int)(u + 1);	/* digits before the point, - 1 */
	if (ip == 0) {
		snprintf(buf, len, "%" PRIu64 ".%02" PRIu64 "%s",
			 m / 100, m % 100, units[u]);
	} else if (ip == 1) {
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%s",
			 m / 10, m % 10, units[u]);
	} else {
		for (; ip > 2; ip--)
			m *= 10;
		snprintf(buf, len, "%" PRIu64 "%s", m, units[u]);
	}
}

int text__flush(FILE *out)
{
	/* ferror() too: an earlier failed write may have been followed by
	 * successful ones, and fflush() only reports its own. */
	if (fflush(out) || ferror(out))
		return -EIO;
	return 0;
}

void text__html(FILE *out, const char *str)
{
	const char *p = str;
	uint32_t cp;
	int n;

	while (*p) {
		n = text__utf8_next(p, &cp);
		if (!n) {
			fputs("\xef\xbf\xbd", out);
			p++;
			continue;
		}
		switch (cp) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			/* A reference keeps a control character in the text
			 * (a raw CR would become LF, a raw ESC is invisible
			 * noise in the source); tab and newline stay raw. */
			if ((cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7f)
				fprintf(out, "&#x%x;", (unsigned int)cp);
			else
				fwrite(p, 1, (size_t)n, out);
			break;
		}
		p += n;
	}
}

/*
 * Code points a terminal would act on instead of showing: C0/C1 controls
 * (escape sequences), DEL, and the bidi and line-separator controls that can
 * make a name look like another (trojan-source).
 */
static bool cp_unsafe(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c ||
	       c == 0x200e || c == 0x200f || (c >= 0x2028 && c <= 0x202e) ||
	       (c >= 0x2066 && c <= 0x2069);
}

/*
 * Terminal cells taken by a printable code point. A small fixed table rather
 * than wcwidth(): that depends on the locale, and output must not. Covers
 * the common combining marks (0) and East Asian wide ranges and emoji (2).
 */
static unsigned int cp_width(uint32_t c)
{
	if ((c >= 0x0300 && c <= 0x036f) || (c >= 0x1ab0 && c <= 0x1aff) ||
	    (c >= 0x1dc0 && c <= 0x1dff) || (c >= 0x200b && c <= 0x200d) ||
	    (c >= 0x20d0 && c <= 0x20ff) || (c >= 0xfe00 && c <= 0xfe0f) ||
	    (c >= 0xfe20 && c <= 0xfe2f))
		return 0;
	if ((c >= 0x1100 && c <= 0x115f) || c == 0x2329 || c == 0x232a ||
	    (c >= 0x2e80 && c <= 0xa4cf && c != 0x303f) ||
	    (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) ||
	    (c >= 0xfe10 && c <= 0xfe19) || (c >= 0xfe30 && c <= 0xfe6f) ||
	    (c >= 0xff00 && c <= 0xff60) || (c >= 0xffe0 && c <= 0xffe6) ||
	    (c >= 0x1f300 && c <= 0x1f64f) || (c >= 0x1f900 && c <= 0x1f9ff) ||
	    (c >= 0x20000 && c <= 0x3fffd))
		return 2;
	return 1;
}

/* Display form of the character at p into out (<= 4 bytes), its width into
 * *w; returns the input bytes it used. An unsafe multi-byte character is
 * escaped one byte at a time: its continuation bytes are invalid alone. */
static size_t display_piece(const char *p, char *out, size_t *outlen,
			    unsigned int *w)
{
	uint32_t cp;
	int n;

	if (*p == '\\') {
		memcpy(out, "\\\\", 2);
		*outlen = *w = 2;
		return 1;
	}
	n = text__utf8_next(p, &cp);
	if (n && !cp_unsafe(cp)) {
		memcpy(out, p, n);
		*outlen = n;
		*w = cp_width(cp);
		return n;
	}
	snprintf(out, 5, "\\x%02x", (unsigned char)*p);
	*outlen = *w = 4;
	return 1;
}

/* The cells str may fill when cut to maxw with "..." (all of it when it
 * fits): what text__display() and text__html_display() both keep. */
static unsigned int display_limit(const char *str, unsigned int maxw)
{
	unsigned int w, total = 0;
	size_t n, plen;
	char piece[5];
	const char *p;

	for (p = str; *p; p += n) {
		n = display_piece(p, piece, &plen, &w);
		total += w;
	}
	return total > maxw && maxw >= 3 ? maxw - 3 : maxw;
}

char *text__display(const char *str, unsigned int maxw, unsigned int *width)
{
	unsigned int w, total = 0, limit;
	size_t len = strlen(str), n, plen, at = 0;
	char piece[5], *out;
	const char *p;

	/* Each input byte becomes at most 4 output bytes (\xHH). */
	if (len > (SIZE_MAX - 4) / 4)
		return NULL;
	out = malloc(4 * len + 4);
	if (!out)
		return NULL;
	limit = display_limit(str, maxw);
	for (p = str; *p; p += n) {
		n = display_piece(p, piece, &plen, &w);
		if (total + w > limit)
			break;
		memcpy(out + at, piece, plen);
		at += plen;
		total += w;
	}
	if (*p) {
		memcpy(out + at, "...", 3);
		at += 3;
		total += 3;
	}
	out[at] = '\0';
	*width = total;
	return out;
}

void text__html_display(FILE *out, const char *str, unsigned int maxw)
{
	unsigned int w, total = 0, limit = display_limit(str, maxw);
	size_t n, plen;
	char piece[5];
	const char *p;

	for (p = str; *p; p += n) {
		n = display_piece(p, piece, &plen, &w);
		if (total + w > limit)
			break;
		piece[plen] = '\0';	/* a whole character, or an escape */
		text__html(out, piece);
		total += w;
	}
	if (*p)
		fputs("...", out);
}
