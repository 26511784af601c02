// SPDX-License-Identifier: MIT
/*
 * UTF-8, JSON and CSV string escaping, durations for people, stream checks:
 * the text rules every output shares (docs/formats.md gives the escaping).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
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
