// SPDX-License-Identifier: MIT
/*
 * Printing normalized --query names (see spec_norm_text.h).
 */
#include <stdio.h>
#include <string.h>
#include <sptrace/spec_norm.h>
#include "spec_norm_text.h"

static void put(char *buf, size_t len, size_t *at, const char *s)
{
	size_t n = strlen(s);

	if (*at + 1 >= len)
		return;
	if (n > len - 1 - *at)
		n = len - 1 - *at;
	memcpy(buf + *at, s, n);
	*at += n;
	buf[*at] = 0;
}

static void emit(unsigned int mode, __u32 out, unsigned int *ph, char *buf,
		 size_t len, size_t *at)
{
	char tok[16];

	for (; out; out >>= 8) {
		if ((out & 0xff) == SP_NORM_PH) {
			if (mode == SP_NORM_SQL)
				snprintf(tok, sizeof(tok), "$%u", ++*ph);
			else
				snprintf(tok, sizeof(tok), "?");
		} else {
			tok[0] = (char)(out & 0xff);
			tok[1] = 0;
		}
		put(buf, len, at, tok);
	}
}

void spec_norm__text(unsigned int mode, const char *raw, char *buf,
		     size_t len)
{
	struct sp_norm st = { 0 };
	unsigned int ph = 0;
	size_t i, at = 0;

	if (!len)
		return;
	buf[0] = 0;
	for (i = 0; raw[i]; i++)
		emit(mode, sp_norm_step(&st, mode, (__u8)raw[i],
					(__u8)raw[i + 1]),
		     &ph, buf, len, &at);
	emit(mode, sp_norm_finish(&st), &ph, buf, len, &at);
}
