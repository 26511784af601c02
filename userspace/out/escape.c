// SPDX-License-Identifier: MIT
/*
 * JSON and CSV string escaping for the diff and export writers, by the
 * rules docs/formats.md gives for the summary's JSON and CSV.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "escape.h"
#include "report.h"

void escape__json(FILE *out, const char *str)
{
	const char *p = str;
	uint32_t cp;
	int n;

	fputc('"', out);
	while (*p) {
		n = report__utf8_next(p, &cp);
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

void escape__csv(FILE *out, const char *str)
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
		n = report__utf8_next(p, &cp);
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
