// SPDX-License-Identifier: MIT
/* Hostile query names: quotes, separators, newlines, control bytes,
 * invalid UTF-8, HTML. Each runs a known number of times. */
#include <sp_probe.h>

static const char *const names[] = {
	"quote\"name", "back\\slash", "comma,name", "new\nline", "tab\tname",
	"bell\a\x01\x1b[31mred", "\xff\xfe invalid utf8", "<script>alert(1)</script>",
	"=cmd|' /C calc'!A0", "\xe2\x80\xa8 line separator", "", "ok",
};

int main(void)
{
	unsigned int i, k;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		for (k = 0; k <= i; k++) {
			SP_QUERY_BEGIN(names[i]);
			SP_QUERY_END(names[i]);
		}
	return 0;
}
